"""What Debezium wrote (tests/support/servers/debezium.py) holds every kind of change the database made."""
import glob
import json
import os

import pytest

import kafkarec

pytestmark = [pytest.mark.slow]


def log_rows(log_dir, topic, partition=0):
    out = []
    for path in sorted(glob.glob(os.path.join(log_dir, f"{topic}-{partition}", "*.log"))):
        with open(path, "rb") as fh:
            out += kafkarec.to_arrow(fh.read()).select(["key", "value", "offset"]).to_pylist()
    return out


def test_the_capture_holds_every_kind_of_change(debezium_capture):
    log_dir, final = debezium_capture
    ops = {}
    for table in ("customers", "orders"):
        for prefix in ("plain", "dbz"):
            for r in log_rows(log_dir, f"{prefix}.public.{table}"):
                if r["value"] is None:
                    ops.setdefault((prefix, table), set()).add("tombstone")
                    continue
                v = json.loads(r["value"])
                if prefix == "dbz":
                    assert set(v) == {"schema", "payload"}
                    v = v["payload"]
                ops.setdefault((prefix, table), set()).add(v["op"])
    print(ops)
    assert ops[("plain", "customers")] == {"r", "c", "u", "d", "tombstone"}
    assert ops[("plain", "orders")] >= {"r", "c", "u", "t", "d"}
    assert ops[("dbz", "customers")] == ops[("plain", "customers")]
    assert [r["id"] for r in final["customers"]] == [1, 2, 4, 5, 40]
    assert [r["id"] for r in final["orders"]] == [11]


@pytest.mark.parametrize("prefix", ["plain", "dbz"])
@pytest.mark.parametrize("table", ["customers", "orders"])
def test_the_mirrored_table_is_the_databases_select(debezium_capture, prefix, table):
    """kafkarec.table.latest(cdc="debezium"): each live key's ``after`` image, in primary-key
    order, is the database's final SELECT, with and without the JSON converter's schemas."""
    import kafkarec.table
    log_dir, final = debezium_capture
    state = kafkarec.table.latest(log_dir, topics=[f"{prefix}.public.{table}"], cdc="debezium").table
    assert state.column("cdcError").null_count == state.num_rows
    rows = sorted((json.loads(a) for a in state.column("after").to_pylist()), key=lambda r: r["id"])
    assert rows == final[table]
    assert set(state.column("op").to_pylist()) <= {"c", "u", "r"}


@pytest.mark.parametrize("table", ["customers", "orders"])
def test_the_mirrored_table_over_three_partitions_is_the_databases_select(debezium_capture, table):
    """The ``parted.`` topics (3 partitions, keyed events by murmur2 of the key, the keyless
    truncate on one): the truncate of orders removes the rows written before it (by LSN) in
    the other partitions too."""
    import kafkarec.table
    log_dir, final = debezium_capture
    topic = f"parted.public.{table}"
    events = {p: [json.loads(r["value"]) for r in log_rows(log_dir, topic, p) if r["value"] is not None]
              for p in range(3)}
    if table == "orders":
        (p, truncate), = [(p, e) for p, es in events.items() for e in es if e["op"] == "t"]
        assert any(e["source"]["lsn"] < truncate["source"]["lsn"]
                   for q, es in events.items() if q != p for e in es)
    state = kafkarec.table.latest(log_dir, topics=[topic], cdc="debezium").table
    assert sorted((json.loads(a) for a in state.column("after").to_pylist()), key=lambda r: r["id"]) == final[table]


def test_changes_are_one_row_per_event(debezium_capture):
    from kafkarec import cdc
    log_dir, _ = debezium_capture
    path = os.path.join(log_dir, "dbz.public.customers-0", "00000000000000000000.log")
    with open(path, "rb") as fh:
        rows = cdc.changes(kafkarec.to_arrow(fh.read())).to_pylist()
    # the primary-key change (3 -> 40): a delete of the old key, its tombstone, an insert of the new
    moved = [(r["offset"], r["op"]) for r in rows if r["op"] in ("d", "c")
             and json.loads(r["before"] or r["after"])["id"] in (3, 40)]
    assert [op for _, op in moved] == ["d", "c"]
    deleted = [r for r in rows if r["op"] == "d"]
    assert deleted and all(r["after"] is None and json.loads(r["before"])["id"] in (3, 4, 6) for r in deleted)
    tombstones = [r for r in rows if r["value"] is None]
    assert len(tombstones) == len(deleted) and all(r["op"] is None and r["cdcError"] is None for r in tombstones)
    assert all(r["cdcError"] is None and isinstance(r["ts_ms"], int) for r in rows if r["value"] is not None)
    assert {json.loads(r["source"])["connector"] for r in rows if r["source"]} == {"postgresql"}


