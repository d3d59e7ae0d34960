"""The source's order a truncate is applied in across partitions (kafkarec.cdc.event_order,
docs/tables.md): each connector's position, else ``ts_ms``, else undecided (the row stays)."""
import json
import logging
import os

import pytest

import kafkarec
import kafkarec.cdc
import kafkarec.table
from kafkarec.cdc import event_order


def ev(op, source, ts_ms=None, row=None):
    return {"op": op, "before": None, "after": row, "source": source, "ts_ms": ts_ms}


def pg(op, i, lsn):
    """A PostgreSQL change event's key and value (a truncate has no key and no row)."""
    return (None if op == "t" else json.dumps({"id": i}).encode(),
            json.dumps(ev(op, {"connector": "postgresql", "lsn": lsn, "ts_ms": 5},
                          row=None if op == "t" else {"id": i})).encode())


def latest_of_partitions(partitions, decode):
    """``topic_latest_batches`` over partitions of (key, value) pairs, values typed by ``decode``."""
    import pyarrow as pa
    schema = pa.schema([("key", pa.binary()), ("value", pa.binary()), ("offset", pa.int64())])
    batches = [pa.RecordBatch.from_pydict({"key": [k for k, _ in p], "value": [v for _, v in p],
                                           "offset": list(range(len(p)))}, schema) for p in partitions]
    return kafkarec.table.topic_latest_batches([lambda b=b: iter([b]) for b in batches],
                                               cdc=kafkarec.cdc.Debezium(decode))


def maria(file, pos, row=0, ts=1_700_000_000_000, server=1):
    return {"connector": "mariadb", "server_id": server, "file": file, "pos": pos, "row": row, "ts_ms": ts}


@pytest.mark.parametrize("earlier, later", [
    (maria("binlog.000001", 900, 3), maria("binlog.000001", 900, 4)),
    (maria("binlog.000001", 900), maria("binlog.000001", 901)),
    (maria("binlog.999999", 900), maria("binlog.1000000", 4)),          # past its zero padding
    ({"connector": "postgresql", "lsn": 99, "ts_ms": 5}, {"connector": "postgresql", "lsn": 100, "ts_ms": 5}),
    ({"connector": "oracle", "scn": "999", "ts_ms": 5}, {"connector": "oracle", "scn": "1000", "ts_ms": 5}),
    ({"connector": "sqlserver", "commit_lsn": "0000002b:00000b68:0003", "change_lsn": "0000002b:00000b60:0002",
      "ts_ms": 5},
     {"connector": "sqlserver", "commit_lsn": "0000002b:00000b70:0003", "change_lsn": "0000002b:00000b68:0002",
      "ts_ms": 5}),
    ({"connector": "mongodb", "ts_ms": 5000, "ord": 2}, {"connector": "mongodb", "ts_ms": 5000, "ord": 3}),
    # no common position: the database's time
    (maria("binlog.000009", 900, server=1, ts=1000), maria("binlog.000001", 4, server=2, ts=2000)),
    ({"connector": "postgresql", "ts_ms": 1000}, {"connector": "postgresql", "lsn": 1, "ts_ms": 2000}),
    ({"connector": "spanner", "ts_ms": 1000}, {"connector": "spanner", "ts_ms": 1001}),
])
def test_positions_order_events(earlier, later):
    a, b = event_order(ev("c", earlier)), event_order(ev("t", later))
    assert a.precedes(b) is True and b.precedes(a) is False


@pytest.mark.parametrize("one, other", [
    (maria("binlog.000001", 9, server=1, ts=1000), maria("binlog.000001", 4, server=2, ts=1000)),
    ({"connector": "spanner", "ts_ms": 1000}, {"connector": "spanner", "ts_ms": 1000}),
    ({"connector": "postgresql"}, {"connector": "postgresql", "lsn": 5}),
])
def test_what_the_log_cannot_order_is_undecided(one, other):
    assert event_order(ev("c", one)).precedes(event_order(ev("t", other))) is None


def test_the_envelopes_ts_ms_stands_in_for_the_sources():
    assert event_order(ev("c", {"connector": "x"}, ts_ms=7)).ts_ms == 7
    assert event_order(ev("c", {"connector": "x", "ts_ms": 3}, ts_ms=7)).ts_ms == 3


