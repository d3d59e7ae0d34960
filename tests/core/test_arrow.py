"""to_arrow / iter_arrow: records decoded straight into Arrow buffers.

Every table is checked row by row against what the row reader
(``iter_batches`` and ``Record``) makes of the same bytes, and, where the test
built the data itself, against the inputs it was built from.  Some data comes
from kafka-python's builders so that not every byte was written by kafkarec.
Header surgery (record counts, record lengths, attributes) is done with the
tests' reference encoder (``reference.py``), never with kafkarec's own code.
"""
from __future__ import annotations

import gzip
import random
import struct

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import kafkarec
from kafkarec import transactions
from kafkarec import (Compression, ControlRecordType, DecodeError, LegacyBatchBuilder,
                      RecordBatchBuilder, TimestampType)

from kafka.record.memory_records import MemoryRecordsBuilder

INT32_MAX = 2**31 - 1
TS0 = 1_700_000_000_000
CODEC_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}

# ------------------------------------------------------------ byte surgery

from support.oracles.reference import corrupt_commit_into_abort, legacy_message, patch_v2, split_batches, varint


# ------------------------------------------------------------------ views

SPARK_SCHEMA = pa.schema([
    pa.field("key", pa.binary()), pa.field("value", pa.binary()),
    pa.field("topic", pa.string()), pa.field("partition", pa.int32()),
    pa.field("offset", pa.int64()), pa.field("timestamp", pa.timestamp("ms")),
    pa.field("timestampType", pa.int32()),
    pa.field("headers", pa.list_(pa.struct([pa.field("key", pa.string()),
                                            pa.field("value", pa.binary())]))),
])
BATCH_FIELDS = [
    pa.field("producerId", pa.int64()), pa.field("producerEpoch", pa.int16()),
    pa.field("sequence", pa.int32()), pa.field("isTransactional", pa.bool_()),
    pa.field("isControl", pa.bool_()), pa.field("compression", pa.string()),
    pa.field("batchPosition", pa.int64()), pa.field("batchBaseOffset", pa.int64()),
    pa.field("partitionLeaderEpoch", pa.int32()), pa.field("magic", pa.int8()),
    pa.field("batchSize", pa.int32()), pa.field("deleteHorizonMs", pa.int64()),
]
BATCH_COLUMNS = [f.name for f in BATCH_FIELDS]


def table_rows(table) -> list[dict]:
    """Rows as dicts, the timestamp as int64 milliseconds."""
    i = table.schema.get_field_index("timestamp")
    table = table.set_column(i, "timestamp", table.column(i).cast(pa.int64()))
    return table.to_pylist()


def record_row(batch, record, *, topic, partition, batch_columns=True) -> dict:
    headers = record.headers
    row = {
        "key": record.key, "value": record.value, "topic": topic, "partition": partition,
        "offset": record.offset, "timestamp": record.timestamp,
        "timestampType": int(record.timestamp_type),
        "headers": [{"key": k, "value": v} for k, v in headers] if headers else None,
    }
    if batch_columns:
        row.update({
            "producerId": batch.producer_id, "producerEpoch": batch.producer_epoch,
            "sequence": record.sequence, "isTransactional": batch.is_transactional,
            "isControl": batch.is_control, "compression": batch.compression.name.lower(),
            "batchPosition": batch.position, "batchBaseOffset": batch.base_offset,
            "partitionLeaderEpoch": batch.partition_leader_epoch, "magic": batch.magic,
            "batchSize": batch.size_in_bytes, "deleteHorizonMs": batch.delete_horizon_ms,
        })
    return row


def describe(exc, batch) -> dict:
    return {"position": exc.position, "reason": exc.reason, "error": type(exc).__name__,
            "base_offset": batch.base_offset if batch is not None and batch.magic >= 2 else None,
            "batch_position": batch.position if batch is not None else None,
            "batch_size": batch.size_in_bytes if batch is not None else None,
            "message": str(exc)}


def reference(data, *, topic=None, partition=None, include_control=False, batch_columns=True,
              verify_crc=True, skip_positions=frozenset(), errors="raise",
              max_decompressed_bytes=kafkarec.DEFAULT_MAX_DECOMPRESSED_BYTES):
    """The row reader's view of ``data``, in to_arrow's row layout: (rows, sink)."""
    rows, sink = [], []
    it = kafkarec.iter_batches(data, verify_crc=verify_crc,
                               max_decompressed_bytes=max_decompressed_bytes)
    while True:
        try:
            batch = next(it)
        except StopIteration:
            break
        except DecodeError as exc:
            if errors == "raise":
                raise
            sink.append(describe(exc, None))
            break
        # Every batch's CRC is checked first, also of batches left out below
        # (markers, aborted or past-the-LSO batches): nothing corrupt goes unreported.
        if verify_crc:
            try:
                batch.ensure_valid()
            except DecodeError as exc:
                if errors == "raise":
                    raise
                sink.append(describe(exc, batch))
                continue
        if batch.is_control and not include_control:
            continue
        if batch.position in skip_positions:
            continue
        try:
            records = list(batch)
        except DecodeError as exc:
            if errors == "raise":
                raise
            sink.append(describe(exc, batch))
            continue
        rows += [record_row(batch, r, topic=topic, partition=partition,
                            batch_columns=batch_columns) for r in records]
    return rows, sink


def schema_of(batch_columns: bool):
    return pa.schema(list(SPARK_SCHEMA) + (BATCH_FIELDS if batch_columns else []))


def assert_table_matches(data, *, topic="events", partition=3, read_committed=False, **kwargs):
    """to_arrow with and without batch columns equals the row reader; returns the rows."""
    skip = (committed_view(data, verify_crc=kwargs.get("verify_crc", True)) if read_committed
            else frozenset())
    expected, _ = reference(data, topic=topic, partition=partition, skip_positions=skip, **kwargs)
    kwargs["read_committed"] = read_committed
    for batch_columns in (True, False):
        table = kafkarec.to_arrow(data, topic=topic, partition=partition,
                                  batch_columns=batch_columns, **kwargs)
        assert table.schema.equals(schema_of(batch_columns), check_metadata=True)
        assert table.schema.equals(kafkarec.arrow_schema(batch_columns=batch_columns))
        table.validate(full=True)
        want = expected if batch_columns else [
            {k: v for k, v in row.items() if k not in BATCH_COLUMNS} for row in expected]
        got = table_rows(table)
        assert len(got) == len(want)
        for i, (g, w) in enumerate(zip(got, want)):
            assert g == w, (i, g, w)
    return expected


# ------------------------------------------------------------- test data

# (key, value, headers) shapes: nulls, empties, null header values, duplicate,
# empty, non-ASCII and invalid UTF-8 header keys.
SHAPES = [
    (None, None, []),
    (b"", b"", []),
    (b"k1", b"v" * 300, [("h", b"x")]),
    (None, b"v", [("n", None), ("n", b"")]),
    (b"\x00\xff", None, [("ключ", b"\xd0"), ("ключ", None), ("\U0001f642", b"smile")]),
    (b"k", b"", [(b"\xff\xfebad", b"v"), (b"ok\xc3", None), ("", b"empty key")]),
    (b"", None, [("dup", b"1"), ("dup", b"2"), ("dup", b"1")]),
    (None, b"\x00" * 17, []),
]
FIXED_HEADER_KEYS = {b"\xff\xfebad": "\ufffd\ufffdbad", b"ok\xc3": "ok\ufffd"}


def spec_records(n: int, base_offset: int, *, seed: int):
    """n records (offset, timestamp, key, value, headers) with gaps in offsets and
    timestamps both before and after the first."""
    rnd = random.Random(seed)
    out, offset = [], base_offset
    for i in range(n):
        key, value, headers = SHAPES[i % len(SHAPES)]
        out.append((offset, TS0 + rnd.randint(-5000, 5000), key, value, headers))
        offset += rnd.choice((1, 1, 2, 7, 100))
    return out


def kafka_sequence(base: int, delta: int) -> int:
    # DefaultRecordBatch.incrementSequence
    if base > INT32_MAX - delta:
        return delta - (INT32_MAX - base) - 1
    return base + delta


def v2_batch(specs, *, codec=0, log_append_time=None, **options) -> bytes:
    kw = dict(compression=codec, base_offset=specs[0][0], **options)
    if log_append_time is not None:
        kw.update(timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=log_append_time)
    b = RecordBatchBuilder(**kw)
    for offset, ts, key, value, headers in specs:
        b.append(value, key=key, timestamp=ts, headers=headers, offset=offset)
    return b.build()


def legacy_batch(magic, specs, *, codec=0, log_append_time=None) -> bytes:
    kw = dict(magic=magic, compression=codec, base_offset=specs[0][0])
    if log_append_time is not None:
        kw.update(timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=log_append_time)
    b = LegacyBatchBuilder(**kw)
    for offset, ts, key, value, _ in specs:
        b.append(value, key=key, timestamp=ts if magic else None, offset=offset)
    return b.build()


def kafka_python_batch(magic, codec, offset, n, *, seed, **producer) -> bytes:
    rnd = random.Random(seed)
    b = MemoryRecordsBuilder(magic=magic, compression_type=codec, batch_size=1 << 24,
                             offset=offset, **producer)
    for i in range(n):
        key, value, headers = SHAPES[(i + 3) % len(SHAPES)]
        headers = [(k if isinstance(k, str) else "raw", v) for k, v in headers] if magic == 2 else []
        assert b.append(timestamp=TS0 + rnd.randint(0, 999) if magic else None,
                        key=key, value=value, headers=headers) is not None
    b.close()
    return bytes(b.buffer())


MATRIX = ([(2, c, lat) for c in range(5) for lat in (None, TS0 + 123_456)]
          + [(1, c, lat) for c in range(4) for lat in (None, TS0 + 99)]
          + [(0, c, None) for c in range(4)])


# ------------------------------------------------------------- 1. layout


