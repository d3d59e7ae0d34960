"""``kafkarec backfill``: one line per partition, the re-run, a refused range (exit 1), bad flags
(exit 2)."""
from __future__ import annotations

import json

import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("deltalake")

from kafkarec.cli.main import main  # noqa: E402
from support.lakehouse_logs import write_partition  # noqa: E402


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
