"""The command line in-process on a fuzzed segment: dump, verify and stats (text and
JSON reports) end with an exit status and a report, never a traceback."""
import contextlib
import io
import os
import tempfile

from _harness import run

from kafkarec.cli import main

TMP = tempfile.mkdtemp(prefix="kafkarec-fuzz-cli-")
PART = os.path.join(TMP, "topic-0")
os.makedirs(PART, exist_ok=True)
SEGMENT = os.path.join(PART, "00000000000000000000.log")


def test_one_input(data: bytes) -> None:
    with open(SEGMENT, "wb") as fh:
        fh.write(data)
    for args in (["dump", "--deep-iteration", "--print-data-log", SEGMENT],
                 ["dump", "--json", "--payload-encoding", "hex", SEGMENT],
                 ["verify", "--deep", "--no-progress", PART],
                 ["stats", "--no-progress", "--json", PART],
                 ["stats", "--no-progress", PART],
                 ["stats", "--no-progress", "--headers-only", PART],
                 ["dump", "--start-offset", "3", "--end-offset", "9", "--deep-iteration", PART]):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(args)
        if code not in (0, 1):
            raise AssertionError(f"{args[0]} exited {code}: {err.getvalue()[:300]}")


if __name__ == "__main__":
    run(test_one_input)
