"""Every error class kafkarec raises lives in kafkarec.errors, is exported by the package, and
subclasses KafkaRecError; the modules that raise them re-export the same objects."""
from __future__ import annotations

import inspect

import pytest

import kafkarec
from kafkarec import errors


def test_every_error_class_is_in_errors_and_exported():
    classes = [c for _, c in inspect.getmembers(errors, inspect.isclass) if c.__module__ == errors.__name__]
    assert classes and sorted(c.__name__ for c in classes) == sorted(errors.__all__)
    for c in classes:
        assert issubclass(c, errors.KafkaRecError), c
        assert getattr(kafkarec, c.__name__) is c, c
        assert c.__name__ in kafkarec.__all__


@pytest.mark.parametrize("module, name", [
    ("kafkarec.protobuf", "ProtobufSchemaError"), ("kafkarec.jsonschema", "JsonSchemaError"),
    ("kafkarec.registry", "RegistryError"), ("kafkarec.cli.main", "UsageError"),
])
def test_old_import_paths_give_the_same_class(module, name):
    import importlib
    assert getattr(importlib.import_module(module), name) is getattr(errors, name)
