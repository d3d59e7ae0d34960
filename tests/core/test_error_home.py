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
        # what kafkarec raises, and what it warns about (Python's warnings: IndexWarning)
        assert issubclass(c, (errors.KafkaRecError, errors.KafkaRecWarning)), c
        assert getattr(kafkarec, c.__name__) is c, c
        assert c.__name__ in kafkarec.__all__


@pytest.mark.parametrize("module, name", [
    ("kafkarec.protobuf", "ProtobufSchemaError"), ("kafkarec.jsonschema", "JsonSchemaError"),
    ("kafkarec.registry", "RegistryError"), ("kafkarec.cli.main", "UsageError"),
])
def test_old_import_paths_give_the_same_class(module, name):
    import importlib
    assert getattr(importlib.import_module(module), name) is getattr(errors, name)


def test_the_typed_row_error_is_worded_in_one_place():
    """kafkarec._core.value_problem words every typed row's error (Avro, Protobuf, JSON Schema, the
    registry); no Python module spells the template again."""
    import pathlib
    import re
    from kafkarec._core import value_problem
    assert value_problem(7, "why") == "at byte 7 of the value: why"
    root = pathlib.Path(kafkarec.__file__).parent
    spelled = [str(p.relative_to(root)) for p in root.rglob("*.py")
               if re.search(r"at byte (\{[^}]*\}|\d+) of the value", p.read_text())]
    assert spelled == []


@pytest.mark.parametrize("module, function, args, message", [
    ("kafkarec.table", "parse_view", ("newest",), "view must be one of log, latest"),
    ("kafkarec.cdc", "parse_cdc", ("maxwell",), "cdc must be one of debezium"),
    ("kafkarec.scan.config", "normalize_mode", ("LENIENT",), "mode must be one of"),
    ("kafkarec._option_text", "text_bool", ("strict", "yes"), "option strict must be true or false"),
])
def test_an_option_given_as_text_is_refused_with_a_usage_error(module, function, args, message):
    """The one rule for options given as text (kafkarec._option_text) refuses with kafkarec's
    UsageError, still a ValueError: view, cdc and mode were bare ValueErrors."""
    import importlib
    with pytest.raises(errors.UsageError, match=message) as refused:
        getattr(importlib.import_module(module), function)(*args)
    assert isinstance(refused.value, ValueError)
