"""Bad records kept whole (kafkarec.log.quarantine): a typed read's failed records written as a Kafka
log directory -- original offset, timestamp, key, value and headers, plus the reason and the writer
schema id -- readable by kafkarec and by Kafka's own kafka-dump-log; undecodable batches copied byte for
byte; the same input written twice gives the same files (retries, restarts: nothing duplicated)."""
from __future__ import annotations

import glob
import json
import os

import pyarrow as pa
import pytest

import kafkarec
import kafkarec.registry as kr
from kafkarec import RecordBatchBuilder
from kafkarec.log.quarantine import (REASON_HEADER, SCHEMA_ID_HEADER, TIMESTAMP_TYPE_HEADER, Quarantine)

STRING = '"string"'


def _segment(path, base, records, *, log_append_time=None):
    b = RecordBatchBuilder(base_offset=base, **({"timestamp_type": 1, "log_append_time": log_append_time}
                                                 if log_append_time else {}))
    for i, (key, value, headers) in enumerate(records):
        b.append(value, key, timestamp=1_000 + base + i, headers=headers)
    return b.build()


def _records(path):
    out = []
    for f in sorted(glob.glob(os.path.join(path, "*.log"))):
        for batch in kafkarec.iter_batches(open(f, "rb").read()):
            assert batch.crc_valid
            out += [(batch, r) for r in batch]
    return out


@pytest.fixture
def world(tmp_path):
    """orders-2: bare Avro strings, three of them bad (a negative length, truncated, registry framing
    where a bare body is expected is still a string here), headers on some; two batches, a gap."""
    part = tmp_path / "logs" / "orders-2"
    part.mkdir(parents=True)
    first = _segment(part, 100, [(b"k0", b"\x02a", [("trace", b"t0")]), (b"k1", b"\x07", [("trace", b"t1")]),
                                 (None, b"\x06ab", []), (b"k3", None, [])])
    second = _segment(part, 110, [(b"k4", b"\x08abcd", []), (b"k5", b"\x09", [("x", None)])],
                      log_append_time=5_000)
    (part / "00000000000000000100.log").write_bytes(first + second)
    return tmp_path


def test_failed_records_are_kept_whole(world):
    data = (world / "logs" / "orders-2" / "00000000000000000100.log").read_bytes()
    table = kafkarec.to_arrow(data, topic="orders", partition=2)
    bad = world / "bad"
    out = kr.decode_table(table, None, value_format="avro", value_reader_schema=STRING, bad_records_path=str(bad))
    reasons = dict(zip(out.column("offset").to_pylist(), out.column("_corrupt_record").to_pylist()))
    failed = {o: why for o, why in reasons.items() if why}
    assert sorted(failed) == [101, 102, 111]
    kept = _records(bad / "orders-2")
    assert [r.offset for _, r in kept] == [101, 102, 111]
    original = {r.offset: (b, r) for b, r in _records(world / "logs" / "orders-2")}
    for batch, rec in kept:
        ob, src = original[rec.offset]
        assert (rec.key, rec.value, rec.timestamp) == (src.key, src.value, src.timestamp)
        extra = dict(list(rec.headers)[len(src.headers):])
        assert list(rec.headers)[:len(src.headers)] == list(src.headers)
        assert extra[REASON_HEADER].decode() == failed[rec.offset]
        assert SCHEMA_ID_HEADER not in extra          # bare payloads name no writer id
        assert (extra.get(TIMESTAMP_TYPE_HEADER) == b"LogAppendTime") == (ob.timestamp_type == 1)
    # written again (a retried task): the same file, the same bytes, nothing added
    files = {f: open(f, "rb").read() for f in glob.glob(str(bad / "**" / "*"), recursive=True) if os.path.isfile(f)}
    kr.decode_table(table, None, value_format="avro", value_reader_schema=STRING, bad_records_path=str(bad))
    again = {f: open(f, "rb").read() for f in glob.glob(str(bad / "**" / "*"), recursive=True) if os.path.isfile(f)}
    assert again == files


def test_registry_ids_name_the_writer(tmp_path):
    """Registry payloads: an unknown writer id is kept with that id in kafkarec.error.schema.id."""
    import fastavro
    import io
    part = tmp_path / "logs" / "t-0"
    part.mkdir(parents=True)
    key = json.dumps({"keytype": "SCHEMA", "subject": "t-value", "version": 1, "magic": 1}).encode()
    value = json.dumps({"subject": "t-value", "version": 1, "id": 7, "schema": STRING}).encode()
    reg = kr.replay([(0, key, value)])
    body = io.BytesIO()
    fastavro.schemaless_writer(body, "string", "ok")
    good = b"\x00\x00\x00\x00\x07" + body.getvalue()
    unknown = b"\x00\x00\x00\x03\xe7" + body.getvalue()
    data = _segment(part, 0, [(None, good, []), (None, unknown, [])])
    table = kafkarec.to_arrow(data, topic="t", partition=0)
    kr.decode_table(table, reg, bad_records_path=str(tmp_path / "bad"))
    (batch, rec), = _records(tmp_path / "bad" / "t-0")
    assert rec.offset == 1 and rec.value == unknown
    assert dict(rec.headers)[SCHEMA_ID_HEADER] == b"999"


