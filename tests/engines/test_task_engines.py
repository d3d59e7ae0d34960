"""The engines whose tasks each read a piece (Ray, Daft, Dask) take the scan's options through one
rule (:func:`kafkarec.engines.task_scan_options`): a thread a task, and the classic layout."""
import importlib

import pytest

from kafkarec.engines import task_scan_options
from kafkarec.errors import UsageError


def test_a_thread_a_task_unless_given_and_the_callers_options_untouched():
    given = {"isolation_level": "read_committed"}
    assert task_scan_options(given, "x") == {"threads": 1, "isolation_level": "read_committed"}
    assert given == {"isolation_level": "read_committed"}
    assert task_scan_options({"threads": 3}, "x")["threads"] == 3
    assert task_scan_options({"value_layout": "copy"}, "x")["value_layout"] == "copy"


@pytest.mark.parametrize("module, make", [
    ("ray", lambda m, root: m.KafkaLogDatasource(root, value_layout="view")),
    ("daft", lambda m, root: m.KafkaLogSource(root, value_layout="view")),
    ("dask", lambda m, root: m.read_log(root, value_layout="view")),
])
def test_the_view_layout_is_refused_where_tasks_filter_with_pyarrow(module, make, long_log):
    # (pyarrow has no filter or take kernel for binary_view: a pushed predicate would fail in a task)
    pytest.importorskip(module)
    adapter = importlib.import_module(f"kafkarec.engines.{module}")
    with pytest.raises(UsageError, match="binary_view"):
        make(adapter, long_log[0])
