"""Typed reads on LogScan's pool: each batch's values typed (kafkarec.registry.typed.decode_table) on the
thread that decoded its records, the mode's rule settled in the consumer's thread, in log order, over
the rows the read keeps.  Threads 1 and N give the same rows, order, errors and stopping point."""
import io
import json
import logging
import threading

import pyarrow as pa
import pytest

import kafkarec.registry as kr
import kafkarec.registry.typed as typed_module
from kafkarec.errors import MalformedBatchError
from kafkarec.log import local
from kafkarec.scan import Bounds, LogScan
from kafkarec.scan.typed import TypedRows

from support.logs.logdir import T0, PartitionWriter, v2_batch
from support.registry.schemas_log import confluent_key, schema_value

WINDOW = 8192       # many windows: the pool has work to reorder
V1 = json.dumps({"type": "record", "name": "Order", "fields": [
    {"name": "n", "type": "long"}, {"name": "s", "type": "string"}]})
V2 = json.dumps({"type": "record", "name": "Order", "fields": [
    {"name": "n", "type": "long"}, {"name": "s", "type": "string"},
    {"name": "tag", "type": "string", "default": "none"}]})
BATCHES, PER_BATCH = 240, 10


def _payload(i: int) -> bytes:
    """Record i's value: Confluent-framed Avro by writer 1 or 2, and now and then one that does not
    decode (an unknown writer id, a body cut short, no magic byte) or a tombstone."""
    import fastavro
    if i % 37 == 5:
        return b"\x00\x00\x00\x03\xe7\x02"                  # writer id 999: unknown
    if i % 41 == 7:
        return b"\x00\x00\x00\x00\x01\x80"                  # a varint cut short
    if i % 43 == 9:
        return b"not avro at all"
    if i % 47 == 11:
        return None
    body = io.BytesIO()
    if i % 3:
        fastavro.schemaless_writer(body, fastavro.parse_schema(json.loads(V1)), {"n": i, "s": "x" * (i % 13)})
        return b"\x00\x00\x00\x00\x01" + body.getvalue()
    fastavro.schemaless_writer(body, fastavro.parse_schema(json.loads(V2)),
                               {"n": i, "s": "y" * (i % 11), "tag": f"t{i % 5}"})
    return b"\x00\x00\x00\x00\x02" + body.getvalue()


def _write(root: str, corrupt_at=None) -> None:
    w = PartitionWriter(root, "orders", 0, segment_bytes=60_000)
    appended = []
    for k in range(BATCHES):
        records = [(T0 + 10 * k + j, b"k%d" % (j % 4), _payload(k * PER_BATCH + j), [])
                   for j in range(PER_BATCH)]
        appended.append(w.append(v2_batch(records, codec=("none", "zstd", "lz4")[k % 3])))
    w.close()
    if corrupt_at is not None:
        w.corrupt(appended[corrupt_at])         # its CRC fails


@pytest.fixture(scope="module")
def registry():
    return kr.replay([(0, confluent_key("SCHEMA", "orders-value", 1), schema_value("orders-value", 1, 1, V1)),
                      (1, confluent_key("SCHEMA", "orders-value", 2), schema_value("orders-value", 2, 2, V2))])


@pytest.fixture(scope="module")
def log(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("typedthreads"))
    _write(root)
    return root


@pytest.fixture(scope="module")
def damaged(tmp_path_factory):
    """The same log with one batch's CRC broken, past the first windows."""
    root = str(tmp_path_factory.mktemp("typedthreadsbad"))
    _write(root, corrupt_at=150)
    return root


@pytest.fixture
def small_windows(monkeypatch):
    monkeypatch.setattr(local, "READ_WINDOW_BYTES", WINDOW)


def _scan(source, registry, threads, **options):
    return LogScan(source, threads=threads, topics=["orders"], value_format="registry", registry=registry,
                   **options)


def _read(scan):
    """(the batches handed on before an error, the error's text or None)."""
    got = []
    try:
        for rb in scan:
            got.append(rb)
    except MalformedBatchError as exc:
        return got, str(exc)
    return got, None


def _table(batches, scan):
    return pa.Table.from_batches(batches, schema=scan.schema)


