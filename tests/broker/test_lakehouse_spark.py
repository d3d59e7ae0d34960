"""Backfills from Spark into Iceberg (issue 41), on the Spark the lakehouse runtimes load on, as
users run it (tests/support/spark/lakehouse_spark.py): one ``spark-submit --py-files <kafkarec wheel>``
application from a bare Python at LAKEHOUSE_PYSPARK_VERSION with Iceberg's Spark runtime in
``--jars``, and a Spark Connect client of a Connect server of that Spark, both writing tables of
a Hadoop catalog from the session broker's topics (``txn``: 3 partitions, transactions committed
and aborted; ``compacted``: the log cleaner ran), read from its stopped copy.

The oracle is the broker's own ``read_committed`` consumer (librdkafka): each table holds exactly
its records of [start, H) per partition, read back here with pyiceberg, and the table's schema and
partition spec are the layout's.  The same application checks that kafkarec's plain
``format("kafkarec")`` read works on that Spark.
"""
from __future__ import annotations

import base64
import json
import os
import sys
import time

import pytest

from support.brokers import produce
from support.spark import spark_helpers as H
from support.spark import lakehouse_spark as L
from support.brokers import restore_history as RH
from support.spark.spark_app import RESTORED_TOPICS, restore_options
from support.versions import LAKEHOUSE_PYSPARK

JOB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jobs", "lakehouse_spark_job.py")
TOPICS = ["txn", "compacted"]
#: (table, layout, topics) in order: through spark-submit (the second write appends to the table
#: the first created), then through Spark Connect
SUBMIT_WRITES = [("lake.db.connect_sink", "iceberg-kafka-connect", ["txn"]),
                 ("lake.db.connect_sink", "iceberg-kafka-connect", ["compacted"]),
                 ("lake.db.redpanda_txn", "redpanda", ["txn"])]
CONNECT_WRITES = [("lake.db.automq_txn", "automq", ["txn"])]
#: (table, layout, topics) of each table written
TABLES = [("lake.db.connect_sink", "iceberg-kafka-connect", TOPICS), SUBMIT_WRITES[2], CONNECT_WRITES[0]]


@pytest.fixture(scope="module")
def lakehouse(kafka_broker, broker_data, stopped_log_dir, restore_history, restore_target_broker,
              tmp_path_factory):
    """The application's and the Connect client's results, the warehouse, the hand-off points
    and the consumer's committed records of TOPICS.  The Connect client also restores the restore
    tests' history into the second broker (``spark_udfs.restore`` over Connect: ``<topic>-connect``,
    restore id ``connect``; its folder is ``restore``)."""
    why = H.spark_available()
    if why:
        pytest.skip(why)
    from kafkarec.lakehouse import hand_off_points
    jars = L.runtime_jars()
    bare = H.bare_python(sys.executable, lakehouse=True)
    wheel = H.wheelhouse(sys.executable)
    client = H.connect_client(sys.executable, wheel, lakehouse=True, extras="restore")
    work = tmp_path_factory.mktemp("lakehouse-spark")
    warehouse = str(work / "warehouse")
    points = hand_off_points(stopped_log_dir, topics=TOPICS)
    # a backfill of txn-0 ending one offset below the recorded one: refused
    (start, end) = points[("txn", 0)]
    plans = {}
    restore_folder = work / "restore"
    restore_folder.mkdir()
    for name, writes in (("submit", SUBMIT_WRITES), ("connect", CONNECT_WRITES)):
        plans[name] = str(work / f"{name}.json")
        with open(plans[name], "w") as fh:
            json.dump({"log_dir": stopped_log_dir, "wheelhouse": os.path.dirname(wheel),
                       "out": str(work / f"{name}-result.json"),
                       "plain_read": TOPICS if name == "submit" else None,
                       "writes": [{"table": t, "layout": lay, "topics": ts} for t, lay, ts in writes],
                       "refused": {"table": SUBMIT_WRITES[0][0], "layout": SUBMIT_WRITES[0][1],
                                   "topics": ["txn"], "end_offsets": {"txn": {"0": end - 1}}}
                       if name == "submit" else None,
                       "restore": {"source": restore_history.log_dir, "target": restore_target_broker.bootstrap,
                                   "options": restore_options(restore_history, "-connect", "connect"),
                                   "folder": str(restore_folder)} if name == "connect" else None}, fh)
    args = L.spark_args(jars, warehouse)
    server = L.connect_server(bare, args, str(work / "connect-server"))
    # the application and the Connect server start side by side; the client runs after both
    started = time.monotonic()
    app = L.submit(bare, wheel, args, JOB, plans["submit"], str(work), timeout=600)
    try:
        server.start()
        client_proc = L.connect_client(client, bare, JOB, plans["connect"], server.url, str(work),
                                       timeout=600)
        L.finish(client_proc)
        connect_seconds = time.monotonic() - started
    finally:
        server.stop()
        L.finish(app)
    sys.stderr.write(f"lakehouse Spark: Connect server and client {connect_seconds:.0f} s, "
                     f"spark-submit application {time.monotonic() - started:.0f} s (side by side), "
                     f"logs in {work}\n")
    results = {}
    for name in plans:
        with open(work / f"{name}-result.json") as fh:
            results[name] = json.load(fh)
    committed = produce.consume(kafka_broker.bootstrap, TOPICS, "read_committed")
    return {"results": results, "warehouse": warehouse, "points": points, "committed": committed,
            "restore_folder": restore_folder}