@pytest.mark.parametrize("magic,codec,log_append_time", MATRIX,
                         ids=[f"m{m}-{CODEC_NAMES[c]}-{'lat' if t else 'ct'}" for m, c, t in MATRIX])
def test_rows_equal_record_reader(magic, codec, log_append_time):
    specs1 = spec_records(13, 100, seed=codec)
    specs2 = spec_records(9, specs1[-1][0] + 50, seed=codec + 10)
    if magic == 2:
        first = v2_batch(specs1, codec=codec, log_append_time=log_append_time, producer_id=42,
                         producer_epoch=3, base_sequence=INT32_MAX - 4, partition_leader_epoch=7)
        second = v2_batch(specs2, codec=codec, log_append_time=log_append_time, producer_id=43,
                          producer_epoch=0, base_sequence=0, is_transactional=True)
    else:
        first = legacy_batch(magic, specs1, codec=codec, log_append_time=log_append_time)
        second = legacy_batch(magic, specs2, codec=codec, log_append_time=log_append_time)
    theirs_offset = specs2[-1][0] + 1
    theirs = kafka_python_batch(magic, codec, theirs_offset, 11, seed=codec)
    data = first + second + theirs
    zero_wrapper_rows = 0
    if magic == 1 and codec:
        # A wrapper with offset 0, as librdkafka writes it: inner offsets taken as they are.
        b = LegacyBatchBuilder(magic=1, compression=codec, base_offset=500, wrapper_offset="zero")
        for i in range(4):
            b.append(b"z%d" % i, key=None, timestamp=TS0 + i)
        data += b.build()
        zero_wrapper_rows = 4

    rows = assert_table_matches(data)
    # Also against the inputs themselves (not only the row reader).
    n_ours = len(specs1) + len(specs2)
    assert len(rows) == n_ours + 11 + zero_wrapper_rows
    if zero_wrapper_rows:
        tail = rows[n_ours + 11:]
        rows = rows[:n_ours + 11]
        assert [r["offset"] for r in tail] == [0, 1, 2, 3]
        assert [r["value"] for r in tail] == [b"z0", b"z1", b"z2", b"z3"]
        assert {r["batchBaseOffset"] for r in tail} == {0}
        assert [r["timestamp"] for r in tail] == [TS0 + i for i in range(4)]
        assert {r["timestampType"] for r in tail} == {0}
    assert [r["offset"] for r in rows] == ([s[0] for s in specs1 + specs2]
                                           + list(range(theirs_offset, theirs_offset + 11)))
    assert [r["key"] for r in rows[:n_ours]] == [s[2] for s in specs1 + specs2]
    assert [r["value"] for r in rows[:n_ours]] == [s[3] for s in specs1 + specs2]
    assert {r["compression"] for r in rows} == {CODEC_NAMES[codec]}
    assert {r["magic"] for r in rows} == {magic}
    assert {r["topic"] for r in rows} == {"events"} and {r["partition"] for r in rows} == {3}
    if magic == 0:
        assert {r["timestamp"] for r in rows} == {-1}
        assert {r["timestampType"] for r in rows} == {-1}
    elif log_append_time is not None:
        assert [r["timestamp"] for r in rows[:n_ours]] == [log_append_time] * n_ours
        assert {r["timestampType"] for r in rows[:n_ours]} == {1}
    else:
        assert [r["timestamp"] for r in rows[:n_ours]] == [s[1] for s in specs1 + specs2]
        assert {r["timestampType"] for r in rows} == {0}
    if magic == 2:
        for row, spec in zip(rows, specs1 + specs2):
            want = [{"key": FIXED_HEADER_KEYS.get(k, k) if isinstance(k, bytes) else k, "value": v}
                    for k, v in spec[4]]
            assert row["headers"] == (want or None)
        first_rows = rows[:len(specs1)]
        assert {r["producerId"] for r in first_rows} == {42}
        assert {r["producerEpoch"] for r in first_rows} == {3}
        assert {r["partitionLeaderEpoch"] for r in first_rows} == {7}
        assert [r["sequence"] for r in first_rows] == [
            kafka_sequence(INT32_MAX - 4, s[0] - specs1[0][0]) for s in specs1]
        assert min(r["sequence"] for r in first_rows) < INT32_MAX - 4    # wrapped past INT32_MAX
        assert {r["isTransactional"] for r in first_rows} == {False}
        assert {r["isTransactional"] for r in rows[len(specs1):n_ours]} == {True}
        assert {r["batchBaseOffset"] for r in first_rows} == {100}
        assert {r["batchPosition"] for r in rows[len(specs1):n_ours]} == {len(first)}
        assert {r["batchPosition"] for r in rows[n_ours:]} == {len(first) + len(second)}
    else:
        assert {r["headers"] for r in rows} == {None}
        assert {(r["producerId"], r["producerEpoch"], r["sequence"], r["partitionLeaderEpoch"])
                for r in rows} == {(-1, -1, -1, -1)}
        assert {r["isTransactional"] for r in rows} == {False}
        if codec:   # one wrapper per builder: its base offset is the first inner offset
            assert {r["batchBaseOffset"] for r in rows[:len(specs1)]} == {100}
            assert {r["batchPosition"] for r in rows[:len(specs1)]} == {0}
        else:       # one entry per record
            assert [r["batchBaseOffset"] for r in rows] == [r["offset"] for r in rows]
    assert {r["isControl"] for r in rows} == {False}


def test_bytearray_and_memoryview_input_give_the_same_table():
    data = v2_batch(spec_records(20, 0, seed=1), codec=1) + legacy_batch(1, spec_records(5, 50, seed=2))
    want = kafkarec.to_arrow(data, batch_columns=True)
    assert want.num_rows == 25
    for view in (bytearray(data), memoryview(data), memoryview(b"xx" + data)[2:]):
        assert kafkarec.to_arrow(view, batch_columns=True).equals(want)


def test_schema_is_sparks_exactly():
    assert kafkarec.arrow_schema().equals(SPARK_SCHEMA, check_metadata=True)
    assert kafkarec.arrow_schema(batch_columns=True).equals(schema_of(True), check_metadata=True)
    assert kafkarec.arrow_schema(batch_columns=True).names == SPARK_SCHEMA.names + BATCH_COLUMNS
    assert all(f.nullable for f in kafkarec.arrow_schema(batch_columns=True))


def test_topic_and_partition_none_give_null_columns():
    data = v2_batch(spec_records(10, 0, seed=3))
    for batch_columns in (False, True):
        t = kafkarec.to_arrow(data, batch_columns=batch_columns)
        assert t.num_rows == 10
        assert t.column("topic").type == pa.string() and t.column("topic").null_count == 10
        assert t.column("partition").type == pa.int32() and t.column("partition").null_count == 10
    t = kafkarec.to_arrow(data, topic="", partition=0)
    assert t.column("topic").to_pylist() == [""] * 10
    assert t.column("partition").to_pylist() == [0] * 10
    t = kafkarec.to_arrow(data, topic="тема", partition=INT32_MAX)
    assert t.column("topic").to_pylist() == ["тема"] * 10
    assert t.column("partition").to_pylist() == [INT32_MAX] * 10
    assert_table_matches(data, topic=None, partition=None)


@pytest.mark.parametrize("data", [b"", b"\x00" * 11, v2_batch(spec_records(3, 0, seed=0))[:-1]],
                         ids=["empty", "short-tail", "cut-batch"])
def test_empty_input_gives_an_empty_table_with_the_schema(data):
    for batch_columns in (False, True):
        t = kafkarec.to_arrow(data, batch_columns=batch_columns, topic="t", partition=1)
        assert t.num_rows == 0
        assert t.schema.equals(schema_of(batch_columns), check_metadata=True)
        chunks = list(kafkarec.iter_arrow(data, batch_columns=batch_columns))
        assert len(chunks) == 1 and chunks[0].num_rows == 0
        assert chunks[0].schema.equals(schema_of(batch_columns))


def test_headers_null_when_a_record_has_none_and_list_otherwise():
    data = v2_batch([(0, TS0, b"a", b"b", []), (1, TS0, b"a", b"b", [("x", None)]),
                     (2, TS0, None, None, [])])
    col = kafkarec.to_arrow(data).column("headers")
    assert col.null_count == 2
    assert col.to_pylist() == [None, [{"key": "x", "value": None}], None]


def test_strict_rejects_invalid_utf8_header_key_lenient_replaces_it():
    data = v2_batch([(0, TS0, b"k", b"v", [(b"\xc3\x28", b"1")])])
    assert kafkarec.to_arrow(data).column("headers").to_pylist() == [[{"key": "\ufffd(", "value": b"1"}]]
    with pytest.raises(kafkarec.InvalidRecordError):
        kafkarec.to_arrow(data, strict=True)


def test_validity_bitmaps_across_many_batches():
    # Nulls at every position modulo 8 across batches of odd sizes.
    data, offset = b"", 0
    for size in (1, 3, 7, 8, 9, 15, 17):
        specs = [(offset + i, TS0 + i, None if (offset + i) % 3 == 0 else b"k",
                  None if (offset + i) % 5 == 0 else b"v",
                  [] if (offset + i) % 2 else [("h", None)]) for i in range(size)]
        data += v2_batch(specs, codec=(offset % 5))
        offset += size
    rows = assert_table_matches(data)
    assert [r["key"] is None for r in rows] == [o % 3 == 0 for o in range(offset)]
    assert [r["value"] is None for r in rows] == [o % 5 == 0 for o in range(offset)]
    assert [r["headers"] is None for r in rows] == [o % 2 == 1 for o in range(offset)]


# ---------------------------------------------- 2. control records, read_committed


def marker(pid, offset, kind, *, epoch=0, coordinator_epoch=1) -> bytes:
    b = RecordBatchBuilder(base_offset=offset, producer_id=pid, producer_epoch=epoch,
                           is_transactional=True, is_control=True)
    b.append_control(kind, {"coordinatorEpoch": coordinator_epoch}, timestamp=TS0 + offset)
    return b.build()