@pytest.mark.parametrize("options", [
    {}, {"columns": ["offset", "value", "_corrupt_record"]},
    {"bounds": Bounds.of(offsets=(333, 1777))},
    {"bounds": Bounds.of(timestamps=(T0 + 300, T0 + 1900))},
    {"bounds": Bounds.of(offsets=(100, 2000), timestamps=(T0 + 555, T0 + 2222)), "columns": ["offset", "value"]},
    {"limit": 1234}])
def test_typed_rows_on_the_pool_as_one_after_the_other(log, registry, small_windows, options):
    one = _scan(log, registry, 1, **options).to_table()
    assert one.num_rows > 100
    if "_corrupt_record" in one.column_names:       # rows that do not decode are mixed in, and kept
        reasons = one.column("_corrupt_record").drop_null().to_pylist()
        assert any("999" in r for r in reasons) and len(reasons) > 10
    for threads in (2, 4):
        assert _scan(log, registry, threads, **options).to_table().equals(one), threads


@pytest.mark.parametrize("mode", ["PERMISSIVE", "DROPMALFORMED", "FAILFAST"])
def test_a_damaged_batch_among_typed_rows_as_one_after_the_other(damaged, registry, small_windows, mode):
    """The read's mode over a batch that cannot be decoded, with typed rows that do not decode
    around it: the same rows, the same error rows or error, and FAILFAST the same rows before it."""
    seen = {}
    for threads in (1, 2, 4):
        scan = _scan(damaged, registry, threads, mode=mode)
        batches, error = _read(scan)
        seen[threads] = (_table(batches, scan), error)
    one, error = seen[1]
    if mode == "FAILFAST":
        # every row of the 150 batches before the damaged one, then the error
        assert error is not None and "ChecksumError" in error and one.num_rows == 150 * PER_BATCH
    else:
        assert error is None and one.num_rows > 2000
    for threads in (2, 4):
        assert seen[threads][1] == error and seen[threads][0].equals(one), threads


@pytest.mark.parametrize("mode", ["DROPMALFORMED", "FAILFAST"])
def test_the_typed_rows_settled_by_their_mode_in_log_order(log, registry, small_windows, mode, caplog):
    """LogScan keeps a typed row that does not decode (PERMISSIVE, its reason in _corrupt_record);
    the other readers' TypedRows settle by their mode (the backfill's FAILFAST, the Spark source's
    any): in LogScan's place, the rows typed on the pool are settled in the consumer's thread, in log
    order, over the rows the bounds keep: DROPMALFORMED leaves out the same rows and says so batch by
    batch, FAILFAST raises at the same row, the rows before it handed on."""
    seen = {}
    for threads in (1, 2, 4):
        scan = _scan(log, registry, threads, bounds=Bounds.of(offsets=(12, 2200)), max_rows_per_batch=PER_BATCH)
        scan._typed = TypedRows(scan.config.typed, ["orders"], mode=mode)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="kafkarec"):
            batches, error = _read(scan)
        said = [r.getMessage() for r in caplog.records if "DROPMALFORMED" in r.getMessage()]
        seen[threads] = (_table(batches, scan), error, said)
    one, error, said = seen[1]
    if mode == "FAILFAST":
        # the first row in the bounds that does not decode: record 42 names writer 999 (i % 37 == 5);
        # records 7 and 9 before it do not decode either, but the bounds leave them out
        assert error is not None and "offset 42" in error and "999" in error and one.num_rows == 40 - 12
    else:
        assert error is None and one.column("_corrupt_record").null_count == one.num_rows
        assert one.num_rows > 1000 and said
    for threads in (2, 4):
        assert seen[threads][1:] == (error, said) and seen[threads][0].equals(one), threads


def test_the_typed_decode_runs_on_the_pools_threads(log, registry, small_windows, monkeypatch):
    """decode_table runs on the threads that decode the records (none of its rows typed in the
    consumer's thread), each row once; the settling in the consumer's thread.  One thread: both in
    the consumer's."""
    typed, settled = [], []
    real_decode, real_settle = typed_module.decode_table, TypedRows.settle

    def decode_table(table, *args, **kwargs):
        typed.append((threading.current_thread().name, table.num_rows))
        return real_decode(table, *args, **kwargs)

    def settle(self, rows, *args, **kwargs):
        settled.append((threading.current_thread().name, rows.num_rows))
        return real_settle(self, rows, *args, **kwargs)
    monkeypatch.setattr(typed_module, "decode_table", decode_table)
    monkeypatch.setattr(TypedRows, "settle", settle)
    me = threading.current_thread().name
    for threads in (1, 3):
        scan = _scan(log, registry, threads)
        del typed[:], settled[:]
        assert scan.to_table().num_rows == BATCHES * PER_BATCH
        typed_on = {name for name, rows in typed if rows}
        assert sum(rows for _, rows in typed) == sum(rows for _, rows in settled) == BATCHES * PER_BATCH
        assert {name for name, rows in settled} == {me}
        if threads == 1:
            assert typed_on == {me}
        else:
            assert typed_on and all(name.startswith("kafkarec-decode") for name in typed_on), typed_on


