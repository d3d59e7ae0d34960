"""The CLI reads partitions as a consumer from their log start offsets (``table``, ``stats`` with a
selection); ``--include-deleted-records`` reads the records ``deleteRecords`` left below them;
``dump`` shows the files as kafka-dump-log does, every record they hold; a checkpoint that cannot
be read is a warning on stderr naming it."""
from __future__ import annotations

import base64
import json
import os

import pytest

from kafkarec.cli.main import main
from support.logs.log_start import BATCHES, RECORDS, deleted_records_dir

END = BATCHES * RECORDS


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("cli-log-start") / "logs")
    deleted_records_dir(root, {("t", 0): 37})
    return root


def _run(capfd, *argv):
    status = main(list(argv))
    out, err = capfd.readouterr()
    return status, out, err


def test_table_starts_at_the_log_start(logs, capfd):
    status, out, _ = _run(capfd, "table", logs)
    assert status == 0
    rows = [json.loads(line) for line in out.splitlines()]
    assert sorted(r["offset"] for r in rows) == list(range(END - 7, END))
    values = {base64.b64decode(r["value"]) for r in rows}
    assert values == {b"v%d" % o for o in range(END - 7, END)}
    status, out, err = _run(capfd, "table", logs, "--include-deleted-records", "--end-offset", "37")
    assert status == 0 and len(out.splitlines()) == 7            # offsets 30..36, all below it
    status, out, _ = _run(capfd, "table", logs, "--end-offset", "37")
    assert status == 0 and out == ""


def test_stats_with_a_selection_counts_from_the_log_start(logs, capfd):
    status, out, _ = _run(capfd, "stats", "--json", "--topics", "t", logs)
    assert status == 0
    total = [json.loads(line) for line in out.splitlines()][-1]
    status, out, _ = _run(capfd, "stats", "--json", "--include-deleted-records", logs)
    assert status == 0
    every = [json.loads(line) for line in out.splitlines()][-1]
    assert (total["stats"]["records"], every["stats"]["records"]) == (END - 37, END)


def test_dump_shows_every_record_of_the_files(logs, capfd):
    status, out, _ = _run(capfd, "dump", "--json", "--deep-iteration", "--topics", "t", logs)
    assert status == 0
    offsets = [row["offset"] for row in map(json.loads, out.splitlines()) if row.get("type") == "record"]
    assert offsets == list(range(END))
    assert main(["dump", "--include-deleted-records", logs]) == 2       # no such flag: dump shows files


def test_an_unreadable_checkpoint_is_a_warning_on_stderr(tmp_path, capfd):
    root = str(tmp_path / "logs")
    deleted_records_dir(root, {("t", 0): 37})
    path = os.path.join(root, "log-start-offset-checkpoint")
    with open(path, "w") as fh:
        fh.write("0\n3\nt 0 37\n")
    with pytest.warns(UserWarning, match="could not be read"):
        status, out, _ = _run(capfd, "table", root)
    assert status == 0 and len(out.splitlines()) == 7