def txn_data(pid, offset, n, *, transactional=True, codec=0, seq=0) -> bytes:
    if offset % 2:      # some of the data written by kafka-python
        return kafka_python_batch(2, codec, offset, n, seed=offset, transactional=transactional,
                                  producer_id=pid, producer_epoch=0, base_sequence=seq)
    specs = [(offset + i, TS0 + offset + i, b"p%d" % pid, b"o%d" % (offset + i), [("pid", b"%d" % pid)])
             for i in range(n)]
    return v2_batch(specs, codec=codec, producer_id=pid, producer_epoch=0, base_sequence=seq,
                    is_transactional=transactional)


def control_type_of(batch, verify_crc) -> int | None:
    """The type of a marker as Kafka's consumer reads it (ControlRecordType.parse of
    its first record's key), or None when that cannot be read: a failed CRC (when
    checked), no records, a record that does not decode, a key shorter than 4 bytes
    or a negative key version."""
    if verify_crc and not batch.crc_valid:
        return None
    try:
        first = next(iter(batch), None)
    except DecodeError:
        return None
    if first is None or first.key is None or len(first.key) < 4:
        return None
    version, kind = struct.unpack(">hh", first.key[:4])
    return None if version < 0 else kind


def committed_view(data, *, verify_crc=True,
                   max_decompressed_bytes=kafkarec.DEFAULT_MAX_DECOMPRESSED_BYTES):
    """Positions a read_committed consumer would not see, by a model written apart
    from kafkarec.transactions.  Pass 1: each transactional data batch joins its
    producer's open transaction, ended by the producer's next transactional control
    batch (aborted if that reads as ABORT).  Pass 2: the LSO is the first position
    of the earliest transaction that never ends; left out are the aborted
    transactions' batches and every batch at or past the LSO.  Checking CRCs, a data
    batch that fails its CRC opens no transaction.  Stops at a framing error, as
    to_arrow's decoding does."""
    batches = []
    it = kafkarec.iter_batches(data, verify_crc=False, max_decompressed_bytes=max_decompressed_bytes)
    while True:
        try:
            batches.append(next(it))
        except (StopIteration, DecodeError):
            break
    txn_of, first_position, outcome, current = {}, {}, {}, {}
    for batch in batches:
        if batch.magic != 2 or not batch.is_transactional:
            continue
        if verify_crc and not batch.is_control and not batch.crc_valid:
            continue          # a corrupt data batch's header is not trusted to open a transaction
        pid = batch.producer_id
        if batch.is_control:
            if pid in current:
                outcome[current.pop(pid)] = control_type_of(batch, verify_crc)
        else:
            if pid not in current:
                current[pid] = (pid, batch.position)        # a transaction's id: its start
                first_position[current[pid]] = batch.position
            txn_of[batch.position] = current[pid]
    lso = min((first_position[t] for t in current.values()), default=len(data))
    return {b.position for b in batches
            if b.position >= lso or outcome.get(txn_of.get(b.position)) == 0}


def interleaved_log():
    """Several producers' transactions interleaved, with the expected outcome:
    (data, offsets of the data records read_committed keeps, total offsets, LSO)."""
    parts, visible, offset = [], [], 0
    COMMIT, ABORT = ControlRecordType.COMMIT, ControlRecordType.ABORT

    def add(part, n, keep):
        nonlocal offset
        parts.append(part)
        if keep:
            visible.extend(range(offset, offset + n))
        offset += n

    add(legacy_batch(1, [(0, TS0, b"old", b"legacy", [])]), 1, True)   # 0
    add(txn_data(1, offset, 2), 2, True)                 # 1-2   P1 txn A (commits)
    add(txn_data(2, offset, 3, codec=1), 3, False)       # 3-5   P2 txn B (aborts)
    add(txn_data(3, offset, 1, transactional=False), 1, True)          # 6
    add(txn_data(1, offset, 2, codec=3), 2, True)        # 7-8   P1 txn A
    add(marker(1, offset, COMMIT), 1, False)             # 9
    add(txn_data(2, offset, 1, codec=4), 1, False)       # 10    P2 txn B
    add(txn_data(1, offset, 2), 2, False)                # 11-12 P1 txn C (aborts)
    add(txn_data(4, offset, 2, codec=2), 2, False)       # 13-14 P4 txn E (aborts, late)
    add(marker(2, offset, ABORT), 1, False)              # 15
    add(txn_data(5, offset, 1), 1, True)                 # 16    P5 commits
    add(marker(1, offset, ABORT), 1, False)              # 17
    add(marker(5, offset, COMMIT), 1, False)             # 18
    add(marker(6, offset, ABORT), 1, False)              # 19    no open transaction
    add(txn_data(2, offset, 2), 2, True)                 # 20-21 P2 txn D (commits)
    add(txn_data(3, offset, 1, transactional=False), 1, True)          # 22
    add(marker(2, offset, COMMIT), 1, False)             # 23
    add(txn_data(7, offset, 1, codec=3), 1, True)        # 24    P7 commits past the LSO
    add(marker(4, offset, ABORT), 1, False)              # 25    P4 txn E aborts
    lso = offset
    add(txn_data(6, offset, 3, codec=1), 3, False)       # 26-28 P6 never ends: the LSO
    add(txn_data(3, offset, 1, transactional=False), 1, False)         # 29 past the LSO
    add(legacy_batch(1, [(offset, TS0, b"new", b"legacy", [])]), 1, False)   # 30
    add(txn_data(8, offset, 2), 2, False)                # 31-32 P8 commits, past the LSO
    add(marker(7, offset, COMMIT), 1, False)             # 33
    add(marker(8, offset, COMMIT), 1, False)             # 34
    add(txn_data(9, offset, 1, codec=4), 1, False)       # 35    P9 never ends either
    return b"".join(parts), visible, offset, lso


def test_control_records_left_out_unless_include_control():
    data, _, total, _ = interleaved_log()
    markers = [b for b in kafkarec.iter_batches(data) if b.is_control]
    marker_offsets = {b.base_offset for b in markers}
    assert sorted(marker_offsets) == [9, 15, 17, 18, 19, 23, 25, 33, 34]
    plain = assert_table_matches(data)
    assert [r["offset"] for r in plain] == [o for o in range(total) if o not in marker_offsets]
    assert not any(r["isControl"] for r in plain)
    with_control = assert_table_matches(data, include_control=True)
    assert [r["offset"] for r in with_control] == list(range(total))
    for r in with_control:
        assert r["isControl"] == (r["offset"] in marker_offsets)
        if r["isControl"]:
            assert r["isTransactional"] and r["key"][:2] == b"\x00\x00"
            assert struct.unpack(">h", r["key"][2:4])[0] in (0, 1)
            assert r["value"] == b"\x00\x00\x00\x00\x00\x01" and r["headers"] is None


def test_read_committed_drops_aborted_transactions_and_all_past_the_lso():
    data, visible, total, lso = interleaved_log()
    # Hand-listed: committed and non-transactional data below the LSO, including P7's
    # record whose COMMIT comes only past the LSO.
    assert lso == 26
    assert visible == [0, 1, 2, 6, 7, 8, 16, 20, 21, 22, 24]
    batches = list(kafkarec.iter_batches(data))
    dropped = committed_view(data)
    assert dropped == transactions.aborted_batches(kafkarec.iter_batches(data))
    # (kafka-python writes base offset 0 with deltas from the first offset: go by records)
    assert sorted(next(iter(b)).offset for b in batches if b.position in dropped) == [
        3, 10, 11, 13,                                  # aborted: P2 txn B, P1 txn C, P4 txn E
        26, 29, 30, 31, 33, 34, 35]                     # every batch from the LSO on
    marker_offsets = [b.base_offset for b in batches if b.is_control]
    for include_control in (False, True):
        rows = assert_table_matches(data, include_control=include_control, read_committed=True)
        want = sorted(visible + ([o for o in marker_offsets if o < lso] if include_control else []))
        assert [r["offset"] for r in rows] == want
    # Without read_committed the aborted rows and those past the LSO are all there.
    assert kafkarec.to_arrow(data).num_rows == total - len(marker_offsets)
    assert kafkarec.to_arrow(data, read_committed=True).column("offset").to_pylist() == visible
    # P9's open transaction starts later than P6's: leaving P6's batch out moves the
    # LSO to P9's batch, and P8's and P7's commits, the legacy batch and P3's data come back.
    p6 = next(b for b in batches if b.base_offset == 26)
    without_p6 = data[:p6.position] + data[p6.position + p6.size_in_bytes:]
    assert kafkarec.to_arrow(without_p6, read_committed=True).column("offset").to_pylist() == (
        visible + [29, 30, 31, 32])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(1, 4), st.sampled_from(["data", "data", "nontxn",
                                                              "commit", "abort"])),
                min_size=1, max_size=25),
       st.sampled_from([None, "commit", "abort"]), st.booleans())
def test_read_committed_random_interleavings(steps, close, include_control):
    parts, offset, open_txn, outcome = [], 0, {}, {}
    txn_of = {}           # offset -> txn number, or None
    first_offset = {}     # txn number -> its first offset
    marker_offsets = []
    counter = 0
    if close is not None:     # end whatever is still open, so that no LSO cuts the log
        steps = steps + [(pid, close) for pid in (1, 2, 3, 4)]
    for pid, step in steps:
        if step in ("data", "nontxn"):
            n = 1 + offset % 3
            parts.append(txn_data(pid, offset, n, transactional=step == "data",
                                  codec=offset % 5))
            if step == "data":
                if pid not in open_txn:
                    counter += 1
                    open_txn[pid] = counter
                    first_offset[counter] = offset
                txn = open_txn[pid]
            else:
                txn = None
            for o in range(offset, offset + n):
                txn_of[o] = txn
            offset += n
        else:
            parts.append(marker(pid, offset, ControlRecordType.ABORT if step == "abort"
                                else ControlRecordType.COMMIT))
            marker_offsets.append(offset)
            if pid in open_txn:
                outcome[open_txn.pop(pid)] = step
            offset += 1
    data = b"".join(parts)
    lso = min((first_offset[t] for t in open_txn.values()), default=offset)
    if close is not None:
        assert lso == offset
    want = [o for o, txn in txn_of.items()
            if o < lso and (txn is None or outcome.get(txn) == "commit")]
    if include_control:
        want += [o for o in marker_offsets if o < lso]
    want.sort()
    t = kafkarec.to_arrow(data, read_committed=True, include_control=include_control)
    assert t.column("offset").to_pylist() == want
    assert t.num_rows == len(want)
    rows = assert_table_matches(data, read_committed=True, include_control=include_control)
    assert [r["offset"] for r in rows] == want


