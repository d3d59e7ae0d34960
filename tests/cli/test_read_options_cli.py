"""The CLI asks the core: read options under ReadOptions' own names (--strict,
--no-verify-crc, --max-decompressed-bytes), strict header rules from
``RecordBatch.header_errors``, a batch's first offset from ``RecordBatch.base_offset``."""
from __future__ import annotations

import struct

import pytest

import kafkarec
from kafkarec import Compression, LegacyBatchBuilder
from kafkarec.cli import main
from kafkarec.cli.common import read_options
from kafkarec.cli.main import build_parser

T0 = 1_700_000_000_000


def _v2(n=3, base=0) -> bytearray:
    b = kafkarec.RecordBatchBuilder(base_offset=base)
    for i in range(n):
        b.append(b"v%d" % i, key=b"k", timestamp=T0 + i)
    return bytearray(b.build())


def _recrc(batch: bytearray) -> bytes:
    struct.pack_into(">I", batch, 17, kafkarec.crc32c(bytes(batch[21:])))
    return bytes(batch)


def _with_attributes(batch: bytearray, attrs: int) -> bytes:
    struct.pack_into(">h", batch, 21, attrs)
    return _recrc(batch)


def _with_count(batch: bytearray, count: int) -> bytes:
    struct.pack_into(">i", batch, 57, count)
    return _recrc(batch)


def _partition(tmp_path, data: bytes) -> str:
    part = tmp_path / "t-0"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(data)
    return str(part)


@pytest.mark.parametrize("command, crc", [("dump", False), ("stats", True), ("verify", True)])
def test_read_options_have_readoptions_names(command, crc, tmp_path):
    p = build_parser()
    args = p.parse_args([command, "--strict", "--max-decompressed-bytes", "77", str(tmp_path)])
    opts = read_options(args)
    assert (opts.strict, opts.max_decompressed_bytes, opts.file_rules) == (True, 77, True)
    assert opts.verify_crc is crc          # dump prints every batch's records, as kafka-dump-log
    if crc:
        opts = read_options(p.parse_args([command, "--no-verify-crc", str(tmp_path)]))
        assert opts.verify_crc is False and opts.strict is False
    else:
        with pytest.raises(SystemExit):
            p.parse_args([command, "--no-verify-crc", str(tmp_path)])


def test_header_errors_are_the_strict_readers_errors():
    sound = bytes(_v2())
    (b,) = kafkarec.iter_batches(sound)
    assert b.header_errors == []
    bad = _with_count(bytearray(_with_attributes(_v2(), 0x0087)), 7)   # codec 7, bit 7, 7 records > 3
    (b,) = kafkarec.iter_batches(bad)
    reasons = [e.reason for e in b.header_errors]
    assert reasons == ["Unknown compression type id: 7", "unused attribute bits set (attributes = 0x0087)",
                       "record count 7 does not fit last offset delta 2"]
    assert all(isinstance(e, kafkarec.DecodeError) and e.position == 0 for e in b.header_errors)
    with pytest.raises(kafkarec.UnsupportedCodecError, match="Unknown compression type id: 7"):
        list(kafkarec.iter_batches(bad, strict=True))
    legacy = LegacyBatchBuilder(magic=1, compression=Compression.GZIP, base_offset=4)
    legacy.append(b"x", timestamp=T0)
    (b,) = kafkarec.iter_batches(legacy.build())
    assert b.header_errors == []


def test_verify_reports_the_cores_header_rules(tmp_path, capfd):
    part = _partition(tmp_path, _with_attributes(_v2(), 0x0080))
    assert main(["verify", "--no-progress", part]) == 1
    out = capfd.readouterr()[0]
    assert "position 0, offset 0: unused attribute bits set (attributes = 0x0080)" in out


def test_stats_strict_refuses_what_kafka_lets_through(tmp_path, capfd):
    part = _partition(tmp_path, _with_attributes(_v2(), 0x0080))
    assert main(["stats", "--no-progress", part]) == 0
    assert "no readable batches" not in capfd.readouterr()[0]
    assert main(["stats", "--no-progress", "--strict", part]) == 1
    out, err = capfd.readouterr()
    assert "unused attribute bits set" in err and "(1 unreadable)" in out


def test_dump_strict(tmp_path, capfd):
    part = _partition(tmp_path, _with_attributes(_v2(), 0x0080))
    log = part + "/00000000000000000000.log"
    assert main(["dump", "--deep-iteration", log]) == 0
    capfd.readouterr()
    assert main(["dump", "--deep-iteration", "--strict", log]) == 1
    assert "unused attribute bits set" in "".join(capfd.readouterr())


def test_no_verify_crc(tmp_path, capfd):
    data = _v2()
    data[data.rfind(b"v2") + 1] = ord("9")     # a value byte: the batch parses, its CRC is wrong
    part = _partition(tmp_path, bytes(data))
    assert main(["stats", "--no-progress", "--json", part]) == 1
    assert '"bad_batches":1' in capfd.readouterr()[0]
    assert main(["stats", "--no-progress", "--json", "--no-verify-crc", part]) == 0
    out = capfd.readouterr()[0]
    assert '"bad_batches":0' in out and '"records":3' in out
    assert main(["verify", "--no-progress", part]) == 1
    assert "Record is corrupt" in capfd.readouterr()[0]
    assert main(["verify", "--no-progress", "--deep", "--no-verify-crc", part]) == 0


def test_first_offset_is_kafkas_base_offset_everywhere(tmp_path, capfd):
    """A v1 gzip wrapper at offset 12 holding offsets 9..12: stats and verify agree that the
    batch starts at 9 (Kafka's AbstractLegacyRecordBatch.baseOffset() opens the wrapper)."""
    w = LegacyBatchBuilder(magic=1, compression=Compression.GZIP, base_offset=9)
    for i in range(4):
        w.append(b"v%d" % i, timestamp=T0 + i)
    data = w.build()
    (b,) = kafkarec.iter_batches(data)
    assert (b.base_offset, b.last_offset) == (9, 12) == ([r.offset for r in b][0], 12)
    part = _partition(tmp_path, bytes(data))
    assert main(["stats", "--no-progress", "--json", part]) == 0
    out = capfd.readouterr()[0]
    assert '"first_offset":9' in out and '"last_offset":12' in out