def test_a_batch_whose_typing_raises_on_the_pool_raises_where_one_thread_does(log, registry, small_windows,
                                                                               monkeypatch):
    """Typing that raises (a defect, not a row that does not decode) on a pool thread hands the batch
    on untyped; the consumer types it again in log order and raises there, as one thread does; a
    batch the bounds leave out raises nothing."""
    real = typed_module.decode_table

    def failing(table, *args, **kwargs):
        if table.num_rows and 700 in table.column("offset").to_pylist():
            raise RuntimeError("typing failed at offset 700")
        return real(table, *args, **kwargs)
    monkeypatch.setattr(typed_module, "decode_table", failing)
    seen = {}
    for threads in (1, 3):
        got = []
        with pytest.raises(RuntimeError, match="offset 700"):
            for rb in _scan(log, registry, threads, max_rows_per_batch=PER_BATCH):
                got.append(rb)
        seen[threads] = pa.Table.from_batches(got)
        # left out by the bounds: never typed in the consumer's thread, so nothing raised
        kept = _scan(log, registry, threads, bounds=Bounds.of(offsets=(800, None))).to_table()
        assert kept.num_rows == BATCHES * PER_BATCH - 800
    assert seen[3].equals(seen[1]) and seen[1].num_rows == 700


def test_typed_rows_pickle_without_their_decoders(log, registry):
    """A typed scan pickles (Ray's and Daft's tasks): its decoders and locks are rebuilt where it runs."""
    import pickle
    scan = _scan(log, registry, 2)
    again = pickle.loads(pickle.dumps(scan))
    assert again.to_table().equals(scan.to_table())
    col = scan._typed._columns["value"]
    assert pickle.loads(pickle.dumps(col)).decode(pa.array([_payload(1)], pa.binary()))[0].to_pylist() == \
        col.decode(pa.array([_payload(1)], pa.binary()))[0].to_pylist()


def test_stress_fresh_decoders_on_many_threads(log, registry, small_windows):
    """Each scan's decoders built afresh, their writers added by whichever pool thread meets them
    first, many threads at once: the same rows every time."""
    one = _scan(log, registry, 1).to_table()
    for _ in range(4):
        assert _scan(log, registry, 8).to_table().equals(one)


@pytest.mark.parametrize("mode", ["PERMISSIVE", "DROPMALFORMED", "FAILFAST"])
def test_a_batch_going_back_among_typed_rows_as_one_after_the_other(tmp_path, registry, small_windows, mode):
    """A batch whose offsets go back: its window decoded again in the consumer's thread without it
    (the offset-order rule), its batches typed there, the others on the pool: the same rows, error
    rows or error as one thread's."""
    import kafkarec
    folder = tmp_path / "orders-0"
    folder.mkdir()
    out = b""
    for k in range(120):
        base = 300 if k == 70 else k * PER_BATCH        # batch 70 goes back to offset 300
        out += kafkarec.build_batch([_payload(base + j) for j in range(PER_BATCH)],
                                    timestamps=[T0 + base + j for j in range(PER_BATCH)], base_offset=base)
    (folder / "00000000000000000000.log").write_bytes(out)
    seen = {}
    for threads in (1, 3):
        scan = _scan(str(tmp_path), registry, threads, mode=mode)
        batches, error = _read(scan)
        seen[threads] = (_table(batches, scan), error)
    one, error = seen[1]
    if mode == "FAILFAST":
        assert error is not None and "offsets go back" in error
    else:
        assert error is None and one.num_rows >= 119 * PER_BATCH
        assert (mode == "PERMISSIVE") == any("offsets go back" in (e or "")
                                             for e in one.column("_corrupt_record").to_pylist())
    assert seen[3][1] == error and seen[3][0].equals(one)