def _below_hand_off(lakehouse, topics):
    points = lakehouse["points"]
    return [r for r in lakehouse["committed"]
            if r[0] in topics and points[(r[0], r[1])].start <= r[2] < points[(r[0], r[1])].end]


def _static_table(warehouse, identifier):
    from pyiceberg.table import StaticTable
    _, namespace, name = identifier.split(".")
    metadata = os.path.join(warehouse, namespace, name, "metadata")
    with open(os.path.join(metadata, "version-hint.text")) as fh:
        version = fh.read().strip()
    return StaticTable.from_metadata(os.path.join(metadata, f"v{version}.metadata.json"))


def _iceberg_shape(t):
    """A pyiceberg type as comparable nested tuples: (type, required) per field."""
    from pyiceberg import types as IT
    if isinstance(t, (IT.StructType,)):
        return ("struct", tuple((f.name, _iceberg_shape(f.field_type), f.required) for f in t.fields))
    if isinstance(t, IT.ListType):
        return ("list", _iceberg_shape(t.element_type), t.element_required)
    if isinstance(t, IT.MapType):
        return ("map", _iceberg_shape(t.key_type), _iceberg_shape(t.value_type), t.value_required)
    return str(t)


_ICEBERG_OF_ARROW = {"int32": "int", "int64": "long", "string": "string", "binary": "binary",
                     "timestamp[us, tz=UTC]": "timestamptz"}


def _layout_shape(t):
    """An Arrow type of a layout as :func:`_iceberg_shape` gives its Iceberg type."""
    import pyarrow as pa
    if pa.types.is_struct(t):
        return ("struct", tuple((f.name, _layout_shape(f.type), not f.nullable) for f in t))
    if pa.types.is_map(t):
        return ("map", _layout_shape(t.key_type), _layout_shape(t.item_type), not t.item_field.nullable)
    if pa.types.is_list(t):
        return ("list", _layout_shape(t.value_type), not t.value_field.nullable)
    return _ICEBERG_OF_ARROW[str(t)]


def _b64(value):
    return None if value is None else base64.b64encode(value).decode()


