"""The change-data-capture fixtures: real databases, a PostgreSQL server
(tests/support/servers/postgres_server.py, the session's one: ``postgres_server``) and a MariaDB server (tests/support/servers/mariadb_server.py), captured by
Debezium's embedded engine and its PostgreSQL and MariaDB connectors
(tests/java/DebeziumCapture.java, jvm/debezium) through a snapshot and then inserts, updates,
deletes, primary-key changes and a truncate, the change events written into a Kafka log
directory by Kafka's record classes; and each database's own final ``SELECT`` of each table, the
table the topics must give back.

Registered for every test folder (root tests/conftest.py's ``pytest_plugins``): the session's one
user-way application (support/spark/user_app.py) prepares tests/cdc's Spark job from them, whichever
folder's test starts that application."""
from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

from support import jvm  # tests/support/jvm.py
from support.paths import ROOT
from support.java import compiled

CAPTURE = os.path.join(ROOT, "tests", "java", "DebeziumCapture.java")

SCHEMA = """
CREATE TABLE customers (id integer PRIMARY KEY, name text NOT NULL, email text, active boolean,
                        balance bigint);
ALTER TABLE customers REPLICA IDENTITY FULL;
CREATE TABLE orders (id integer PRIMARY KEY, customer integer, item text, qty integer);
CREATE TABLE capture_done (id integer PRIMARY KEY);
INSERT INTO customers VALUES (1, 'Ada', 'ada@example.com', true, 100), (2, 'Brian', NULL, false, 0),
                             (3, 'Chloé', 'chloe@example.com', true, -5), (4, 'Dmitri', 'd@example.com', true, 7);
INSERT INTO orders VALUES (1, 1, 'pen', 2), (2, 3, 'ink', 1);
"""

CHANGES = """
INSERT INTO customers VALUES (5, 'Eve', 'eve@example.com', true, 50), (6, 'Farid', NULL, true, 1);
UPDATE customers SET balance = balance + 10 WHERE id IN (1, 5);
UPDATE customers SET email = 'brian@example.com', active = true WHERE id = 2;
DELETE FROM customers WHERE id = 4;
UPDATE customers SET id = 40 WHERE id = 3;
INSERT INTO customers VALUES (4, 'Dmitri again', NULL, false, 0);
DELETE FROM customers WHERE id = 6;
BEGIN; UPDATE customers SET name = 'Ada L.' WHERE id = 1; UPDATE customers SET balance = 0 WHERE id = 5; COMMIT;
INSERT INTO orders VALUES (3, 2, 'paper', 10);
UPDATE orders SET qty = 3 WHERE id = 1;
TRUNCATE orders;
INSERT INTO orders VALUES (10, 1, 'stamp', 1), (11, 5, 'glue', 4);
DELETE FROM orders WHERE id = 10;
INSERT INTO capture_done VALUES (1);
"""

TABLES = ("customers", "orders")