# ------------------------------------------------------------- 3. splitting


def row_bytes(table) -> list[int]:
    """key + value + header key + header value bytes of each row."""
    out = []
    for row in table.to_pylist():
        n = len(row["key"] or b"") + len(row["value"] or b"")
        for h in row["headers"] or ():
            n += len(h["key"].encode("utf-8")) + len(h["value"] or b"")
        out.append(n)
    return out


def many_batches(seed=7):
    rnd = random.Random(seed)
    parts, offset = [], 0
    for i in range(40):
        n = rnd.choice((1, 1, 2, 3, 5, 8, 13))
        specs = [(offset + j, TS0 + j, None if rnd.random() < 0.2 else b"k" * rnd.randint(0, 40),
                  None if rnd.random() < 0.1 else b"v" * rnd.randint(0, 400),
                  [(b"\xff" * rnd.randint(1, 3), b"h" * rnd.randint(0, 9))] if rnd.random() < 0.3 else [])
                 for j in range(n)]
        if i % 7 == 3:
            parts.append(legacy_batch(1, specs, codec=i % 4))
        elif i % 11 == 5:
            parts.append(marker(9, offset, ControlRecordType.COMMIT))   # left out: no rows
            n = 1
        else:
            parts.append(v2_batch(specs, codec=i % 5))
        offset += n
    return b"".join(parts)


@pytest.mark.parametrize("max_rows,max_bytes", [(1, 1 << 30), (2, 1 << 30), (5, 1 << 30),
                                                (16, 1 << 30), (1000, 1 << 30), (1 << 30, 1),
                                                (1 << 30, 700), (1 << 30, 5000), (7, 1500)])
def test_iter_arrow_splits_at_kafka_batch_boundaries(max_rows, max_bytes):
    data = many_batches()
    whole = kafkarec.to_arrow(data, batch_columns=True)
    kafka_batch_rows = {}
    for pos in whole.column("batchPosition").to_pylist():
        kafka_batch_rows[pos] = kafka_batch_rows.get(pos, 0) + 1
    chunks = list(kafkarec.iter_arrow(data, batch_columns=True, max_rows=max_rows,
                                      max_bytes=max_bytes))
    assert pa.Table.from_batches(chunks).equals(whole)
    seen = set()
    for i, chunk in enumerate(chunks):
        assert chunk.schema.equals(schema_of(True))
        assert chunk.num_rows > 0
        positions = chunk.column("batchPosition").to_pylist()
        # Whole Kafka batches only, in order, never split across chunks.
        assert positions == sorted(positions)
        for pos in set(positions):
            assert pos not in seen and positions.count(pos) == kafka_batch_rows[pos]
        seen |= set(positions)
        sizes = row_bytes(chunk)
        last = positions[-1]
        last_rows = kafka_batch_rows[last]
        # Below both bounds before its last Kafka batch was added ...
        assert chunk.num_rows - last_rows < max_rows
        assert sum(sizes[:-last_rows]) < max_bytes
        # ... and every chunk but the last reached one of them.
        if i < len(chunks) - 1:
            assert chunk.num_rows >= max_rows or sum(sizes) >= max_bytes
    assert seen == set(kafka_batch_rows)


def _wide_batches() -> bytes:
    """Batches whose batch columns differ in every field: large ones (their records go through the
    record loop without the GIL, and their batch columns are filled after it) and a small one,
    a base sequence that wraps past INT32_MAX inside a batch and one with no sequence (-1)."""
    out = []
    shapes = [
        dict(producer_id=7, producer_epoch=3, base_sequence=2**31 - 100, is_transactional=True,
             partition_leader_epoch=12),
        dict(producer_id=-1, producer_epoch=-1, base_sequence=-1, compression=Compression.ZSTD),
        dict(producer_id=2**40, producer_epoch=2**15 - 1, base_sequence=5, delete_horizon_ms=1_700_000_999_000,
             partition_leader_epoch=-1),
        dict(producer_id=9, producer_epoch=0, base_sequence=0, is_transactional=True),
    ]
    offset = 0
    for i, shape in enumerate(shapes):
        n = 3 if i == 3 else 300            # the last one under the GIL-free loop's 16 KiB
        b = RecordBatchBuilder(base_offset=offset, **shape)
        for j in range(n):
            b.append(b"v%05d" % j * 20, key=None if j % 7 == 0 else b"k%d" % (j % 5),
                     timestamp=1_700_000_000_000 + j, headers=[("h", b"x")] if j % 3 == 0 else [])
        out.append(b.build())
        offset += n
    return b"".join(out)


def test_batch_columns_of_large_batches_as_the_row_reader():
    """The batch columns of batches the record loop walks without the GIL (filled per batch after
    it) are the row reader's: each record's sequence, wrapping, and the batch's values."""
    data = _wide_batches()
    rows = assert_table_matches(data)
    assert {r["sequence"] for r in rows[:300]} >= {2**31 - 1, 0, 199}     # wrapped inside the batch
    assert {r["deleteHorizonMs"] for r in rows[600:900]} == {1_700_000_999_000}
    assert {r["deleteHorizonMs"] for r in rows[:600]} == {None}
    # a key bound: the kept records' batch columns (written by the GIL's path, record by record)
    got = table_rows(pa.Table.from_batches(kafkarec.iter_arrow(data, batch_columns=True, keys=[b"k1"])))
    assert got == [r for r in reference(data)[0] if r["key"] == b"k1"]


def test_iter_arrow_chunks_without_batch_columns_concatenate_to_to_arrow():
    data = many_batches(seed=11)
    chunks = list(kafkarec.iter_arrow(data, max_rows=4, topic="t", partition=0))
    assert len(chunks) > 5
    whole = kafkarec.to_arrow(data, topic="t", partition=0)
    assert pa.Table.from_batches(chunks).equals(whole)
    assert max(c.num_rows for c in chunks) <= 4 + 13 - 1


@pytest.mark.parametrize("batch_columns", [False, True])
def test_every_projection_is_the_whole_reads_columns(batch_columns):
    """A projection finishes only its own columns (issue 80: topic and partition filled, the
    headers' list and the rest cost a DuckDB read of key and value alone); each one read, in both
    layouts, is the whole read's columns selected: the wide layout's batch columns (compression's
    names among them), topic and partition, key and value over every codec."""
    data = b"".join(kafkarec.build_batch([b"v%d" % i + b"x" * (i * 3) for i in range(10)], keys=[b"k"] * 10,
                                         headers=[[("h", b"x")]] * 10 if j % 2 else None, base_offset=j * 10,
                                         compression=list(Compression)[j % 5])
                    for j in range(10))
    whole = kafkarec.to_arrow(data, batch_columns=batch_columns, topic="t", partition=3)
    names = whole.schema.names
    rng = random.Random(80)
    projections = [[name] for name in names] + [rng.sample(names, k) for k in range(2, len(names) + 1)
                                                for _ in range(3)]
    for columns in projections:
        want = whole.select([name for name in names if name in columns])
        for layout in ("copy", "view"):
            got = pa.Table.from_batches(list(kafkarec.iter_arrow(
                data, batch_columns=batch_columns, columns=columns, topic="t", partition=3, max_rows=25,
                value_layout=layout)))
            assert got.schema.names == want.schema.names, (columns, layout)
            assert got.cast(want.schema).equals(want), (columns, layout)


@pytest.mark.parametrize("layout", ["copy", "view"])
def test_a_projection_without_headers_or_timestamp_type_reads_damaged_and_legacy_logs_alike(layout):
    """A projection without ``headers`` or ``timestampType`` leaves their per-row values unwritten
    (issue 80): a batch that fails half way is cut back (truncate passes over the headers' list,
    whose offsets hold nothing), a legacy batch and a record the loop leaves to the GIL's path (a
    header key that is not UTF-8) go in beside it, every chunk ending where the whole read's do;
    the columns read are the whole read's, and so are the errors."""
    a, b, c, d = three_batch_log()
    bad_b = patch_v2(b, payload=records_section_with_bad_length(b, 2), fix_crc=True)
    bad_key = v2_batch([(25 + i, TS0 + i, b"e", b"E" * i, [(b"\xff\xfe", b"v")]) for i in range(3)])
    data = a + d + bad_b + c + d + b + bad_key + a      # (bad_b fails after d's rows in its chunk)
    whole_sink = []
    whole = pa.Table.from_batches(list(kafkarec.iter_arrow(data, errors="skip", error_sink=whole_sink,
                                                            max_rows=7)))
    assert [e["error"] for e in whole_sink] == ["InvalidRecordError"] and whole.num_rows > 40
    assert whole.column("headers").to_pylist()[-14][0]["key"] == "\ufffd\ufffd"     # Java's replacement
    for columns in (["key", "value"], ["key", "value", "offset"], ["value", "timestamp"], ["offset"],
                    ["headers"], ["timestampType"], ["key", "headers", "timestampType"]):
        sink = []
        chunks = list(kafkarec.iter_arrow(data, errors="skip", error_sink=sink, columns=columns, max_rows=7,
                                          value_layout=layout))
        want = whole.select([name for name in whole.schema.names if name in columns])
        assert pa.Table.from_batches(chunks).cast(want.schema).equals(want), columns
        assert [c.num_rows for c in chunks] == [c.num_rows for c in whole.to_batches()], columns
        assert sink == whole_sink, columns