def _topic(root, partitions):
    """A Debezium topic: ``partitions`` is a list of [(key, event or None)] per partition."""
    for p, records in enumerate(partitions):
        os.makedirs(os.path.join(root, f"shop.orders-{p}"))
        values = [None if e is None else json.dumps(e).encode() for _, e in records]
        with open(os.path.join(root, f"shop.orders-{p}", "00000000000000000000.log"), "wb") as fh:
            fh.write(kafkarec.build_batch(values, [k for k, _ in records]))


def test_a_truncate_applies_to_the_other_partitions_in_the_sources_order(tmp_path, caplog):
    """Partition 0 holds the truncate; partition 1 a row before it (removed), a row after it
    (kept) and a row whose order against it cannot be decided (kept, with a warning); on one
    partition alone nothing changes."""
    def row(i, source):
        return json.dumps({"id": i}).encode(), ev("c", source, row={"id": i})
    _topic(str(tmp_path), [
        [row(1, maria("binlog.000002", 100)), (None, ev("t", maria("binlog.000002", 200))),
         row(2, maria("binlog.000002", 300))],
        [row(3, maria("binlog.000002", 150)), row(4, maria("binlog.000003", 4)),
         row(5, {"connector": "mariadb", "ts_ms": 1_700_000_000_000})],
    ])
    with caplog.at_level(logging.WARNING, logger="kafkarec"):
        state = kafkarec.table.latest(str(tmp_path), cdc="debezium")
    assert [json.loads(a)["id"] for a in state.table.column("after").to_pylist()] == [2, 4, 5]
    assert "1 rows kept" in caplog.text
    assert state.stats.passes == 2 * 2 + 2           # each partition: its truncate, then the state's two
    alone = kafkarec.table.latest(os.path.join(str(tmp_path), "shop.orders-1"), cdc="debezium")
    assert [json.loads(a)["id"] for a in alone.table.column("after").to_pylist()] == [3, 4, 5]


def test_typed_envelopes_are_ordered_by_their_source_struct():
    """Under a registry decoder the envelopes are structs (Debezium's Avro): the truncate's
    and the rows' positions come from the decoded ``source`` struct."""
    import pyarrow as pa

    def decode(values, headers=None):        # stands for a registry column's decode
        docs = [None if v is None else json.loads(v) for v in values.to_pylist()]
        return pa.array(docs, pa.struct([("op", pa.string()), ("after", pa.struct([("id", pa.int64())])),
                                         ("source", pa.struct([("connector", pa.string()),
                                                               ("lsn", pa.int64()), ("ts_ms", pa.int64())]))])), \
            None, None

    partitions = [[pg("c", 1, 10), pg("t", 0, 20), pg("c", 2, 30)], [pg("c", 3, 15), pg("c", 4, 25)]]
    got = [(i, json.loads(k)["id"]) for i, b in latest_of_partitions(partitions, decode)
        for k in b.column("key").to_pylist()]
    assert got == [(0, 2), (1, 4)]


ODD_SOURCES = [
    ({"connector": ["mysql"]}, "source.connector is ['mysql'], not text"),
    ({"connector": "postgresql", "lsn": "²"}, "source.lsn is '²', not a long"),          # str.isdigit: True
    ({"connector": "postgresql", "lsn": 1 << 63}, "not a long"),
    ({"connector": "mysql", "file": "mysql-bin.①", "pos": 4}, "source.file is 'mysql-bin.①', not a binlog file"),
    ({"connector": "mariadb", "file": "mysql-bin.000001", "pos": "4"}, "source.pos is '4', not a long"),
    ({"connector": "oracle", "scn": "1" * 5000}, "not an SCN (decimal digits, at most 20)"),  # int's digit limit
    ({"connector": "oracle", "scn": "١٢"}, "not an SCN"),                                     # Arabic-Indic digits
    ({"connector": "sqlserver", "commit_lsn": "2b:b68:3"}, "not an LSN"),
    ({"connector": "mongodb", "ts_ms": 5.0, "ord": 1}, "source.ts_ms is 5.0, not a long"),
    ({"connector": "mongodb", "ts_ms": 5, "ord": True}, "source.ord is True, not an int"),
    ("postgresql", "source is not an object"),
]


