"""``_schemas`` read from an object store (SeaweedFS's S3) through kafkarec's storage layer."""
from __future__ import annotations

import pytest

import kafkarec.registry as kr
from support.servers.s3server import find_weed

from support.registry.schemas_log import write_partition
from support.registry.schemas_every_kind import check_every_kind, every_kind

pytestmark = pytest.mark.skipif(find_weed() is None, reason="no SeaweedFS binary (weed)")


def test_schemas_topic_in_s3(s3, tmp_path):
    recs = every_kind()
    write_partition(str(tmp_path / "logs" / "_schemas-0"), [(k, v) for _, k, v in recs],
                    [o for o, _, _ in recs], split_every=5)
    write_partition(str(tmp_path / "logs" / "orders-0"), [(None, b"x")])
    s3.upload_dir(str(tmp_path / "logs"), "registry", "cluster1")
    for uri in ("s3://registry/cluster1", "s3://registry/cluster1/_schemas-0"):
        reg = kr.load(uri, storage_options=s3.options())
        check_every_kind(reg)
        assert reg.source == uri
    assert kr.load("s3://registry/cluster1", storage_options=s3.options(),
                   as_of_offset=10).by_id(9) is not None