# ------------------------------------------------------------- 4. errors="skip"


def records_section_with_bad_length(batch: bytes, which: int) -> bytes:
    """The records section of an uncompressed v2 batch with record `which`'s length
    varint made one byte larger (so the record reads into the next one)."""
    body, pos = bytearray(batch[61:]), 0
    for i in range(which + 1):
        # Length varints here are 1 or 2 bytes (records are small).
        raw = body[pos]
        if raw & 0x80:
            length_bytes = 2
            value = (raw & 0x7F) | (body[pos + 1] << 7)
        else:
            length_bytes = 1
            value = raw
        length = (value >> 1) ^ -(value & 1)
        if i == which:
            assert length_bytes == 1 and len(varint(length + 1)) == 1
            body[pos:pos + 1] = varint(length + 1)
            return bytes(body)
        pos += length_bytes + length
    raise AssertionError


def three_batch_log(codec_middle=0):
    a = v2_batch([(i, TS0 + i, None if i % 3 else b"a%d" % i, b"A" * i, [("h", None)] if i % 2 else [])
                  for i in range(13)], codec=1)
    b = v2_batch([(13 + i, TS0, b"b", b"B%d" % i, [("bh", b"x"), ("bh2", None)]) for i in range(5)],
                 codec=codec_middle, producer_id=5, producer_epoch=1, base_sequence=0)
    c = legacy_batch(1, [(18 + i, TS0, None if i % 2 else b"c", b"C" * i, []) for i in range(3)])
    d = v2_batch([(21 + i, TS0, b"d", None, [("dh", b"")]) for i in range(4)])
    return a, b, c, d


def run_skip(data, **kwargs):
    sink = []
    chunks = list(kafkarec.iter_arrow(data, batch_columns=True, errors="skip", error_sink=sink,
                                      **kwargs))
    table = pa.Table.from_batches(chunks, schema=schema_of(True))
    return table_rows(table), sink


def test_bad_crc_batch_left_out_whole_and_described():
    a, b, c, d = three_batch_log()
    bad_b = bytearray(b)
    bad_b[-3] ^= 0x40                          # a header key byte: only the CRC notices
    c_entries = split_batches(c)               # uncompressed legacy: one entry per record
    assert len(c_entries) == 3
    bad_c_last = bytearray(c_entries[2])
    bad_c_last[-1] ^= 0x01
    data = a + bytes(bad_b) + c_entries[0] + c_entries[1] + bytes(bad_c_last) + d
    rows, sink = run_skip(data)
    want, want_sink = reference(data, errors="skip")
    assert rows == want and sink == want_sink
    assert [r["offset"] for r in rows] == list(range(13)) + [18, 19] + list(range(21, 25))
    c_last_position = len(a) + len(b) + len(c_entries[0]) + len(c_entries[1])
    assert [e["position"] for e in sink] == [len(a), c_last_position]
    assert [e["base_offset"] for e in sink] == [13, None]        # None: a legacy entry
    for entry in sink:
        assert set(entry) == {"position", "reason", "error", "base_offset", "batch_position", "batch_size",
                              "message"}
        assert entry["batch_position"] is not None          # a batch's error, legacy or not
        # where the batch is, whole: what a quarantine copies byte for byte
        assert 0 < entry["batch_size"] <= len(data) - entry["batch_position"]
        assert entry["error"] == "ChecksumError"
        assert entry["reason"].startswith("Record is corrupt (stored crc = ")
        assert entry["message"] == f"at byte {entry['position']}: {entry['reason']}"
    # The same bytes with errors="raise": the first ChecksumError, at the same place.
    with pytest.raises(kafkarec.ChecksumError) as info:
        kafkarec.to_arrow(data)
    assert info.value.position == len(a)
    with pytest.raises(kafkarec.ChecksumError):
        list(kafkarec.iter_arrow(data, errors="raise"))
    # verify_crc=False reads all of them.
    assert kafkarec.to_arrow(data, verify_crc=False).num_rows == 13 + 5 + 3 + 4


def test_record_error_mid_batch_drops_the_whole_batch():
    a, b, c, d = three_batch_log()
    bad_b = patch_v2(b, payload=records_section_with_bad_length(b, 2), fix_crc=True)
    data = a + bad_b + c + d
    rows, sink = run_skip(data)
    want, want_sink = reference(data, errors="skip")
    assert rows == want
    assert sink == want_sink
    assert [r["offset"] for r in rows] == list(range(13)) + list(range(18, 25))
    assert len(sink) == 1 and sink[0]["error"] == "InvalidRecordError"
    assert sink[0]["base_offset"] == 13
    assert len(a) + 61 < sink[0]["position"] < len(a) + len(bad_b)    # a record inside b
    # A bad CRC is not what failed: the same with verify_crc off.
    assert run_skip(data, verify_crc=False) == (rows, sink)
    with pytest.raises(kafkarec.InvalidRecordError) as info:
        kafkarec.to_arrow(data)
    assert info.value.position == sink[0]["position"]


@pytest.mark.parametrize("codec", [0, 1, 3])
@pytest.mark.parametrize("delta", [1, -1, -4])
def test_wrong_record_count_drops_the_whole_batch(codec, delta):
    a, b, c, d = three_batch_log(codec_middle=codec)
    bad_b = patch_v2(b, record_count=5 + delta)
    data = a + bad_b + c + d
    for verify_crc in (True, False):
        rows, sink = run_skip(data, verify_crc=verify_crc)
        want, want_sink = reference(data, errors="skip", verify_crc=verify_crc)
        assert rows == want and sink == want_sink
        assert [r["offset"] for r in rows] == list(range(13)) + list(range(18, 25))
        assert len(sink) == 1 and sink[0]["error"] == "InvalidRecordError"
        assert sink[0]["base_offset"] == 13
        reason = sink[0]["reason"]
        assert ("premature EOF" in reason) if delta > 0 else ("records still remaining" in reason)
        if codec:
            assert sink[0]["position"] == len(a)
    with pytest.raises(kafkarec.InvalidRecordError):
        kafkarec.to_arrow(data)


def test_error_in_a_legacy_wrapper_drops_it_whole():
    a, b, c, d = three_batch_log()
    inner = b"".join(legacy_message(1, i, key=b"k", value=b"v%d" % i, timestamp=TS0) for i in range(3))
    inner += legacy_message(1, 3, key=b"k", value=b"v", attributes=1, timestamp=TS0)   # compressed inner: error
    wrapper = legacy_message(1, 3, key=None, value=gzip.compress(inner), attributes=1, timestamp=TS0)
    data = a + wrapper + d
    rows, sink = run_skip(data)
    assert [r["offset"] for r in rows] == list(range(13)) + list(range(21, 25))
    assert len(sink) == 1 and sink[0]["error"] == "InvalidRecordError"
    assert sink[0]["base_offset"] is None and sink[0]["position"] == len(a)
    assert (rows, sink) == tuple(reference(data, errors="skip"))


@pytest.mark.parametrize("tail", [
    struct.pack(">qi", 0, 5) + b"\x00" * 40,             # size below the minimum overhead
    struct.pack(">qiib", 0, 60, 0, 7) + b"\x00" * 60,    # magic 7
    struct.pack(">qiib", 0, 20, 0, 2) + b"\x00" * 20,    # v2 batch smaller than its header
], ids=["size", "magic", "short-v2"])
def test_framing_error_ends_the_data_with_one_entry(tail):
    a, b, c, d = three_batch_log()
    data = a + b + tail + c + d
    rows, sink = run_skip(data)
    assert rows == reference(a + b)[0]
    assert len(sink) == 1
    assert sink[0]["position"] == len(a) + len(b)
    assert sink[0]["error"] == "CorruptBatchError" and sink[0]["base_offset"] is None
    assert sink[0]["message"].startswith(f"at byte {len(a) + len(b)}: ")
    with pytest.raises(kafkarec.CorruptBatchError) as info:
        kafkarec.to_arrow(data)
    assert info.value.position == len(a) + len(b)


def test_strict_truncation_is_a_framing_error():
    a, b, c, d = three_batch_log()
    data = a + b[:-5]
    rows, sink = run_skip(data, strict=True)
    assert [r["offset"] for r in rows] == list(range(13))
    assert [e["error"] for e in sink] == ["TruncatedError"]
    assert sink[0]["position"] == len(a)
    # Not strict: a cut batch at the end is what fetch responses look like, not an error.
    rows, sink = run_skip(data)
    assert [r["offset"] for r in rows] == list(range(13)) and sink == []


def test_dropped_batch_leaves_no_trace_in_validity_bitmaps():
    # The failing batch adds null keys, values and headers before it fails; once it is
    # dropped the table has no nulls at all, so every null count must be back to 0.
    a = v2_batch([(i, TS0, b"k", b"v", [("h", b"")]) for i in range(3)])
    b = v2_batch([(3 + i, TS0, None, None, []) for i in range(6)])
    c = v2_batch([(9 + i, TS0, b"k", b"v", [("h", b"")]) for i in range(10)])
    rows, sink = run_skip(a + patch_v2(b, record_count=7) + c)
    assert [r["offset"] for r in rows] == list(range(3)) + list(range(9, 19))
    assert [e["base_offset"] for e in sink] == [3]
    sink = []
    t = pa.Table.from_batches(list(kafkarec.iter_arrow(a + patch_v2(b, record_count=7) + c,
                                                       errors="skip", error_sink=sink)))
    t.validate(full=True)
    for name in ("key", "value", "headers"):
        assert t.column(name).null_count == 0
    assert t.column("key").to_pylist() == [b"k"] * 13
    assert t.column("headers").to_pylist() == [[{"key": "h", "value": b""}]] * 13