def _dump_with_a_bad_tail(world, spoil, name):
    """kafkarec dump --bad-records-path over orders-2 with one more batch, spoiled by `spoil`:
    (where it starts, its bytes, the quarantine folder)."""
    from kafkarec.cli.main import main
    part = world / "logs" / "orders-2"
    seg = part / "00000000000000000100.log"
    good = seg.read_bytes()
    tail = bytearray(_segment(part, 120, [(b"k9", b"\x02z", [])]))
    spoil(tail)
    seg.write_bytes(good + bytes(tail))
    schema = world / "s.avsc"
    schema.write_text(STRING)
    bad = world / name
    main(["dump", str(seg), "--deep-iteration", "--value-decoder", "avro", "--value-schema", str(schema),
          "--bad-records-path", str(bad)])
    return len(good), bytes(tail), bad


def test_cli_keeps_failed_records_and_undecodable_batches(world, capfd):
    from kafkarec.cli.main import main

    def spoil(batch):
        batch[-1] ^= 0xFF                                # its records cannot be read back
    position, broken, bad = _dump_with_a_bad_tail(world, spoil, "bad-cli")
    capfd.readouterr()
    assert [r.offset for _, r in _records(bad / "orders-2")] == [101, 102, 111]
    copies = glob.glob(str(bad / "_undecodable" / "orders-2" / "*.batch"))
    assert len(copies) == 1
    assert open(copies[0], "rb").read() == broken
    side = json.load(open(copies[0] + ".json"))
    assert side["position"] == position and side["length"] == len(broken) and side["reason"]
    # the quarantine is a log directory kafkarec dumps as any other
    main(["dump", str(bad / "orders-2"), "--print-data-log"])
    text = capfd.readouterr().out
    assert "offset: 101" in text and "offset: 111" in text and "headerKeys: [trace,kafkarec.error.reason]" in text


def test_cli_keeps_the_bytes_after_a_framing_stop(world, capfd):
    """A batch length shorter than any batch header stops framing: every byte from there on is kept."""
    def spoil(batch):
        batch[8:12] = (3).to_bytes(4, "big")             # below any batch's header size
    position, tail, bad = _dump_with_a_bad_tail(world, spoil, "bad-stop")
    capfd.readouterr()
    copies = glob.glob(str(bad / "_undecodable" / "orders-2" / "*.batch"))
    assert [os.path.basename(c) for c in copies] == [f"{position:020d}.batch"]
    assert open(copies[0], "rb").read() == tail
    assert [r.offset for _, r in _records(bad / "orders-2")] == [101, 102, 111]


def test_kafka_dump_log_reads_the_quarantine(world):
    """Kafka's own DumpLogSegments lists every kept record at its original offset."""
    from support.brokers import kafka_broker
    data = (world / "logs" / "orders-2" / "00000000000000000100.log").read_bytes()
    table = kafkarec.to_arrow(data, topic="orders", partition=2)
    kr.decode_table(table, None, value_format="avro", value_reader_schema=STRING, bad_records_path=str(world / "bad"))
    files = sorted(glob.glob(str(world / "bad" / "orders-2" / "*.log")))
    text = kafka_broker.dump_log(files, "--print-data-log")
    offsets = [int(line.split("offset: ")[1].split()[0]) for line in text.splitlines() if line.startswith("| offset:")]
    assert offsets == [101, 102, 111], text
    assert "isvalid: true" in text and "kafkarec.error.reason" in text


def test_a_table_without_topic_partition_is_refused_clearly():
    data = _segment(None, 0, [(None, b"\x07", [])])
    table = kafkarec.to_arrow(data)
    with pytest.raises(ValueError, match="topic and partition"):
        Quarantine("/nonexistent").add_table(table, pa.array(["bad"]))


def test_a_time_past_the_year_9999_is_kept_whole(tmp_path):
    """Issue 67: a failed record's timestamp went through pyarrow's datetimes, which hold no time
    past 9999-12-31 (OverflowError); Kafka's timestamps are any long."""
    b = RecordBatchBuilder(base_offset=0)
    for ts in (253402300800000, 2 ** 63 - 1):
        b.append(b"\x07", None, timestamp=ts)
    table = kafkarec.to_arrow(b.build(), topic="t", partition=0)
    Quarantine(str(tmp_path)).add_table(table, pa.array(["bad", "bad"]))
    assert [r.timestamp for _, r in _records(tmp_path / "t-0")] == [253402300800000, 2 ** 63 - 1]
