"""A backfill from a log on an object store into a Delta table on an object store (SeaweedFS's
S3), read back with delta-rs: the same rows and txn actions as from local files."""
from __future__ import annotations

import pytest

from support.servers.s3server import find_weed

pa = pytest.importorskip("pyarrow")
deltalake = pytest.importorskip("deltalake")

from kafkarec.lakehouse import DeltaTarget, backfill, hand_off_points, read_positions  # noqa: E402
from support.logs.lakehouse_logs import write_partition  # noqa: E402

pytestmark = pytest.mark.skipif(find_weed() is None, reason="no SeaweedFS binary (weed)")


def delta_options(s3) -> dict:
    # delta-rs's object-store keys; SeaweedFS offers no lock service: a single writer here
    return {"AWS_ACCESS_KEY_ID": s3.access_key, "AWS_SECRET_ACCESS_KEY": s3.secret_key,
            "AWS_ENDPOINT_URL": s3.endpoint, "AWS_REGION": s3.region, "AWS_ALLOW_HTTP": "true",
            "AWS_S3_ALLOW_UNSAFE_RENAME": "true"}


def test_log_and_delta_table_on_s3(s3, tmp_path):
    local = str(tmp_path / "log")
    m = write_partition(local, "orders", 0, [("plain", 3), ("data", 7, 2), ("abort", 7), ("plain", 2),
                                             ("data", 8, 1)])
    s3.upload_dir(local, "lake", "kafka")
    fs = s3.filesystem()
    fs.create_dir("tables")
    log_uri = "s3://lake/kafka"
    assert hand_off_points(log_uri, storage_options=s3.options()) == hand_off_points(local) == {("orders", 0): (0, 8)}
    target = DeltaTarget("s3://tables/orders", delta_options(s3))
    summary = backfill(log_uri, target, layout="kafka-delta-ingest", app_id="ingest", storage_options=s3.options())
    assert summary[("orders", 0)].rows == 5
    table = deltalake.DeltaTable(target.path, storage_options=target.storage_options)
    assert table.transaction_version("ingest-0") == 7
    pos = read_positions(target, "kafka-delta-ingest")
    assert sorted(pos.column("offset").to_pylist()) == m.read_committed(0, 8)