def test_skip_rows_are_never_partial_across_chunks():
    a, b, c, d = three_batch_log()
    bad_b = patch_v2(b, payload=records_section_with_bad_length(b, 4))
    data = (a + bad_b + c + d) * 3
    # Offsets repeat, which Kafka would not write, but the decoder does not care.
    sink = []
    chunks = list(kafkarec.iter_arrow(data, batch_columns=True, errors="skip", error_sink=sink,
                                      max_rows=3))
    got = table_rows(pa.Table.from_batches(chunks))
    want, want_sink = reference(data, errors="skip")
    assert got == want and sink == want_sink and len(sink) == 3
    # a chunk ends at max_rows or at a batch left out, nowhere else
    positions = [c.column("batchPosition").to_pylist() for c in chunks]
    bad = [e["batch_position"] for e in sink]
    for rows, after in zip(positions[:-1], positions[1:]):
        assert len(rows) >= 3 or any(rows[-1:] < [p] and (not after or p < after[0]) for p in bad)


@pytest.mark.parametrize("max_rows", [1, 2, 3, 5, 1000])
def test_skipped_batches_keep_their_place_whatever_the_chunks(max_rows):
    """What the error sink gains by the time a chunk is handed out comes after that chunk's rows
    and before the next chunk's: a chunk ends at each batch left out (one of no rows when nothing
    came before it), so the errors' place among the rows is the same at every chunk size and cut."""
    a, b, c, d = three_batch_log()
    bad_b = patch_v2(b, payload=records_section_with_bad_length(b, 4))
    data = bad_b + a + bad_b + bad_b + c + d + bad_b + a + bad_b
    sink = []
    events = []
    for chunk in kafkarec.iter_arrow(data, batch_columns=True, errors="skip", error_sink=sink,
                                     max_rows=max_rows):
        events += [("row", p) for p in chunk.column("batchPosition").to_pylist()]
        events += [("error", e["batch_position"]) for e in sink]
        sink.clear()
    assert [p for _, p in events] == sorted(p for _, p in events)
    assert [kind for kind, _ in events].count("error") == 5
    # the same places when the bytes are read in two pieces, cut at a batch start
    cut = len(bad_b) + len(a) + len(bad_b)
    again = []
    for start, end in ((0, cut), (cut, len(data))):
        for chunk in kafkarec.iter_arrow(data, batch_columns=True, errors="skip", error_sink=sink,
                                         max_rows=max_rows, start=start, end=end):
            again += [("row", p) for p in chunk.column("batchPosition").to_pylist()]
            again += [("error", e["batch_position"]) for e in sink]
            sink.clear()
    assert again == events


@pytest.mark.parametrize("max_rows", [1, 2, 5, 1000])
def test_the_rows_before_a_failing_batch_come_before_its_error(max_rows):
    """errors="raise": the rows of every batch before the one that fails are handed out, then it
    raises: the same rows wherever the chunks end (a read of the same bytes in other windows hands
    on the same rows before its error)."""
    a, b, c, d = three_batch_log()
    bad_b = patch_v2(b, payload=records_section_with_bad_length(b, 4))
    data = a + c + d + bad_b + a
    rows = []
    chunks = kafkarec.iter_arrow(data, batch_columns=True, max_rows=max_rows)
    with pytest.raises(kafkarec.DecodeError) as raised:
        for chunk in chunks:
            rows += chunk.column("batchPosition").to_pylist()
    before = len(a) + len(c) + len(d)
    assert raised.value.position >= before
    want = table_rows(kafkarec.to_arrow(data[:before], batch_columns=True))
    assert len(rows) == len(want) and all(p < before for p in rows)


def test_errors_argument_checked():
    data = v2_batch(spec_records(3, 0, seed=1))
    with pytest.raises(ValueError, match="error_sink"):
        kafkarec.iter_arrow(data, errors="skip")
    with pytest.raises(ValueError, match="errors must be"):
        kafkarec.iter_arrow(data, errors="ignore", error_sink=[])
    sink = []
    assert sum(c.num_rows for c in kafkarec.iter_arrow(data, errors="skip", error_sink=sink)) == 3
    assert sink == []


# A framing error at byte 0 (magic 7): any read of it would raise a DecodeError.
UNREADABLE = struct.pack(">qiib", 0, 60, 0, 7) + b"\x00" * 60


@pytest.mark.parametrize("kwargs,match", [
    (dict(errors="ignore", error_sink=[]), "errors must be 'raise' or 'skip'"),
    (dict(errors="RAISE"), "errors must be 'raise' or 'skip'"),
    (dict(errors="skip"), "needs an error_sink list"),
    (dict(errors="skip", error_sink=None), "needs an error_sink list"),
    (dict(max_rows=0), "max_rows and max_bytes must be positive"),
    (dict(max_rows=-1), "max_rows and max_bytes must be positive"),
    (dict(max_bytes=0), "max_rows and max_bytes must be positive"),
    (dict(max_bytes=-(1 << 40)), "max_rows and max_bytes must be positive"),
    (dict(partition=INT32_MAX + 1), "partition 2147483648 does not fit the int32"),
    (dict(partition=-2**31 - 1), "partition -2147483649 does not fit the int32"),
    (dict(partition=1 << 70), "does not fit the int32 partition column"),
], ids=["errors-ignore", "errors-RAISE", "skip-no-sink", "skip-sink-None", "max_rows-0",
        "max_rows-neg", "max_bytes-0", "max_bytes-neg", "partition-2^31", "partition-below-int32",
        "partition-2^70"])
def test_iter_arrow_checks_its_arguments_when_called(kwargs, match):
    # The call itself raises, before the generator is started: nothing is read
    # (UNREADABLE would raise a DecodeError, which is also a ValueError) and no
    # read_committed pass runs.
    for data in (UNREADABLE, v2_batch(spec_records(3, 0, seed=1))):
        for read_committed in (False, True):
            with pytest.raises(ValueError, match=match) as info:
                kafkarec.iter_arrow(data, read_committed=read_committed, **kwargs)
            assert type(info.value) is ValueError
    if set(kwargs) == {"partition"}:
        with pytest.raises(ValueError, match=match) as info:
            kafkarec.to_arrow(UNREADABLE, **kwargs)
        assert type(info.value) is ValueError


def test_iter_arrow_argument_bounds_are_accepted():
    data = v2_batch(spec_records(3, 0, seed=1)) + v2_batch(spec_records(2, 10, seed=2))
    for partition in (INT32_MAX, -2**31, -1, 0, None):
        t = kafkarec.to_arrow(data, partition=partition)
        assert t.column("partition").to_pylist() == [partition] * 5
        chunks = list(kafkarec.iter_arrow(data, partition=partition, max_rows=1, max_bytes=1))
        assert [c.num_rows for c in chunks] == [3, 2]
    # With valid arguments the first decode error comes from iterating, not the call.
    it = kafkarec.iter_arrow(UNREADABLE, max_rows=1, max_bytes=1, partition=INT32_MAX)
    with pytest.raises(kafkarec.CorruptBatchError):
        next(it)


def test_errors_raise_raises_the_decode_error():
    a, b, c, d = three_batch_log()
    bad_b = patch_v2(b, record_count=9)
    with pytest.raises(DecodeError) as info:
        list(kafkarec.iter_arrow(a + bad_b + c, errors="raise"))
    assert type(info.value) is kafkarec.InvalidRecordError
    with pytest.raises(kafkarec.InvalidRecordError) as ref:
        reference(a + bad_b + c)
    assert (info.value.position, info.value.reason) == (ref.value.position, ref.value.reason)


def test_read_committed_with_skip():
    data, visible, total, _ = interleaved_log()
    batches = list(kafkarec.iter_batches(data))
    victim = next(b for b in batches if b.magic == 2 and not b.is_control and b.base_offset in visible
                  and b.compression == Compression.NONE)
    raw = bytearray(data)
    raw[victim.position + victim.size_in_bytes - 1] ^= 0xFF
    sink = []
    t = pa.Table.from_batches(list(kafkarec.iter_arrow(bytes(raw), read_committed=True, errors="skip",
                                                       error_sink=sink)))
    lost = {r.offset for r in victim}
    assert lost
    assert t.column("offset").to_pylist() == [o for o in visible if o not in lost]
    assert [(e["error"], e["position"]) for e in sink] == [("ChecksumError", victim.position)]


def test_read_committed_corrupt_commit_marker_does_not_drop_committed_data_silently():
    committed = txn_data(1, 0, 3)                            # 0-2  P1's transaction
    other = txn_data(2, 3, 2, transactional=False)           # 3-4
    bad = corrupt_commit_into_abort(marker(1, 5, ControlRecordType.COMMIT))   # 5  P1's COMMIT, reads ABORT
    after = txn_data(3, 6, 2, transactional=False)           # 6-7
    data = committed + other + bad + after
    bad_position = len(committed) + len(other)
    b = list(kafkarec.iter_batches(data, verify_crc=False))[2]
    assert b.position == bad_position and b.is_control and b.is_transactional
    assert not b.crc_valid
    assert [r.control_type for r in b] == [ControlRecordType.ABORT]
    # verify_crc=False believes the marker: P1's rows are dropped (what CRC checks prevent).
    assert kafkarec.to_arrow(data, read_committed=True, verify_crc=False).column(
        "offset").to_pylist() == [3, 4, 6, 7]
    # Checked, errors="raise": the marker raises, whether control records are wanted or not.
    for read_committed in (True, False):
        for include_control in (False, True):
            with pytest.raises(kafkarec.ChecksumError) as info:
                kafkarec.to_arrow(data, read_committed=read_committed,
                                  include_control=include_control)
            assert info.value.position == bad_position
    # Like a consumer, the rows before the corrupt batch are delivered before it fails.
    it = kafkarec.iter_arrow(data, read_committed=True, max_rows=1)
    assert [next(it).column("offset").to_pylist() for _ in range(2)] == [[0, 1, 2], [3, 4]]
    with pytest.raises(kafkarec.ChecksumError):
        next(it)
    # errors="skip": the marker is reported; it ends P1's transaction without aborting
    # it (nothing is left open to hold the LSO), so the committed rows are kept.
    for include_control in (False, True):
        rows, sink = run_skip(data, read_committed=True, include_control=include_control)
        assert [r["offset"] for r in rows] == [0, 1, 2, 3, 4, 6, 7]
        assert [(e["error"], e["position"], e["base_offset"]) for e in sink] == [
            ("ChecksumError", bad_position, 5)]
        assert (rows, sink) == reference(data, errors="skip", include_control=include_control,
                                         skip_positions=committed_view(data))
    assert committed_view(data) == set() == transactions.aborted_batches(kafkarec.iter_batches(data))


