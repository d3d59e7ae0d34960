"""Many short fuzz runs for the price of one instrumentation (tests/fuzz/test_fuzz_smoke.py).

Each target's process spends ~10 CPU-s importing and instrumenting every kafkarec module
(``_harness.py``) before it fuzzes for a few seconds.  This server does that once, then runs
each target it is asked for in a child forked from that state: a process of its own, as
``python fuzz_TARGET.py ARGS...`` would be, with libFuzzer's arguments, exit status and output,
only without the repeated start.

Protocol, one JSON object a line: the server reads ``{"target", "args", "stdout", "stderr"}``
on its standard input, runs ``fuzz_TARGET.py``'s ``test_one_input`` with ``args`` as
libFuzzer's command line (its output into the two files), and answers ``{"returncode": N}``
(negative: the signal that ended the child) on its standard output.  It ends at end of input.
"""
from __future__ import annotations

import importlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def _child(request: dict) -> None:
    """In the forked child: the target's output into its files, then libFuzzer (which exits)."""
    for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
        out = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(out, fd)
        os.close(out)
    sys.stdin.close()          # the server's requests are not the target's
    module = importlib.import_module(f"fuzz_{request['target']}")
    sys.argv = [os.path.join(HERE, f"fuzz_{request['target']}.py"), *request["args"]]
    _harness.run(module.test_one_input)


def main() -> int:
    for line in sys.stdin:
        request = json.loads(line)
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            code = 70          # EX_SOFTWARE: libFuzzer returned or the target could not start
            try:
                _child(request)
            except BaseException:           # noqa: BLE001 - shown in the target's stderr file
                import traceback
                traceback.print_exc()
            finally:
                sys.stderr.flush()
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        print(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}), flush=True)
    return 0


if __name__ == "__main__":
    import _harness            # noqa: E402 - the instrumented import of every kafkarec module, once
    sys.exit(main())