def _capture(tmp_path_factory, name, connector, port, user, password, db, tables, run_changes):
    """Run DebeziumCapture over a started server: the snapshot, then ``run_changes()``, until
    the capture_done table's event; the log directory it wrote."""
    capture = compiled(CAPTURE, jvm.classpath("jvm/debezium"))
    log_dir = tmp_path_factory.mktemp(name) / "logs"
    out = open(tmp_path_factory.mktemp(f"{name}-job") / "capture.log", "w+")
    command = capture.command(connector, "127.0.0.1", str(port), user, password, db, tables, str(log_dir),
                              jvm_flags=["-Xmx512m", "-XX:+UseSerialGC"])
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=out, text=True)
    try:
        deadline = time.monotonic() + 240
        line = ""
        while "snapshot done" not in line:
            line = proc.stdout.readline()
            if not line and proc.poll() is not None or time.monotonic() > deadline:
                out.seek(0)
                pytest.fail(f"Debezium did not finish its snapshot:\n{out.read()[-6000:]}")
        run_changes()
        rest, _ = proc.communicate(timeout=240)
        out.seek(0)
        assert proc.returncode == 0 and "done" in rest, out.read()[-6000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        out.close()
    return str(log_dir)


def _missing(what: str, package: str) -> None:
    """Skip, or under CI fail: the tests need the database, which CI installs."""
    if os.environ.get("CI"):
        pytest.fail(f"CI needs {what} (Debian's {package} package; scripts/system_deps.sh installs it)")
    pytest.skip(f"{what} is not installed (Debian's {package} package)")


@pytest.fixture(scope="session")
def postgres_server():
    """The session's one PostgreSQL (:class:`cdc.postgres_server.PostgresServer`): the CDC capture's
    database and the Iceberg JDBC catalog (support/servers/connect_worker.py) each have a database of their own
    in it; stopped at the session's end."""
    from support.servers.postgres_server import PostgresServer, bindir
    if bindir() is None:
        _missing("PostgreSQL", "postgresql")
    server = PostgresServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def debezium_capture(postgres_server, tmp_path_factory):
    """``(log_dir, {table: [row dicts by id]})``: the topics ``dbz.public.<table>`` (JSON with
    the schema envelope), ``plain.public.<table>`` (payload only), ``avro.public.<table>``
    (registry-framed Avro) and ``parted.public.<table>`` (payload only, 3 partitions), and the
    final tables."""
    from support.servers.postgres_server import USER
    server = postgres_server
    server.sql("CREATE DATABASE shop;")
    server.sql(SCHEMA, db="shop")
    log_dir = _capture(tmp_path_factory, "cdc", "postgresql", server.port, USER, "", "shop",
                       "public.customers,public.orders,public.capture_done",
                       lambda: server.sql(CHANGES, db="shop"))
    final = {}
    for table in TABLES:
        rows = server.sql(f"SELECT coalesce(json_agg(t ORDER BY id), '[]') FROM {table} t;", db="shop")
        final[table] = json.loads(rows)
    return log_dir, final


# --- MariaDB (issue 40): 3 partitions a topic, a truncate after rows exist in every partition ---

MARIADB_SCHEMA = """
CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL, note TEXT, qty SMALLINT, big BIGINT,
                    price DECIMAL(10,2), ratio DOUBLE, active BOOLEAN, born DATE, seen DATETIME(3),
                    kind ENUM('tool','toy','food'), tags SET('red','green','blue'), code VARBINARY(8),
                    made YEAR);
CREATE TABLE orders (id INT PRIMARY KEY, customer INT, item VARCHAR(20), qty INT);
CREATE TABLE order_lines (order_id INT, line_no INT, sku VARCHAR(20) NOT NULL, qty INT,
                          PRIMARY KEY (order_id, line_no));
CREATE TABLE capture_done (id INT PRIMARY KEY);
INSERT INTO items VALUES
  (1, 'hammer', NULL, 3, 9007199254740993, 12.50, 1.5, TRUE, '1999-12-31', '2024-02-29 23:59:59.125',
   'tool', 'red', X'00FF10', 1999),
  (2, 'yo-yo', 'wooden', -1, -5, 0.99, -0.25, FALSE, '1970-01-01', '1970-01-01 00:00:00.000', 'toy', '', X'', 2000),
  (3, 'crème brûlée', 'sweet', 0, 0, 1234.00, 0, NULL, '2038-01-19', '2038-01-19 03:14:08.001', 'food',
   'green,blue', NULL, 2038),
  (4, 'saw', NULL, 7, 7, 7.00, 7, TRUE, NULL, NULL, NULL, NULL, X'7F', NULL);
INSERT INTO orders VALUES (1, 1, 'nail', 10), (2, 2, 'string', 1), (3, 3, 'cream', 2), (4, 1, 'glue', 4);
"""

MARIADB_CHANGES = """
INSERT INTO items VALUES (5, 'drill', NULL, 1, 1, 99.95, 0.5, TRUE, '2001-09-09', '2001-09-09 01:46:40.000',
                          'tool', 'red,green,blue', X'DEADBEEF', 2001);
UPDATE items SET qty = qty + 1, tags = 'red,blue', note = 'updated' WHERE id IN (1, 4);
DELETE FROM items WHERE id = 2;
UPDATE items SET id = 34 WHERE id = 3;
UPDATE items SET id = 45 WHERE id = 4;
INSERT INTO order_lines VALUES (1, 1, 'a', 1), (1, 2, 'b', 2), (2, 1, 'c', 3), (3, 1, 'd', 1), (3, 2, 'e', 5);
UPDATE order_lines SET qty = 9 WHERE order_id = 1 AND line_no = 2;
DELETE FROM order_lines WHERE order_id = 2 AND line_no = 1;
UPDATE order_lines SET line_no = 7 WHERE order_id = 3 AND line_no = 1;
INSERT INTO orders VALUES (5, 2, 'tape', 1), (6, 3, 'pins', 100), (7, 1, 'rope', 2), (8, 2, 'wax', 3),
                          (9, 3, 'chalk', 6), (10, 1, 'ink', 1), (11, 2, 'pen', 2), (12, 3, 'paper', 500);
UPDATE orders SET qty = qty * 2 WHERE id <= 6;
DELETE FROM orders WHERE id = 7;
TRUNCATE TABLE orders;
INSERT INTO orders VALUES (20, 1, 'nail', 1), (21, 2, 'string', 2), (22, 3, 'cream', 3), (23, 1, 'glue', 4),
                          (24, 2, 'tape', 5), (25, 3, 'pins', 6), (26, 1, 'rope', 7), (27, 2, 'wax', 8),
                          (28, 3, 'chalk', 9);
UPDATE orders SET qty = 0 WHERE id = 21;
DELETE FROM orders WHERE id = 22;
INSERT INTO orders VALUES (29, 1, 'ink', 10);
INSERT INTO capture_done VALUES (1);
"""

#: The final SELECT of each table, each row as Debezium's JSON gives its column types: DECIMAL as
#: text (the capture's decimal.handling.mode=string), DATE as days and DATETIME as milliseconds
#: since the epoch, VARBINARY as base64, ENUM and SET as their text, BOOLEAN (TINYINT(1)) and
#: YEAR as numbers.
MARIADB_SELECTS = {
    "items": """SELECT JSON_OBJECT('id', id, 'name', name, 'note', note, 'qty', qty, 'big', big,
                  'price', CAST(price AS CHAR), 'ratio', ratio, 'active', active,
                  'born', DATEDIFF(born, '1970-01-01'),
                  'seen', TIMESTAMPDIFF(MICROSECOND, '1970-01-01', seen) DIV 1000,
                  'kind', kind, 'tags', tags, 'code', TO_BASE64(code), 'made', made)
                FROM items ORDER BY id""",
    "orders": "SELECT JSON_OBJECT('id', id, 'customer', customer, 'item', item, 'qty', qty) FROM orders ORDER BY id",
    "order_lines": """SELECT JSON_OBJECT('order_id', order_id, 'line_no', line_no, 'sku', sku, 'qty', qty)
                      FROM order_lines ORDER BY order_id, line_no""",
}
MARIADB_TABLES = tuple(MARIADB_SELECTS)


@pytest.fixture(scope="session")
def mariadb_capture(tmp_path_factory):
    """``(log_dir, {table: [row dicts in primary-key order]})``: the topics ``dbz.shop.<table>``
    (JSON with the schema envelope) and ``plain.shop.<table>`` (payload only), 3 partitions
    each, and the final tables (:data:`MARIADB_SELECTS`)."""
    from support.servers.mariadb_server import MariaDbServer, PASSWORD, USER, installed
    if not installed():
        _missing("MariaDB", "mariadb-server")
    server = MariaDbServer().start()
    try:
        server.sql("CREATE DATABASE shop;")
        server.sql(MARIADB_SCHEMA, db="shop")
        log_dir = _capture(tmp_path_factory, "cdc-mariadb", "mariadb", server.port, USER, PASSWORD, "shop",
                           ",".join(f"shop.{t}" for t in (*MARIADB_TABLES, "capture_done")),
                           lambda: server.sql(MARIADB_CHANGES, db="shop"))
        final = {table: [json.loads(line) for line in server.sql(select + ";", db="shop").splitlines()]
                 for table, select in MARIADB_SELECTS.items()}
        return log_dir, final
    finally:
        server.stop()