def test_command_line_prints_the_mirrored_table(debezium_capture):
    import subprocess
    import sys
    log_dir, final = debezium_capture
    proc = subprocess.run([sys.executable, "-m", "kafkarec", "table", log_dir, "--topics", "dbz.public.customers",
                           "--cdc", "debezium"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert sorted((r["after"] for r in rows), key=lambda r: r["id"]) == final["customers"]
    assert all(r["op"] in ("c", "u", "r") and r["source"]["table"] == "customers" for r in rows)


# --- Debezium's Avro through a Schema Registry (the "avro." topics and the capture's _schemas) ---

def _after_rows(table):
    return sorted(table.column("after").to_pylist(), key=lambda r: r["id"])


def test_avro_events_are_registry_framed_and_registered(debezium_capture):
    from kafkarec import registry
    log_dir, _ = debezium_capture
    reg = registry.load(log_dir)
    assert {"avro.public.customers-key", "avro.public.customers-value",
            "avro.public.orders-key", "avro.public.orders-value"} <= set(reg.subjects())
    rows = log_rows(log_dir, "avro.public.customers")
    assert rows and all(r["value"] is None or r["value"][:1] == b"\0" for r in rows)


@pytest.mark.parametrize("table", ["customers", "orders"])
def test_the_mirrored_table_from_avro_is_the_databases_select(debezium_capture, table):
    """latest(cdc="debezium", decode=registry): op read from each decoded envelope; the live
    keys' typed ``after`` images are the database's final SELECT (the truncate of orders and
    the primary-key change applied)."""
    import kafkarec.table
    log_dir, final = debezium_capture
    state = kafkarec.table.latest(log_dir, topics=[f"avro.public.{table}"], cdc="debezium",
                                  decode={"registry": log_dir, "key": True}).table
    assert state.column("_corrupt_record").null_count == state.num_rows
    assert state.column("cdcError").null_count == state.num_rows
    assert _after_rows(state) == final[table]
    assert set(state.column("op").to_pylist()) <= {"c", "u", "r"}
    assert [k["id"] for k in state.column("key").to_pylist()] == [a["id"] for a in state.column("after").to_pylist()]


@pytest.mark.parametrize("table", ["customers", "orders"])
def test_avro_change_rows_are_the_json_converters(debezium_capture, table):
    """Each Avro change event decodes to the JSON converter's event of the same change: op,
    before, after, ts_ms, and source's fields."""
    from kafkarec import cdc, registry
    log_dir, _ = debezium_capture

    def read(topic):
        (path,) = glob.glob(os.path.join(log_dir, topic + "-0", "*.log"))
        with open(path, "rb") as fh:
            return kafkarec.to_arrow(fh.read())
    typed = registry.decode_table(read(f"avro.public.{table}"), registry.load(log_dir),
                                  topic=f"avro.public.{table}")
    assert typed.column("_corrupt_record").null_count == typed.num_rows
    avro = cdc.typed_changes(typed.column("value"), typed.column("_corrupt_record"))
    plain = cdc.changes(read(f"plain.public.{table}"))
    assert avro["op"].to_pylist() == plain.column("op").to_pylist()
    for image in ("before", "after"):
        assert avro[image].to_pylist() == [None if v is None else json.loads(v)
                                           for v in plain.column(image).to_pylist()]
    assert avro["ts_ms"].to_pylist() == plain.column("ts_ms").to_pylist()
    for a, p in zip(avro["source"].to_pylist(), plain.column("source").to_pylist()):
        assert (a is None) == (p is None)
        if a is not None:
            p = json.loads(p)
            assert {k: a[k] for k in ("connector", "db", "schema", "table", "lsn", "txId")} == \
                   {k: p[k] for k in ("connector", "db", "schema", "table", "lsn", "txId")}
    assert avro["cdcError"].null_count == len(avro["cdcError"])


def test_command_line_prints_the_mirrored_table_from_avro(debezium_capture):
    import subprocess
    import sys
    log_dir, final = debezium_capture
    proc = subprocess.run([sys.executable, "-m", "kafkarec", "table", log_dir, "--topics", "avro.public.customers",
                           "--cdc", "debezium", "--registry", log_dir, "--value-decoder", "registry",
                           "--key-decoder", "registry"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert sorted((r["after"] for r in rows), key=lambda r: r["id"]) == final["customers"]
    assert [r["key"] for r in rows] == [{"id": r["after"]["id"]} for r in rows]
    assert all(r["op"] in ("c", "u", "r") and r["source"]["table"] == "customers" for r in rows)


def test_typed_values_that_are_no_envelopes_are_refused_before_reading(tmp_path):
    """cdc with a typed value whose schema has no op/before/after: a clear error, no rows."""
    import kafkarec.table
    from support.registry import registry_world as world
    world.build(str(tmp_path))
    with pytest.raises(ValueError, match="not a Debezium envelope"):
        kafkarec.table.latest(str(tmp_path), topics=["orders"], cdc="debezium",
                              decode={"registry": str(tmp_path)})