def test_read_committed_corrupt_abort_marker_is_reported_not_believed():
    # The other way round: a real ABORT whose coordinator epoch was hit (5 -> 4).  Its
    # CRC fails, so it decides nothing: with errors="skip" the aborted rows are kept and
    # the sink entry is what says the marker could not be trusted.
    aborted = txn_data(1, 0, 2)
    raw = bytearray(marker(1, 2, ControlRecordType.ABORT, coordinator_epoch=5))
    assert raw[-2] == 5                  # last byte of the epoch (then the header count)
    raw[-2] = 4
    data = aborted + bytes(raw) + txn_data(2, 3, 1, transactional=False)
    assert [r.coordinator_epoch for r in list(kafkarec.iter_batches(data, verify_crc=False))[1]] == [4]
    assert kafkarec.to_arrow(data, read_committed=True, verify_crc=False).column(
        "offset").to_pylist() == [3]
    with pytest.raises(kafkarec.ChecksumError) as info:
        kafkarec.to_arrow(data, read_committed=True)
    assert info.value.position == len(aborted)
    rows, sink = run_skip(data, read_committed=True)
    assert [r["offset"] for r in rows] == [0, 1, 3]
    assert [(e["error"], e["position"], e["base_offset"]) for e in sink] == [
        ("ChecksumError", len(aborted), 2)]


def test_left_out_control_batches_are_crc_checked():
    ABORT, COMMIT = ControlRecordType.ABORT, ControlRecordType.COMMIT
    bad_txn = bytearray(marker(1, 2, COMMIT))
    bad_txn[-2] ^= 0x01                                   # coordinator epoch 1 -> 0
    bad_plain = bytearray(patch_v2(marker(7, 5, ABORT), attributes=0x20))   # not transactional
    bad_plain[-2] ^= 0x01
    parts = [txn_data(1, 0, 2), bytes(bad_txn), txn_data(3, 3, 2, transactional=False),
             bytes(bad_plain), marker(2, 6, ABORT), v2_batch(spec_records(2, 7, seed=4))]
    data = b"".join(parts)
    positions = [sum(map(len, parts[:i])) for i in range(len(parts))]
    batches = list(kafkarec.iter_batches(data))
    assert [(b.is_control, b.is_transactional, b.crc_valid) for b in batches] == [
        (False, True, True), (True, True, False), (False, False, True),
        (True, False, False), (True, True, True), (False, False, True)]
    data_offsets = [0, 1, 3, 4] + [s[0] for s in spec_records(2, 7, seed=4)]
    for read_committed in (False, True):
        for include_control in (False, True):
            kw = dict(read_committed=read_committed, include_control=include_control)
            with pytest.raises(kafkarec.ChecksumError) as info:
                kafkarec.to_arrow(data, **kw)
            assert info.value.position == positions[1]
            rows, sink = run_skip(data, **kw)
            assert [(e["error"], e["position"], e["base_offset"]) for e in sink] == [
                ("ChecksumError", positions[1], 2), ("ChecksumError", positions[3], 5)]
            assert [r["offset"] for r in rows] == sorted(data_offsets + ([6] if include_control else []))
            skip = committed_view(data) if read_committed else frozenset()
            assert (rows, sink) == reference(data, errors="skip", include_control=include_control,
                                             skip_positions=skip)
            # Unchecked, nothing is reported and the corrupt markers are read as they are.
            t = kafkarec.to_arrow(data, verify_crc=False, **kw)
            assert t.column("offset").to_pylist() == sorted(
                data_offsets + ([2, 5, 6] if include_control else []))


# ------------------------------------------------------------- 5. hostile bytes


def hostile_samples():
    out = []
    for seed, codecs in enumerate([(0, 1), (2, 3), (4, 0), (3, 1)]):
        parts, offset = [], 0
        for codec in codecs:
            specs = spec_records(4, offset, seed=seed)
            parts.append(v2_batch(specs, codec=codec, producer_id=seed, producer_epoch=0,
                                  base_sequence=0, is_transactional=bool(seed % 2)))
            offset = specs[-1][0] + 1
        parts.append(legacy_batch(1, spec_records(3, offset, seed=seed), codec=codecs[0] % 4))
        parts.append(legacy_batch(0, spec_records(2, offset + 400, seed=seed)))
        parts.append(kafka_python_batch(2, codecs[1], offset + 800, 3, seed=seed))
        if seed % 2:
            parts.append(marker(seed, offset + 900, ControlRecordType.ABORT))
        out.append(b"".join(parts))
    # Transactions that commit, abort and stay open (an LSO), markers of each kind.
    txn = dict(producer_epoch=0, base_sequence=0, is_transactional=True)
    out.append(b"".join([
        v2_batch(spec_records(3, 0, seed=5), producer_id=11, **txn),
        v2_batch(spec_records(2, 10, seed=6), codec=1, producer_id=12, **txn),
        marker(11, 20, ControlRecordType.COMMIT),
        v2_batch(spec_records(2, 21, seed=7), codec=4),
        marker(12, 30, ControlRecordType.ABORT),
        v2_batch(spec_records(2, 31, seed=8), producer_id=13, **txn),
        legacy_batch(1, spec_records(2, 40, seed=9)),
        v2_batch(spec_records(2, 50, seed=10), codec=3, producer_id=11, **txn),
        marker(11, 60, ControlRecordType.COMMIT),
    ]))
    return out


HOSTILE = hostile_samples()
LIMIT = 1 << 20


@st.composite
def flipped(draw):
    data = bytearray(draw(st.sampled_from(HOSTILE)))
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(data) - 1))
        data[i] = draw(st.one_of(st.integers(0, 255), st.just(data[i] ^ 0x80), st.just(0xFF),
                                 st.just(0)))
    cut = draw(st.one_of(st.none(), st.integers(0, len(data))))
    return bytes(data if cut is None else data[:cut])


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(flipped(), st.booleans())
def test_hostile_to_arrow_equals_row_reader_or_raises(data, include_control):
    try:
        want, _ = reference(data, verify_crc=False, include_control=include_control,
                            max_decompressed_bytes=LIMIT)
    except DecodeError as exc:
        event(f"raises {type(exc).__name__}")
        with pytest.raises(DecodeError) as info:
            kafkarec.to_arrow(data, verify_crc=False, batch_columns=True,
                              include_control=include_control, max_decompressed_bytes=LIMIT)
        assert (type(info.value), info.value.position, info.value.reason) == (
            type(exc), exc.position, exc.reason)
        return
    t = kafkarec.to_arrow(data, verify_crc=False, batch_columns=True,
                          include_control=include_control, max_decompressed_bytes=LIMIT)
    assert t.schema.equals(schema_of(True))
    assert table_rows(t) == want
    event("decodes")


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(flipped(), st.booleans(), st.booleans(), st.integers(1, 20))
def test_hostile_skip_never_raises(data, verify_crc, read_committed, max_rows):
    sink = []
    chunks = list(kafkarec.iter_arrow(data, verify_crc=verify_crc, batch_columns=True,
                                      read_committed=read_committed, errors="skip",
                                      error_sink=sink, max_rows=max_rows,
                                      max_decompressed_bytes=LIMIT))
    table = pa.Table.from_batches(chunks, schema=schema_of(True))
    skip = frozenset()
    if read_committed:
        skip = frozenset(committed_view(data, verify_crc=verify_crc, max_decompressed_bytes=LIMIT))
        assert skip == rule_until_framing_error(data, verify_crc)
    want, want_sink = reference(data, verify_crc=verify_crc, errors="skip", skip_positions=skip,
                                max_decompressed_bytes=LIMIT)
    assert table_rows(table) == want
    assert sink == want_sink
    event(f"{len(sink)} sink entries")


def rule_until_framing_error(data, verify_crc):
    """kafkarec.transactions' rule over the batches up to a framing error."""
    it = kafkarec.iter_batches(data, verify_crc=verify_crc, max_decompressed_bytes=LIMIT)

    def batches():
        try:
            yield from it
        except DecodeError:
            return
    # A data batch that fails its CRC opens no transaction (markers still end one).
    return transactions.aborted_batches(
        batches(), trusted=(lambda b: b.crc_valid) if verify_crc else None)


# ------------------------------------------------------------- decode-loop edges


@pytest.mark.parametrize("batch_columns", [False, True])
@pytest.mark.parametrize("codec", [0, 1])
def test_corrupt_batch_with_a_broken_record_is_reported_as_corrupt(codec, batch_columns):
    # The CRC of an uncompressed batch is checked after its records are decoded
    # (bytes in cache); a batch both corrupt and malformed must still be reported
    # as corrupt, as a consumer checking CRCs first would.
    a, b, c, d = three_batch_log(codec_middle=codec)
    if codec == 0:
        bad_b = patch_v2(b, payload=records_section_with_bad_length(b, 2), fix_crc=False)
    else:
        bad_b = patch_v2(b, record_count=9, fix_crc=False)
    data = a + bad_b + c + d
    sink = []
    chunks = list(kafkarec.iter_arrow(data, batch_columns=batch_columns, errors="skip",
                                      error_sink=sink))
    rows = table_rows(pa.Table.from_batches(chunks, schema=schema_of(batch_columns)))
    want, want_sink = reference(data, errors="skip", batch_columns=batch_columns)
    assert rows == want and sink == want_sink
    assert [e["error"] for e in sink] == ["ChecksumError"] and sink[0]["position"] == len(a)
    with pytest.raises(kafkarec.ChecksumError) as info:
        kafkarec.to_arrow(data, batch_columns=batch_columns)
    assert info.value.position == len(a)
    # Without CRC checks the record error shows.
    with pytest.raises(kafkarec.InvalidRecordError):
        kafkarec.to_arrow(data, verify_crc=False, batch_columns=batch_columns)