@pytest.mark.parametrize("table,layout_name,topics", TABLES)
def test_table_holds_the_committed_records_below_the_hand_off_in_the_layout(lakehouse, table, layout_name,
                                                                              topics):
    from kafkarec.lakehouse import layout
    import pyarrow as pa
    import pyarrow.compute as pc
    lay = layout(layout_name)
    iceberg = _static_table(lakehouse["warehouse"], table)
    schema = iceberg.schema()
    assert _iceberg_shape(schema.as_struct()) == _layout_shape(pa.struct(list(lay.schema()))), table
    spec = [(schema.find_column_name(f.source_id), str(f.transform), f.name) for f in iceberg.spec().fields]
    assert spec == [(".".join(f.source), f.transform, f.name) for f in lay.partition_spec]
    rows = iceberg.scan().to_arrow()
    from kafkarec.lakehouse.layouts import column_at
    stamps = column_at(rows, lay.timestamp)
    if pa.types.is_timestamp(stamps.type):         # microseconds in the layout: as the consumer's ms
        stamps = pc.divide(stamps.cast(pa.int64()), 1000)
    got = sorted(zip(
        column_at(rows, lay.topic).to_pylist() if lay.topic else [topics[0]] * rows.num_rows,
        column_at(rows, lay.partition).to_pylist(), column_at(rows, lay.offset).to_pylist(),
        rows.column(lay.raw_value).to_pylist(), stamps.to_pylist()))
    want = sorted((t, p, o, v, ts) for t, p, o, _k, v, _h, _tt, ts in _below_hand_off(lakehouse, topics)
                  if v is not None or not lay.skips_tombstones)
    assert len(got) == len(want) and got == want, (table, len(got), len(want))
    # the compacted topic's tombstones are left out where the writer writes none
    if "compacted" in topics:
        assert any(r[4] is None for r in _below_hand_off(lakehouse, ["compacted"]))


def test_summaries_record_the_hand_off_ranges_and_a_re_run_writes_nothing(lakehouse):
    points = lakehouse["points"]
    results = lakehouse["results"]
    writes = results["submit"]["writes"] + results["connect"]["writes"]
    from kafkarec.lakehouse import layout
    for (table, layout_name, topics), done in zip(SUBMIT_WRITES + CONNECT_WRITES, writes):
        assert done["table"] == table
        skips_tombstones = layout(layout_name).skips_tombstones
        counts = {}
        for r in _below_hand_off(lakehouse, topics):
            if r[4] is not None or not skips_tombstones:
                counts[(r[0], r[1])] = counts.get((r[0], r[1]), 0) + 1
        want = {(t, p): [points[(t, p)].start, points[(t, p)].end] for (t, p) in points if t in topics}
        first = {(t, p): [s, e] for t, p, s, e, _, _ in done["first"]}
        assert first == want, table
        assert {(t, p): n for t, p, _, _, n, _ in done["first"]} == {k: counts.get(k, 0) for k in want}
        assert {st for *_, st in done["first"]} == {"written"}
        assert {(t, p): (n, st) for t, p, _, _, n, st in done["again"]} == {
            k: (0, "already written") for k in want}


def test_a_different_range_over_a_recorded_one_is_refused(lakehouse):
    kind, text = lakehouse["results"]["submit"]["refused"]
    assert kind == "BackfillError"
    assert "txn-0" in text and "overlaps" in text, text


def test_the_plain_read_works_on_the_lakehouse_spark(lakehouse):
    result = lakehouse["results"]["submit"]
    assert result["spark"] == LAKEHOUSE_PYSPARK
    got = sorted(tuple(r) for r in result["plain_read"])
    want = sorted((t, p, o, _b64(k), _b64(v), ts) for t, p, o, k, v, _h, _tt, ts in lakehouse["committed"])
    assert got == want


# A stand-in for spark-submit running Spark Connect's server class: it binds the port it is given
# and says what the real one says in its log, or fails as the real one does when the port is taken.
_FAKE_SUBMIT = """#!/usr/bin/env python3
import socket, sys, time
port = int(next(a.split("=", 1)[1] for a in sys.argv if a.startswith("spark.connect.grpc.binding.port=")))
s = socket.socket()
try:
    s.bind(("127.0.0.1", port))
    s.listen()
    print(f"INFO SparkConnectServer: Spark Connect server started at: 127.0.0.1:{port}", flush=True)
except OSError:
    print("ERROR SparkConnectServer: Error starting Spark Connect server", flush=True)
    print(f"java.net.BindException: Failed to bind to address /127.0.0.1:{port}", flush=True)
time.sleep(60)      # a JVM lingers after its server failed
"""


