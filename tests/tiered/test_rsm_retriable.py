"""A throttled or unavailable object store while reading a tiered segment's manifest or a side file
of the plugin's configuration stays a retriable StorageError (a read to try again), never a
content error that says the object is broken; a permanent failure is still reported as the
object's."""
from __future__ import annotations

import pytest

from kafkarec.errors import RemoteObjectError, StorageError, TransformedSegmentError
from kafkarec.log import rsm
from kafkarec.log import storage as _storage


class _FailingStorage:
    def __init__(self, error):
        self.error = error

    def read_file(self, path, size=None, limit=None):
        raise self.error

    def uri(self, path):
        return "s3://b/" + path


THROTTLED = StorageError("s3://b/k: the object store is throttled or unavailable (SlowDown)", "s3://b/k",
                         retriable=True)
DENIED = StorageError("s3://b/k: access denied", "s3://b/k")


def test_a_throttled_manifest_read_is_raised_retriable():
    paths = [("t-0/a.rsm-manifest", 10), ("t-0/b.rsm-manifest", 10)]
    with pytest.raises(StorageError) as raised:
        rsm.read_manifests(_FailingStorage(THROTTLED), paths)
    assert raised.value.retriable
    got = rsm.read_manifests(_FailingStorage(DENIED), paths)
    assert all(isinstance(e, RemoteObjectError) and "unreadable segment manifest" in str(e) for e in got.values())


def test_a_throttled_side_file_is_raised_retriable(monkeypatch):
    monkeypatch.setattr(_storage, "_resolve", lambda location, options: (_FailingStorage(THROTTLED), "k"))
    with pytest.raises(StorageError) as raised:
        rsm._read_small("s3://b/k", None, "tieredStorageConfig")
    assert raised.value.retriable and not isinstance(raised.value, TransformedSegmentError)
    monkeypatch.setattr(_storage, "_resolve", lambda location, options: (_FailingStorage(DENIED), "k"))
    with pytest.raises(TransformedSegmentError, match="tieredStorageConfig: s3://b/k: "):
        rsm._read_small("s3://b/k", None, "tieredStorageConfig")