@pytest.mark.parametrize("source, reason", ODD_SOURCES)
def test_a_source_block_debezium_does_not_write_has_no_order_and_a_reason(source, reason):
    """Each field is read as the type Debezium writes it (a long, an int, text, ASCII digits of
    bounded length): anything else is the event's problem, never a raw exception."""
    order = event_order(ev("t", source, ts_ms=7))
    assert order.position is None and order.ts_ms is None and reason in order.problem
    doc, why = kafkarec.cdc.envelope(json.dumps(ev("c", source)).encode())
    assert doc is None and why.startswith("not a Debezium envelope: ") and reason in why


def test_typed_source_fields_still_order_events():
    """Debezium's own types keep their order (Oracle's SCN text past a long, SQL Server's NULL
    change LSN first)."""
    big, bigger = {"connector": "oracle", "scn": str(1 << 63)}, {"connector": "oracle", "scn": str((1 << 63) + 1)}
    assert event_order(ev("c", big)).precedes(event_order(ev("t", bigger))) is True
    null = {"connector": "sqlserver", "commit_lsn": "0000002b:00000b68:0003", "change_lsn": "NULL"}
    real = {"connector": "sqlserver", "commit_lsn": "0000002b:00000b68:0003", "change_lsn": "0000002b:00000b60:0002"}
    assert event_order(ev("c", null)).precedes(event_order(ev("t", real))) is True
    assert event_order(ev("c", {"connector": "x"}, ts_ms=1 << 63)).problem == "ts_ms is 9223372036854775808, not a long"


def test_odd_events_do_not_fail_the_keyed_state_and_keep_their_reason(tmp_path):
    """A truncate in partition 0, odd events in partition 1 (and an odd truncate in partition 0,
    which is no truncate): the state is read, each odd event is a row that is no envelope (kept,
    its bytes and its cdcError), the others ordered as before."""
    def row(i, source):
        return json.dumps({"id": i}).encode(), ev("c", source, row={"id": i})
    odd = [row(10 + i, source) for i, (source, _) in enumerate(ODD_SOURCES)]
    _topic(str(tmp_path), [
        [(None, ev("t", maria("binlog.000002", 200))), (None, ev("t", {"connector": "oracle", "scn": "²"}))],
        [row(3, maria("binlog.000002", 150)), row(4, maria("binlog.000003", 4))] + odd,
    ])
    state = kafkarec.table.latest(str(tmp_path), cdc="debezium").table
    errors = state.column("cdcError").to_pylist()
    keys = [None if k is None else json.loads(k)["id"] for k in state.column("key").to_pylist()]
    assert keys == [4] + [10 + i for i in range(len(ODD_SOURCES))]      # 3: before the truncate
    assert errors[0] is None
    for (source, reason), error, value, (_, event) in zip(ODD_SOURCES, errors[1:], state.column("value")[1:],
                                                          odd):
        assert reason in error
        assert value.as_py() == json.dumps(event).encode()          # kept with its bytes
    assert state.column("op").to_pylist()[1:] == [None] * len(ODD_SOURCES)


def test_typed_envelopes_with_an_odd_source_are_kept_with_their_reason():
    """A registry-typed envelope whose source field has a type Debezium does not write (an
    lsn as text) is no envelope: it stays, and typed_changes gives its reason."""
    import pyarrow as pa
    source_type = pa.struct([("connector", pa.string()), ("lsn", pa.string()), ("ts_ms", pa.int64())])
    envelope_type = pa.struct([("op", pa.string()), ("after", pa.struct([("id", pa.int64())])),
                               ("source", source_type)])

    def decode(values, headers=None):
        docs = [None if v is None else json.loads(v) for v in values.to_pylist()]
        return pa.array(docs, envelope_type), None, None

    partitions = [[pg("t", 0, None)], [pg("c", 3, "²"), pg("c", 4, None)]]
    got = [(i, json.loads(k)["id"]) for i, b in latest_of_partitions(partitions, decode)
        for k in b.column("key").to_pylist() if k is not None]
    assert (1, 3) in got                       # kept: its order against the truncate cannot be read
    values = decode(pa.array([v for _, v in partitions[1]], pa.binary()))[0]
    cols = kafkarec.cdc.typed_changes(values)
    assert cols["cdcError"].to_pylist() == ["not a Debezium envelope: source.lsn is '²', not a long", None]
    assert cols["op"].to_pylist() == [None, "c"]