def test_a_connect_server_whose_port_was_taken_starts_on_another(tmp_path):
    """The lakehouse Connect server's port was taken by the application started beside it: the
    server failed to bind, the port answered all the same, and the client waited its whole 600 s
    on a socket that was no server.  Ready is the server's own word that it listens there; a port
    taken meanwhile is picked again."""
    import socket
    from support.spark.spark_cluster import ConnectServer
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "spark-submit"
    fake.write_text(_FAKE_SUBMIT)
    fake.chmod(0o755)
    server = ConnectServer(str(tmp_path / "work"), str(bin_dir / "python"), "local[1]")
    first = server.port
    taken = socket.socket()                # another process's socket on the server's port
    taken.bind(("127.0.0.1", first))
    taken.listen()
    try:
        server.start(timeout=30)
        assert server.port != first and server.url == f"sc://127.0.0.1:{server.port}"
        first_log = tmp_path / "work" / "connect-server.attempt-1.log"
        assert "BindException" in first_log.read_text()
        assert f"started at: 127.0.0.1:{server.port}" in (tmp_path / "work" / "connect-server.log").read_text()
    finally:
        taken.close()
        server.stop()
    # the failed attempt's lingering process was ended before the second started
    from support.spark.spark_cluster import alive_in_groups
    assert not alive_in_groups(server.groups)


def test_the_restore_over_connect_writes_what_the_source_holds(lakehouse, restore_history, restore_target_broker):
    """``spark_udfs.restore`` from a Spark Connect client (no SparkContext; the restore's client shipped
    to the server's bare executors by ``ship``): every restored topic holds the source's committed
    records, in order with their keys, values, timestamps and headers, each at the target offset the
    offset map gives its source offset; the groups' CSV holds the groups' positions as of the history's ``as_of``."""
    import csv
    restore = lakehouse["results"]["connect"]["restore"]
    assert "error" not in restore, restore.get("error")
    assert sorted(restore["created"]) == sorted(t + "-connect" for t in RESTORED_TOPICS)
    assert all(s["status"] == "written" for s in restore["partitions"]), restore["partitions"]
    folder = lakehouse["restore_folder"]
    with open(folder / "map.csv", newline="") as fh:
        mapped = list(csv.reader(fh))
    assert len(mapped) > 1 and {row[3] for row in mapped[1:]} == {t + "-connect" for t in RESTORED_TOPICS}, \
        mapped[:3]
    from kafkarec.restore import OffsetMap
    omap = OffsetMap.read(str(folder / "map.csv"))
    for topic in RESTORED_TOPICS:
        parts = range(3) if topic == RH.ORDERS else [0]
        source = RH.consume_committed(restore_history.bootstrap, topic, parts)
        target = RH.consume_committed(restore_target_broker.bootstrap, topic + "-connect", parts)
        assert {p: [r[1:] for r in rs] for p, rs in target.items()} == \
            {p: [r[1:] for r in rs] for p, rs in source.items()}, topic
        # the map sends each source record's offset to its offset on the target
        assert {p: [omap.target_offset(topic, p, r[0]) for r in rs] for p, rs in source.items()} == \
            {p: [r[0] for r in rs] for p, rs in target.items()}, topic
        assert sum(s["records"] for s in restore["partitions"] if s["topic"] == topic) == \
            sum(len(rs) for rs in source.values()), topic
    with open(folder / "groups.csv", newline="") as fh:
        groups = list(csv.reader(fh))
    assert len(groups) == restore["groups"] > 0
    assert {(g, t[:-len("-connect")], int(p)) for g, t, p, _ in groups} == \
        {k for k in restore_history.positions_as_of if k[0] == "rs-classic"}