def test_corrupt_empty_batch_is_reported():
    # A batch of 0 records decodes nothing but its CRC is still checked.
    empty = patch_v2(v2_batch(spec_records(1, 5, seed=1)), payload=b"", record_count=0)
    bad = bytearray(empty)
    bad[30] ^= 0x01                                     # base timestamp: CRC-covered
    rows, sink = run_skip(bytes(bad))
    assert rows == [] and [e["error"] for e in sink] == ["ChecksumError"]
    assert kafkarec.to_arrow(empty).num_rows == 0


def test_columns_sized_from_the_first_batch_survive_any_later_batch_sizes():
    # Column space is extrapolated from a chunk's first batch; later batches much
    # larger (or smaller) than the first must still come out exactly.
    rng = random.Random(5)
    batches, offset = [], 0
    for n, vsize in [(1, 1), (200, 3000), (3, 0), (50, 70000), (1, 0), (400, 10)]:
        specs = [(offset + i, TS0 + i, None if rng.random() < 0.2 else rng.randbytes(rng.randrange(40)),
                  None if rng.random() < 0.1 else rng.randbytes(rng.randrange(vsize + 1)),
                  [("h", b"x")] if rng.random() < 0.3 else [])
                 for i in range(n)]
        batches.append(v2_batch(specs))
        offset += n
    data = b"".join(batches)
    assert_table_matches(data)
    for max_rows, max_bytes in [(1, 1 << 30), (150, 1 << 30), (1 << 20, 100_000)]:
        chunks = list(kafkarec.iter_arrow(data, max_rows=max_rows, max_bytes=max_bytes,
                                          topic="t", partition=1))
        for chunk in chunks:
            chunk.validate(full=True)
        assert pa.Table.from_batches(chunks).equals(kafkarec.to_arrow(data, topic="t", partition=1))


@pytest.mark.parametrize("length", [0, 1, 15, 16, 31, 32, 33, 63, 64, 65, 255, 256, 257, 4096])
def test_key_and_value_copies_at_block_boundaries(length):
    # Short keys/values are copied in 32-byte blocks when the batch has the bytes
    # behind them, else with memcpy: the last record of a batch takes the other path.
    payload = bytes(range(256)) * (length // 256 + 1)
    specs = [(i, TS0, payload[i:i + length], payload[:length][::-1], []) for i in range(3)]
    data = v2_batch(specs) + v2_batch([(3, TS0, payload[:length], payload[1:length + 1], [])])
    rows = assert_table_matches(data)
    assert [r["key"] for r in rows] == [payload[i:i + length] for i in range(3)] + [payload[:length]]
    assert rows[-1]["value"] == payload[1:length + 1]


def test_column_memory_stays_near_the_data_size():
    # Large values: what the table holds from Arrow's pool stays close to the
    # bytes it carries (no per-column reservation of whole batch payloads).
    rng = random.Random(9)
    data = b"".join(
        v2_batch([(b * 20 + i, TS0, b"key-%d" % i, rng.randbytes(50_000), []) for i in range(20)])
        for b in range(4))
    before = pa.total_allocated_bytes()
    table = kafkarec.to_arrow(data, topic="t", partition=0)
    held = pa.total_allocated_bytes() - before
    assert table.num_rows == 80
    assert held <= 1.5 * len(data) + (1 << 20), (held, len(data))


def test_topic_must_be_a_string():
    data = v2_batch(spec_records(2, 0, seed=1))
    with pytest.raises(TypeError, match="topic must be a str"):
        kafkarec.to_arrow(data, topic=b"events")
    with pytest.raises(TypeError, match="topic must be a str"):
        kafkarec.iter_arrow(data, topic=7)


@pytest.mark.parametrize("length", [0, 1, 31, 32, 33, 255, 256, 257, 5000])
def test_header_copies_at_block_boundaries_and_batch_end(length):
    # The last header value of the last record ends the batch: its copy cannot
    # read 32-byte blocks past it.  Invalid UTF-8 keys take the replacing path.
    blob = bytes(range(256)) * (length // 256 + 1)
    specs = [(i, TS0, None, b"v", [("k%d" % j, blob[j:j + length]) for j in range(3)]
              + [(b"\xff" * (i + 1), None), ("last", blob[:length])]) for i in range(4)]
    rows = assert_table_matches(v2_batch(specs) + v2_batch(specs[:1]))
    assert rows[-1]["headers"][-1] == {"key": "last", "value": blob[:length]}
    assert rows[2]["headers"][3] == {"key": "\ufffd" * 3, "value": None}


# ------------------------------------------------- the full decode's loop without the GIL
# A v2 batch whose records section is 16 KiB or more is walked by full_rows with the GIL released;
# what it cannot take (a column to grow, a header key to replace as Java does) goes record by
# record through the GIL's path.  Both must give the row reader's rows, and its errors.

NOGIL_BYTES = 16384
PAD = (b"p" * 16, b"v" * 100, [("trace", b"0123456789abcdef")])


def big_specs(shapes, *, seed: int):
    """The shapes, then padding records until the records section passes NOGIL_BYTES."""
    rnd = random.Random(seed)
    out, offset, size = [], 1000, 0
    for key, value, headers in list(shapes) + [PAD] * max(0, 200 - len(shapes)):
        out.append((offset, TS0 + rnd.randint(-5000, 5000), key, value, headers))
        offset += rnd.choice((1, 1, 3))
        size += len(key or b"") + len(value or b"") + sum(len(k) + len(v or b"") + 2 for k, v in headers)
    assert size >= NOGIL_BYTES
    return out


header_keys = st.one_of(st.text(max_size=6), st.binary(max_size=6))   # bytes: often not UTF-8
record_shapes = st.tuples(
    st.one_of(st.none(), st.binary(max_size=24)),
    st.one_of(st.none(), st.binary(max_size=300),
              st.builds(lambda n, b: bytes([b]) * n, st.integers(20_000, 70_000), st.integers(0, 255))),
    st.lists(st.tuples(header_keys, st.one_of(st.none(), st.binary(max_size=40))), max_size=6))


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(record_shapes, min_size=1, max_size=60), st.integers(0, 2**31), st.sampled_from([0, 0, 3, 4]),
       st.booleans())
def test_batches_walked_without_the_gil_equal_the_row_reader(shapes, seed, codec, two):
    """Keys and values of every size (some past the columns' room: grown mid-batch), null keys,
    values and header values, repeated and non-UTF-8 header keys, many headers; one or two
    batches (the second's rows after the first's in the same columns)."""
    data = v2_batch(big_specs(shapes, seed=seed), codec=codec)
    if two:
        data += v2_batch(big_specs(shapes[::-1], seed=seed + 1), codec=codec)
    rows = assert_table_matches(data)
    whole = kafkarec.to_arrow(data)
    for columns in (["offset", "key"], ["value", "timestamp"], ["headers"], ["key", "value", "offset"]):
        # a projection without key, value or headers leaves that column out of the loop's copies
        got = pa.Table.from_batches(list(kafkarec.iter_arrow(data, columns=columns)))
        assert sorted(got.schema.names) == sorted(columns)
        assert got.equals(whole.select(got.schema.names)), columns
    for row, (_, _, key, value, headers) in zip(rows, big_specs(shapes, seed=seed)):
        assert (row["key"], row["value"]) == (key, value)
        if headers:
            assert [h["value"] for h in row["headers"]] == [v for _, v in headers]


def big_hostile_samples():
    """Batches past NOGIL_BYTES to damage: uncompressed (the loop sees the damage) and lz4."""
    out = []
    for codec in (0, 0, 3):
        out.append(v2_batch(big_specs([SHAPES[i % len(SHAPES)] for i in range(40)], seed=codec), codec=codec))
    return out


BIG_HOSTILE = big_hostile_samples()


@st.composite
def big_flipped(draw):
    data = bytearray(draw(st.sampled_from(BIG_HOSTILE)))
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(61, len(data) - 1))        # in the records (a header flip rarely decodes)
        data[i] = draw(st.one_of(st.integers(0, 255), st.just(data[i] ^ 0x80), st.just(0xFF), st.just(0)))
    cut = draw(st.one_of(st.none(), st.none(), st.integers(0, len(data))))
    return bytes(data if cut is None else data[:cut])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(big_flipped(), st.booleans())
def test_damaged_batches_walked_without_the_gil_fail_as_the_row_reader(data, strict):
    """The same rows, or the same error at the same position, as the row reader (strict reads
    too: the scanner's further rules, a header key's UTF-8 among them, inside the loop)."""
    try:
        want, _ = reference(data, verify_crc=False, batch_columns=False)
    except DecodeError as exc:
        with pytest.raises(DecodeError) as info:
            kafkarec.to_arrow(data, verify_crc=False, strict=strict)
        if not strict:
            assert (type(info.value), info.value.position, info.value.reason) == (
                type(exc), exc.position, exc.reason)
        event(f"raises {type(exc).__name__}")
        return
    if strict:
        try:
            want = [record_row(b, r, topic=None, partition=None, batch_columns=False)
                    for b in kafkarec.iter_batches(data, verify_crc=False, strict=True) for r in b]
        except DecodeError as exc:
            with pytest.raises(DecodeError) as info:
                kafkarec.to_arrow(data, verify_crc=False, strict=True)
            assert (type(info.value), info.value.position, info.value.reason) == (
                type(exc), exc.position, exc.reason)
            event("strict raises")
            return
    assert table_rows(kafkarec.to_arrow(data, verify_crc=False, strict=strict)) == want
    event("decodes")
