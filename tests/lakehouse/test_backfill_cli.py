"""``kafkarec backfill``: one line per partition, the re-run, a refused range (exit 1), bad flags
(exit 2)."""
from __future__ import annotations

import json

import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("deltalake")

from kafkarec.cli.main import main  # noqa: E402
from support.logs.lakehouse_logs import write_partition  # noqa: E402


def test_backfill_command(tmp_path, capfd):
    log = str(tmp_path / "log")
    write_partition(log, "orders", 0, [("plain", 3), ("data", 7, 2), ("commit", 7), ("plain", 1)])
    delta = str(tmp_path / "delta")
    args = ["backfill", log, "--delta", delta, "--layout", "kafka-delta-ingest", "--app-id", "ingest"]
    assert main(args) == 0
    assert capfd.readouterr().out == "orders-0 [0, 7) 6 rows written\n"
    assert main(args + ["--json"]) == 0
    assert json.loads(capfd.readouterr().out) == {"topic": "orders", "partition": 0, "start": 0, "end": 7,
                                                   "rows": 0, "status": "already written"}
    iceberg = ["backfill", log, "--layout", "automq", "--iceberg-catalog", "c", "--catalog-property", "type=sql",
               "--catalog-property", f"uri=sqlite:///{tmp_path}/c.db", "--catalog-property",
               f"warehouse=file://{tmp_path}/wh", "--table", "db.orders"]
    assert main(iceberg) == 0
    capfd.readouterr()
    assert main(iceberg + ["--end-offsets", '{"orders":{"0":2}}']) == 1
    assert "a backfill of [0, 7) is already in the table; [0, 2) overlaps it" in capfd.readouterr().err
    assert main(["backfill", log, "--layout", "automq"]) == 2
    assert "give one target" in capfd.readouterr().err
    assert main(["backfill", log, "--layout", "automq", "--delta", delta]) == 2
    assert "needs app_id" in capfd.readouterr().err


@pytest.mark.parametrize("layout, target", [
    ("kafka-delta-ingest", ["--delta", "{tmp}/delta", "--app-id", "ingest"]),
    ("redpanda", ["--iceberg-catalog", "c", "--catalog-property", "type=sql", "--catalog-property",
                  "uri=sqlite:///{tmp}/c.db", "--catalog-property", "warehouse=file://{tmp}/wh",
                  "--table", "db.orders"]),
])
def test_a_timestamp_the_writers_microseconds_cannot_hold_stops_the_backfill(tmp_path, capfd, layout, target):
    """Kafka takes a CreateTime of 2^62 ms; kafka-delta-ingest's and Redpanda's microseconds of it
    pass a long (their unchecked multiply: 1970-01-01). The backfill names the record and writes
    no row (exit 1), rather than another instant."""
    from support.logs.logdir import PartitionWriter, v2_batch
    log = str(tmp_path / "log")
    w = PartitionWriter(log, "orders", 0)
    w.append(v2_batch([(1_700_000_000_000, b"k", b"a", []), (1 << 62, b"k", b"b", [])]))
    w.close()
    args = ["backfill", log, "--layout", layout] + [a.format(tmp=tmp_path) for a in target]
    assert main(args) == 1
    err = capfd.readouterr().err
    assert (f"orders-0 offset 1: timestamp {1 << 62} ms has no microseconds in a long" in err
            and f"(layout {layout}); nothing was written" in err), err
    from kafkarec.lakehouse import DeltaTarget, IcebergTarget, read_positions
    table = (DeltaTarget(str(tmp_path / "delta")) if layout == "kafka-delta-ingest" else
             IcebergTarget({"type": "sql", "uri": f"sqlite:///{tmp_path}/c.db", "warehouse": f"file://{tmp_path}/wh"},
                           "db.orders", "c"))
    assert read_positions(table, layout, topic="orders").num_rows == 0


@pytest.mark.parametrize("as_json", [False, True])
def test_the_audit_takes_back_the_per_partition_ends_the_backfill_printed(tmp_path, capfd, as_json):
    """A table backfilled to a different H per partition: ``kafkarec audit --end-offsets @FILE``
    reads what ``kafkarec backfill`` printed (its lines, or its --json objects) and holds each
    partition to its own H (ok); one ``--end-offset`` for all (still taken), or none, shows gaps."""
    log = str(tmp_path / "log")
    write_partition(log, "orders", 0, [("plain", 9)])
    write_partition(log, "orders", 1, [("plain", 9)])
    delta = str(tmp_path / "delta")
    table = ["--delta", delta, "--layout", "kafka-delta-ingest"]
    assert main(["backfill", log, *table, "--app-id", "ingest", "--end-offsets", '{"orders":{"0":4,"1":6}}']
                + (["--json"] if as_json else [])) == 0
    printed = capfd.readouterr().out
    assert printed.count("\n") == 2 and ("orders-1 [0, 6) 6 rows written" in printed or as_json)
    (tmp_path / "ends.txt").write_text(printed)
    assert main(["audit", log, *table, "--end-offsets", f"@{tmp_path}/ends.txt"]) == 0
    out = capfd.readouterr().out
    assert "orders-0: [0, 4) expected 4, present 4: ok" in out and "orders-1: [0, 6) expected 6, present 6: ok" in out
    assert main(["audit", log, *table, "--end-offsets", '{"orders":{"0":4,"1":6}}']) == 0    # the backfill's JSON
    capfd.readouterr()
    assert main(["audit", log, *table, "--end-offset", "6"]) == 1                            # the old single form
    assert "orders-0: [0, 6) expected 6, present 4: FAILED\n  gaps (2 missing): 4..5" in capfd.readouterr().out
    assert main(["audit", log, *table]) == 1
    assert "gaps (5 missing): 4..8" in capfd.readouterr().out
    assert main(["audit", log, *table, "--end-offset", "4", "--end-offsets", f"@{tmp_path}/ends.txt"]) == 2
    assert "not both" in capfd.readouterr().err
    (tmp_path / "bad.txt").write_text("orders-0 [0, 4) 4 rows written\nsomething else\n")
    assert main(["audit", log, *table, "--end-offsets", f"@{tmp_path}/bad.txt"]) == 2
    assert "bad.txt, line 2: not a line kafkarec backfill prints" in capfd.readouterr().err
