"""Checkpoint files with absurdly long numbers: a CheckpointError, never Python's
own ValueError (int string conversion limit), and no traceback from the CLI."""
import os

import pytest

from kafkarec.cli import main
from kafkarec.log import sidefiles as sf

HUGE = "9" * 5000
ZEROS = "0" * 5000 + "7"          # Java's parseInt accepts leading zeros


@pytest.mark.parametrize("reader, text", [
    (sf.read_leader_epoch_checkpoint, f"0\n1\n{HUGE} 0\n"),
    (sf.read_leader_epoch_checkpoint, f"{HUGE}\n1\n0 0\n"),
    (sf.read_offset_checkpoint, f"0\n1\ntopic 0 {HUGE}\n"),
    (sf.read_partition_metadata, f"version: {HUGE}\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ\n"),
])
def test_huge_decimal_is_a_checkpoint_error(tmp_path, reader, text):
    path = tmp_path / "file"
    path.write_text(text)
    with pytest.raises(sf.CheckpointError, match="Malformed line"):
        reader(str(path))


def test_leading_zeros_are_read_like_java(tmp_path):
    path = tmp_path / "leader-epoch-checkpoint"
    path.write_text(f"0\n1\n{ZEROS} {ZEROS}\n")
    assert sf.read_leader_epoch_checkpoint(str(path)) == [sf.EpochEntry(7, 7)]


@pytest.mark.parametrize("command", ["verify", "dump"])
def test_cli_reports_it_without_a_traceback(tmp_path, command, capfd):
    part = tmp_path / "orders-0"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(b"")
    (part / "leader-epoch-checkpoint").write_text(f"0\n1\n{HUGE} 0\n")
    target = str(part) if command == "verify" else str(part / "leader-epoch-checkpoint")
    args = [command, target] + (["--no-progress"] if command == "verify" else [])
    assert main(args) == 1
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err
    assert "Malformed line in checkpoint file" in out + err
    assert os.path.basename(target) in out + err
