"""``kafkarec audit`` on real tables (issue 41, item 5): Delta tables (deltalake) and Iceberg tables
(pyiceberg's SqlCatalog on sqlite), backfilled from the session broker's log dir by
kafkarec.lakehouse in the live writers' layouts, then broken the way tables break (a row
deleted, a row written twice); the exit status and the lines name what is wrong."""
from __future__ import annotations

import json

import pytest

pytestmark = [pytest.mark.broker, pytest.mark.slow]

pa = pytest.importorskip("pyarrow")
pytest.importorskip("deltalake")
pytest.importorskip("pyiceberg")

from kafkarec.cli.main import main  # noqa: E402
from kafkarec.lakehouse import DeltaTarget, IcebergTarget, backfill, read_positions  # noqa: E402

TOPICS = "txn,compacted"


def run(capsys, *argv):
    status = main(["audit", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def iceberg(tmp_path, name):
    return IcebergTarget({"type": "sql", "uri": f"sqlite:///{tmp_path}/catalog.db",
                          "warehouse": f"file://{tmp_path}/warehouse"}, f"audit.{name}", "audit")


def iceberg_flags(target):
    return ["--iceberg-catalog", target.catalog_name, "--table", target.identifier,
            *(x for k, v in target.catalog_properties.items() for x in ("--catalog-property", f"{k}={v}"))]


def one_row(target, layout, topic, partition):
    """A row of the table and the offset it is at (what a fault injection copies or removes)."""
    pos = read_positions(target, layout, topic=topic if layout in ("redpanda", "automq") else None)
    rows = [r for r in pos.to_pylist() if r["partition"] == partition and (r["topic"] in (topic, None))]
    return sorted(r["offset"] for r in rows)[len(rows) // 2]


@pytest.mark.parametrize("kind, layout", [("delta", "kafka-delta-ingest"), ("iceberg", "iceberg-kafka-connect"),
                                          ("iceberg", "redpanda")])
def test_audit_a_backfilled_table_then_a_deleted_and_a_duplicated_row(kind, layout, tmp_path, stopped_log_dir,
                                                                      capsys):
    topics = "txn" if layout == "redpanda" else TOPICS     # Redpanda keeps one topic per table
    if kind == "delta":
        target = DeltaTarget(str(tmp_path / "delta"))
        backfill(stopped_log_dir, target, layout=layout, topics=topics, app_id="audit")
        flags = ["--delta", target.path]
    else:
        target = iceberg(tmp_path, layout.replace("-", "_"))
        backfill(stopped_log_dir, target, layout=layout, topics=topics)
        flags = iceberg_flags(target)
    flags += ["--layout", layout, "--topics", topics]
    status, out, err = run(capsys, stopped_log_dir, *flags)
    assert status == 0, out + err
    assert "FAILED" not in out and out.rstrip().endswith("ok")

    lost = one_row(target, layout, "txn", 1)
    _rewrite(target, kind, layout, drop=("txn", 1, lost), copy=("txn", 2, one_row(target, layout, "txn", 2)))
    status, out, err = run(capsys, stopped_log_dir, *flags, "--json")
    assert status == 1, out + err
    lines = [json.loads(line) for line in out.splitlines()]
    parts = {(d["topic"], d["partition"]): d for d in lines if d["type"] == "partition"}
    assert parts[("txn", 1)]["gaps"] == [[lost, lost, 1]]
    assert len(parts[("txn", 2)]["duplicates"]) == 1 and parts[("txn", 2)]["duplicates"][0][2] == 2
    assert parts[("txn", 0)]["ok"] and lines[-1]["type"] == "summary" and not lines[-1]["ok"]
    assert lines[-1]["missing"] == 1 and lines[-1]["duplicated_offsets"] == 1


def _rewrite(target, kind, layout, *, drop, copy):
    """The table without the row at ``drop`` and with the row at ``copy`` twice, rewritten by
    the table library itself (the way a faulty writer leaves it)."""
    from kafkarec.lakehouse import layout as layout_of, positions
    lay = layout_of(layout)
    if kind == "delta":
        from deltalake import DeltaTable, write_deltalake
        data = DeltaTable(target.path).to_pyarrow_table()
    else:
        from kafkarec.lakehouse.tables import load_iceberg_table
        tbl = load_iceberg_table(target)
        data = tbl.scan().to_arrow()
    pos = positions(data, lay, topic="txn")
    key = list(zip(pos.column("topic").to_pylist(), pos.column("partition").to_pylist(),
                   pos.column("offset").to_pylist()))
    keep = pa.array([k != drop for k in key])
    twice = pa.array([k == copy for k in key])
    broken = pa.concat_tables([data.filter(keep), data.filter(twice)])
    if kind == "delta":
        write_deltalake(target.path, broken, mode="overwrite")
    else:
        tbl.overwrite(broken)


def test_usage_errors_exit_2(capsys, tmp_path, stopped_log_dir):
    status, _, err = run(capsys, stopped_log_dir, "--layout", "automq")
    assert status == 2 and "name one table" in err
    status, _, err = run(capsys, stopped_log_dir, "--delta", str(tmp_path), "--iceberg-catalog", "c",
                         "--table", "a.b", "--layout", "automq")
    assert status == 2 and "name one table" in err
    status, _, err = run(capsys, stopped_log_dir, "--delta", str(tmp_path), "--layout", "nosuch")
    assert status == 2 and "invalid choice" in err
