"""Every error kafkarec raises is a KafkaRecError and keeps its builtin base, so a caller
catches it without knowing kafkarec (``except ValueError`` / ``except OSError``)."""
from __future__ import annotations

import ast
import inspect
import os
import pickle

import pytest

import kafkarec
from kafkarec import errors

ROOT = os.path.dirname(os.path.dirname(kafkarec.__file__))

# name -> the builtin base it keeps
EXPECTED = {
    "DecodeError": ValueError, "TruncatedError": ValueError, "CorruptBatchError": ValueError,
    "InvalidRecordError": ValueError, "ChecksumError": ValueError, "UnsupportedCodecError": ValueError,
    "DecompressionError": ValueError, "DecompressionLimitError": ValueError,
    "CodecUnavailableError": ImportError, "MissingExtraError": ImportError, "EncodeError": ValueError,
    "InternalRecordError": ValueError, "UnknownRecordTypeError": ValueError,
    "SideFileError": ValueError, "CorruptIndexError": ValueError, "CorruptSnapshotError": ValueError,
    "CheckpointError": ValueError, "TransformedSegmentError": ValueError, "SelectionError": ValueError,
    "RemoteObjectError": ValueError, "PropertiesError": ValueError,
    "StorageError": OSError,
    "AvroSchemaError": ValueError, "SchemaResolutionError": ValueError, "AvroDecodeError": ValueError,
    "ProtobufSchemaError": ValueError, "ProtobufDecodeError": ValueError, "JsonSchemaError": ValueError,
    "RegistryError": ValueError, "UsageError": ValueError, "ColumnOverflowError": OverflowError,
    "BackfillError": ValueError, "ConnectError": RuntimeError, "MalformedBatchError": ValueError,
    "OffsetOrderError": ValueError,
    "LayoutError": ValueError, "BrokerError": OSError, "RestoreError": ValueError, "LogDirWriteError": ValueError,
    "HandOffRefusedError": RuntimeError, "HandOffOverlapError": RuntimeError, "ConnectorFailedError": RuntimeError,
}
# what kafkarec warns about: Python's warnings, UserWarning kept as their builtin base
WARNINGS = ("KafkaRecWarning", "IndexWarning")


@pytest.mark.parametrize("name, base", sorted(EXPECTED.items()))
def test_each_error_is_a_kafkarec_error_and_its_builtin(name, base):
    cls = getattr(errors, name)
    assert issubclass(cls, errors.KafkaRecError) and issubclass(cls, base)
    assert getattr(kafkarec, name) is cls and name in kafkarec.__all__


def test_the_hierarchy_is_complete():
    assert set(errors.__all__) == set(EXPECTED) | {"KafkaRecError"} | set(WARNINGS)


@pytest.mark.parametrize("name", WARNINGS)
def test_each_warning_is_a_kafkarec_warning_and_a_user_warning(name):
    cls = getattr(errors, name)
    assert issubclass(cls, errors.KafkaRecWarning) and issubclass(cls, UserWarning)
    assert getattr(kafkarec, name) is cls and name in kafkarec.__all__


def test_log_modules_raise_the_same_classes():
    from kafkarec.log import layout, names, selection, sidefiles, storage
    assert names.SideFileError is sidefiles.SideFileError is errors.SideFileError
    assert sidefiles.CorruptIndexError is errors.CorruptIndexError
    assert layout.TransformedSegmentError is errors.TransformedSegmentError
    assert selection.SelectionError is errors.SelectionError
    assert storage.StorageError is errors.StorageError


def _error_classes(path):
    """Exception classes defined in a source file (any class whose name ends in Error)."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    return [n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name.endswith("Error")]


def test_no_error_class_outside_errors_py_escapes_the_hierarchy():
    """A new ``class XError`` anywhere in kafkarec/ must be a KafkaRecError too."""
    import importlib
    for dirpath, _, files in os.walk(os.path.join(ROOT, "kafkarec")):
        for f in files:
            if not f.endswith(".py") or f == "errors.py":
                continue
            path = os.path.join(dirpath, f)
            names = _error_classes(path)
            if not names:
                continue
            mod = importlib.import_module(os.path.relpath(path, ROOT)[:-3].replace(os.sep, "."))
            for name in names:
                cls = getattr(mod, name)
                assert inspect.isclass(cls) and issubclass(cls, errors.KafkaRecError), (path, name)


def test_backfill_error_carries_its_table_and_partition_across_pickling():
    e = errors.BackfillError("lake.orders", "a backfill of [0, 9) is there", topic="orders", partition=2)
    again = pickle.loads(pickle.dumps(e))
    assert str(again) == "lake.orders, orders-2: a backfill of [0, 9) is there"
    assert (again.table, again.topic, again.partition, again.reason) == ("lake.orders", "orders", 2,
                                                                         "a backfill of [0, 9) is there")


def test_layout_error_carries_its_record_across_pickling():
    e = errors.LayoutError("redpanda", "timestamp 4611686018427387904 ms has no microseconds in a long",
                           topic="orders", partition=2, offset=7)
    again = pickle.loads(pickle.dumps(e))
    assert str(again) == ("orders-2 offset 7: timestamp 4611686018427387904 ms has no microseconds in a long "
                          "(layout redpanda)")
    assert (again.layout, again.topic, again.partition, again.offset) == ("redpanda", "orders", 2, 7)


def test_broker_error_carries_its_cluster_and_partition_across_pickling():
    e = errors.BrokerError("localhost:9", "ListOffsets of t-0: Local: Timed out", topic="t", partition=0)
    again = pickle.loads(pickle.dumps(e))
    assert str(again) == "broker localhost:9: ListOffsets of t-0: Local: Timed out"
    assert (again.bootstrap, again.topic, again.partition, again.reason) == (
        "localhost:9", "t", 0, "ListOffsets of t-0: Local: Timed out")


def test_connect_error_carries_the_call_status_and_answer_across_pickling():
    e = errors.ConnectError("sink", "PATCH /connectors/sink/offsets", "the worker refused the call", 400,
                            "Connectors must be in the STOPPED state")
    again = pickle.loads(pickle.dumps(e))
    assert str(again) == ("connector sink: PATCH /connectors/sink/offsets: the worker refused the call (HTTP 400): "
                          "Connectors must be in the STOPPED state")
    assert (again.connector, again.request, again.status, again.body) == (
        "sink", "PATCH /connectors/sink/offsets", 400, "Connectors must be in the STOPPED state")
    assert str(errors.ConnectError("sink", "GET /connectors/sink", "the worker did not answer")).endswith(
        "(no answer)")


def test_storage_error_carries_its_uri_across_pickling():
    e = errors.StorageError("s3://b/k: access denied", "s3://b/k")
    again = pickle.loads(pickle.dumps(e))
    assert str(again) == "s3://b/k: access denied" and again.uri == "s3://b/k"
    assert isinstance(again, OSError)


def test_remote_object_error_survives_pickling():
    """A Spark task's error reaches its driver pickled: RemoteObjectError comes back whole (it
    failed with a TypeError, its keyword-made fields missing)."""
    import pickle
    from kafkarec.errors import RemoteObjectError
    for chunk in (None, 3):
        err = RemoteObjectError("s3://b/o.log", "tag does not verify", chunk=chunk)
        back = pickle.loads(pickle.dumps(err))
        assert type(back) is RemoteObjectError and str(back) == str(err)
        assert (back.object, back.reason, back.chunk) == ("s3://b/o.log", "tag does not verify", chunk)
