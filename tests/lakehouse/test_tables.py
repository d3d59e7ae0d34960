"""Backfills written into Iceberg (pyiceberg, a SQL catalog on sqlite) and Delta (delta-rs) tables
and read back with those libraries: schema and spec, txn actions, kafka-delta-ingest's resume
rule, re-runs and fill-below."""
from __future__ import annotations

import pytest

pa = pytest.importorskip("pyarrow")
pytest.importorskip("pyiceberg")
deltalake = pytest.importorskip("deltalake")

from kafkarec.errors import BackfillError  # noqa: E402
from kafkarec.lakehouse import (DeltaTarget, IcebergTarget, LAYOUTS, backfill, hand_off_points,  # noqa: E402
                                layout, read_positions)
from kafkarec.lakehouse import tables  # noqa: E402
from kafkarec.lakehouse.backfill import SUMMARY_PREFIX  # noqa: E402
from support.logs.lakehouse_logs import write_partition  # noqa: E402

OPS0 = [("plain", 3), ("data", 7, 2), ("data", 8, 1), ("abort", 8), ("commit", 7), ("plain", 2),
        ("data", 9, 2), ("plain", 1)]       # producer 9's transaction (offsets 10, 11) never ends: H = 10


@pytest.fixture
def log_dir(tmp_path):
    root = str(tmp_path / "log")
    models = {0: write_partition(root, "orders", 0, OPS0), 1: write_partition(root, "orders", 1, [("plain", 4)])}
    return root, models


def catalog(tmp_path):
    return {"type": "sql", "uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": f"file://{tmp_path}/warehouse"}


def _positions(target, name):
    pos = read_positions(target, name, topic="orders")
    return sorted(zip(pos.column("partition").to_pylist(), pos.column("offset").to_pylist()))


def _expected(models, points):
    return sorted((p, o) for p, m in models.items() for o in m.read_committed(0, points[("orders", p)].end))


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_iceberg_backfill_reads_back_with_the_layouts_schema_and_spec(tmp_path, log_dir, name):
    root, models = log_dir
    points = hand_off_points(root)
    assert points[("orders", 0)] == (0, 10)
    target = IcebergTarget(catalog(tmp_path), "lake.orders")
    summary = backfill(root, target, layout=name)
    assert {k: (s.start, s.end, s.rows, s.status) for k, s in summary.items()} == {
        ("orders", 0): (0, 10, 7, "written"), ("orders", 1): (0, 4, 4, "written")}
    table = tables.load_iceberg_table(target)
    lay = layout(name)
    # the layout's schema (names, types, nullability) as pyiceberg reads it back
    assert _schema_as_pyiceberg_reads(table.schema().as_arrow()) == lay.schema()
    assert [(f.name, str(f.transform)) for f in table.spec().fields] == [
        (pf.name, pf.transform.upper() if pf.transform != "hour" else "hour") for pf in lay.partition_spec]
    assert _positions(target, name) == _expected(models, points)
    # kafkarec's own summary keys, never the sink's kafka.connect.*
    summary_keys = set(table.current_snapshot().summary.additional_properties)
    assert {SUMMARY_PREFIX + "orders.0", SUMMARY_PREFIX + "orders.1"} <= summary_keys
    assert not any(k.startswith("kafka.connect") for k in summary_keys)


def _schema_as_pyiceberg_reads(schema):
    """An Arrow schema as pyiceberg reads it back, without field ids and with pyarrow's small
    string/binary types (pyiceberg reads large ones)."""
    def plain(t):
        if pa.types.is_large_string(t):
            return pa.string()
        if pa.types.is_large_binary(t):
            return pa.binary()
        if pa.types.is_struct(t):
            return pa.struct([field(f) for f in t])
        if pa.types.is_map(t):
            return pa.map_(field(t.key_field), field(t.item_field))
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            return pa.list_(field(t.value_field))
        return t

    def field(f):
        return pa.field(f.name, plain(f.type), nullable=f.nullable)
    return pa.schema([field(f) for f in schema])


def test_iceberg_rerun_writes_nothing_and_a_different_range_is_refused(tmp_path, log_dir):
    root, models = log_dir
    target = IcebergTarget(catalog(tmp_path), "lake.orders")
    backfill(root, target, layout="iceberg-kafka-connect")
    snapshots = len(tables.load_iceberg_table(target).metadata.snapshots)
    again = backfill(root, target, layout="iceberg-kafka-connect")
    assert {s.status for s in again.values()} == {"already written"}
    assert {s.rows for s in again.values()} == {0}
    assert len(tables.load_iceberg_table(target).metadata.snapshots) == snapshots
    # ending at 5: the LSO there is 3 (producer 7 open from offset 3)
    with pytest.raises(BackfillError, match=r"\[0, 10\) is already in the table; \[0, 3\) overlaps it"):
        backfill(root, target, layout="iceberg-kafka-connect", end_offsets={"orders": {0: 5, 1: 4}})
    assert _positions(target, "iceberg-kafka-connect") == _expected(models, hand_off_points(root))


