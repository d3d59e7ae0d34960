"""The change-data-capture fixture: a real PostgreSQL server (tests/cdc/postgres_server.py),
Debezium's embedded engine and PostgreSQL connector (tests/java/DebeziumCapture.java, jvm/debezium)
capturing a snapshot and then inserts, updates, deletes, a primary-key change and a truncate,
the change events written into a Kafka log directory by Kafka's record classes; and the
database's own final ``SELECT`` of each table, the table the topics must give back.

Registered for every test folder (root tests/conftest.py's ``pytest_plugins``): the session's one
user-way application (support/user_app.py) prepares tests/cdc's Spark job from it, whichever
folder's test starts that application."""
from __future__ import annotations

import os
import subprocess
import time

import pytest

import jvm  # tests/jvm.py
from paths import ROOT
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


@pytest.fixture(scope="session")
def debezium_capture(tmp_path_factory):
    """``(log_dir, {table: [row dicts by id]})``: the topics ``dbz.public.<table>`` (JSON with
    the schema envelope) and ``plain.public.<table>`` (payload only), and the final tables."""
    from cdc.postgres_server import PostgresServer, USER, bindir
    if bindir() is None:
        if os.environ.get("CI"):
            pytest.fail("CI needs PostgreSQL (Debian's postgresql package; .ci/run installs it)")
        pytest.skip("PostgreSQL is not installed (Debian's postgresql package)")
    capture = compiled(CAPTURE, jvm.classpath("jvm/debezium"))
    log_dir = tmp_path_factory.mktemp("cdc") / "logs"
    server = PostgresServer().start()
    try:
        server.sql("CREATE DATABASE shop;")
        server.sql(SCHEMA, db="shop")
        out = open(tmp_path_factory.mktemp("cdc-job") / "capture.log", "w+")
        command = capture.command("127.0.0.1", str(server.port), USER, "shop",
                                  "public.customers,public.orders,public.capture_done", str(log_dir),
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
            server.sql(CHANGES, db="shop")
            rest, _ = proc.communicate(timeout=240)
            out.seek(0)
            assert proc.returncode == 0 and "done" in rest, out.read()[-6000:]
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            out.close()
        final = {}
        for table in TABLES:
            rows = server.sql(f"SELECT coalesce(json_agg(t ORDER BY id), '[]') FROM {table} t;", db="shop")
            import json
            final[table] = json.loads(rows)
        return str(log_dir), final
    finally:
        server.stop()
