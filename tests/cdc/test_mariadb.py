"""A second database (issue 40): MariaDB captured by Debezium's MariaDB connector
(tests/support/servers/debezium.py's ``mariadb_capture``), each table's topic of 3 partitions.  The
keyless truncate event lands on one partition and applies to the rows of all three: the
mirrored table (Python, the command line) is the database's final SELECT."""
import glob
import json
import os
import subprocess
import sys

import pytest

import kafkarec

pytestmark = [pytest.mark.slow]

PREFIXES = ("plain", "dbz")
TABLES = ("items", "orders", "order_lines")


def partitions(log_dir, topic):
    """``{partition: [(offset, key, envelope or None)]}`` of a topic, from its segment files."""
    out = {}
    for folder in sorted(glob.glob(os.path.join(log_dir, topic + "-*"))):
        rows = []
        for path in sorted(glob.glob(os.path.join(folder, "*.log"))):
            with open(path, "rb") as fh:
                for r in kafkarec.to_arrow(fh.read()).select(["key", "value", "offset"]).to_pylist():
                    doc = None
                    if r["value"] is not None:
                        doc = json.loads(r["value"])
                        doc = doc.get("payload", doc)
                    rows.append((r["offset"], r["key"], doc))
        out[int(folder.rsplit("-", 1)[1])] = rows
    return out


def binlog_position(doc):
    s = doc["source"]
    return s["file"], s["pos"], s["row"]


@pytest.mark.parametrize("prefix", PREFIXES)
def test_the_truncate_lands_on_one_partition_after_rows_in_all(mariadb_capture, prefix):
    """What the other tests rely on: 3 partitions a table; one keyless truncate of orders, with
    rows written before it in every partition and inserts after it; a primary-key change that
    moves a row to another partition; every MariaDB change kind."""
    log_dir, final = mariadb_capture
    for table in TABLES:
        assert sorted(partitions(log_dir, f"{prefix}.shop.{table}")) == [0, 1, 2]
    orders = partitions(log_dir, f"{prefix}.shop.orders")
    truncates = [(p, doc) for p, rows in orders.items() for _, key, doc in rows if doc and doc["op"] == "t"]
    assert len(truncates) == 1 and all(key is not None for rows in orders.values()
                                       for _, key, doc in rows if doc and doc["op"] != "t")
    (_, truncate), = truncates
    # MariaDB's binlog times are whole seconds: only the binlog position orders these events
    for p, rows in orders.items():
        assert any(doc and doc["op"] != "t" and binlog_position(doc) < binlog_position(truncate)
                   for _, _, doc in rows), p
    assert any(doc and binlog_position(doc) > binlog_position(truncate)
               for rows in orders.values() for _, _, doc in rows)
    assert {doc["op"] for rows in orders.values() for _, _, doc in rows if doc} == {"r", "c", "u", "d", "t"}
    assert {doc["source"]["connector"] for rows in orders.values() for _, _, doc in rows if doc} == {"mariadb"}
    items = partitions(log_dir, f"{prefix}.shop.items")
    where = {}          # binlog position of a primary-key change -> partitions of its delete, its insert
    for p, rows in items.items():
        for _, _, doc in rows:
            if doc and doc["op"] in ("c", "d"):
                where.setdefault(binlog_position(doc), {})[doc["op"]] = p
    moves = [w for w in where.values() if set(w) == {"c", "d"}]
    assert len(moves) == 2 and all(w["c"] != w["d"] for w in moves)
    assert [r["id"] for r in final["orders"]] == [20, 21, 23, 24, 25, 26, 27, 28, 29]


@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize("table", TABLES)
def test_the_mirrored_table_is_the_databases_select(mariadb_capture, prefix, table):
    """kafkarec.table.latest(cdc="debezium") over the 3 partitions: each live key's ``after``
    image is the database's final SELECT, the truncate of orders applied to every partition."""
    import kafkarec.table
    log_dir, final = mariadb_capture
    state = kafkarec.table.latest(log_dir, topics=[f"{prefix}.shop.{table}"], cdc="debezium").table
    assert state.column("cdcError").null_count == state.num_rows
    assert set(state.column("op").to_pylist()) <= {"c", "u", "r"}
    rows = [json.loads(a) for a in state.column("after").to_pylist()]
    assert sorted(rows, key=lambda r: tuple(r.values())[:2]) == final[table]


@pytest.mark.parametrize("prefix", PREFIXES)
def test_command_line_prints_the_mirrored_table(mariadb_capture, prefix):
    log_dir, final = mariadb_capture
    proc = subprocess.run([sys.executable, "-m", "kafkarec", "table", log_dir, "--topics", f"{prefix}.shop.orders",
                           "--cdc", "debezium"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert sorted((r["after"] for r in rows), key=lambda r: r["id"]) == final["orders"]
    assert {r["partition"] for r in rows} == {0, 1, 2}