def test_delta_backfill_commits_data_and_txns_in_one_version(tmp_path, log_dir):
    root, models = log_dir
    target = DeltaTarget(str(tmp_path / "delta"))
    points = hand_off_points(root)
    backfill(root, target, layout="kafka-delta-ingest", app_id="ingest")
    table = deltalake.DeltaTable(target.path)
    assert table.version() == 0                                  # one commit: data and txns together
    # kafka-delta-ingest's rule: appId "<app_id>-<partition>", version = the last offset written (H - 1)
    assert table.transaction_version("ingest-0") == 9 and table.transaction_version("ingest-1") == 3
    log = [a for a in table.history() if a.get("operation")]
    assert len(log) == 1
    assert _positions(target, "kafka-delta-ingest") == _expected(models, points)
    # a re-run finds the txn versions: a no-op, no new version
    again = backfill(root, target, layout="kafka-delta-ingest", app_id="ingest")
    assert {s.status for s in again.values()} == {"already written"}
    assert deltalake.DeltaTable(target.path).version() == 0


def test_delta_resume_rule_reads_the_rest_with_no_gap_or_duplicate(tmp_path):
    """A reader resuming as kafka-delta-ingest does (seek to txn version + 1, read_committed)
    after the backfill, once the open transaction ends, reads every record once."""
    root = str(tmp_path / "log")
    ops = OPS0[:-1]                                   # producer 9 open at the hand-off
    write_partition(root, "orders", 0, ops)
    target = DeltaTarget(str(tmp_path / "delta"))
    backfill(root, target, layout="kafka-delta-ingest", app_id="ingest")
    version = deltalake.DeltaTable(target.path).transaction_version("ingest-0")
    # the log goes on: producer 9 commits, more records come
    later = str(tmp_path / "later")
    m = write_partition(later, "orders", 0, ops + [("commit", 9), ("plain", 3)])
    resumed = [o for o in m.read_committed(version + 1, m.end)]
    assert sorted(o for _, o in _positions(target, "kafka-delta-ingest")) + resumed == m.read_committed(0, m.end)


def test_delta_txn_below_h_is_refused(tmp_path, log_dir):
    root, _ = log_dir
    target = DeltaTarget(str(tmp_path / "delta"))
    backfill(root, target, layout="kafka-delta-ingest", app_id="ingest", end_offsets={"orders": {0: 3, 1: 4}})
    with pytest.raises(BackfillError, match="ingest-0 is at version 2"):
        backfill(root, target, layout="kafka-delta-ingest", app_id="ingest")


@pytest.mark.parametrize("kind", ["delta", "iceberg"])
def test_fill_below_writes_under_the_first_row_and_reports_empty_partitions(tmp_path, log_dir, kind):
    root, models = log_dir
    target = (DeltaTarget(str(tmp_path / "delta")) if kind == "delta"
              else IcebergTarget(catalog(tmp_path), "lake.orders"))
    name = "redpanda"
    # the live writer's rows: partition 0 from offset 5 on (5 is aborted: its first row is 8);
    # partition 1 none yet
    live = backfill_rows(root, name, start=5)
    if kind == "delta":
        deltalake.write_deltalake(target.path, live)
    else:
        tables.create_iceberg_table(target, layout(name).schema(), layout(name)).append(live)
    summary = backfill(root, target, layout=name, fill_below=True, app_id="fill", topics="orders")
    assert summary[("orders", 0)][2:] == (0, 8, 5, "written")
    assert summary[("orders", 1)].status == "no rows in table"
    assert _positions(target, name) == [(0, o) for o in models[0].read_committed(0, 10)]


def backfill_rows(root, name, start):
    from kafkarec.lakehouse import backfill_batches
    batches = [rb for rb in backfill_batches(root, name, end_offsets={"orders": {0: 11, 1: 0}})]
    table = pa.Table.from_batches(batches, schema=layout(name).schema())
    offsets = table.column("redpanda").combine_chunks().field("offset")
    return table.filter(pa.compute.greater_equal(offsets, start))


def test_typed_values_become_the_rows_columns(tmp_path):
    """Values typed through kafkarec's registry wing (here bare JSON Schema payloads) lay their
    fields out as the table's columns; a value that does not decode stops the backfill."""
    import json
    from support.logs.logdir import PartitionWriter, v2_batch
    root = str(tmp_path / "log")
    w = PartitionWriter(root, "people", 0)
    w.append(v2_batch([(1_700_000_000_000 + i, b"k", json.dumps({"id": i, "name": f"n{i}"}).encode(), [])
                       for i in range(3)]))
    w.close()
    schema = json.dumps({"type": "object", "properties": {"id": {"type": "integer"}, "name": {"type": "string"}}})
    typed = {"registry": None, "value_format": "json", "value_reader_schema": schema}
    target = IcebergTarget(catalog(tmp_path), "lake.people")
    backfill(root, target, layout="iceberg-kafka-connect", typed=typed)
    rows = tables.load_iceberg_table(target).scan().to_arrow().sort_by("_kafka_metadata_offset")
    assert rows.column("id").to_pylist() == [0, 1, 2] and rows.column("name").to_pylist() == ["n0", "n1", "n2"]
    w = PartitionWriter(str(tmp_path / "bad"), "people", 0)
    w.append(v2_batch([(1_700_000_000_000, b"k", b"not json", [])]))
    w.close()
    with pytest.raises(BackfillError, match="offset 0 does not decode"):
        backfill(str(tmp_path / "bad"), DeltaTarget(str(tmp_path / "delta")), layout="automq", typed=typed,
                 app_id="a")
