"""The logs the engine adapters' tests read (tests/support/engine_logs.py)."""
import pytest


@pytest.fixture(scope="module")
def log_root(tmp_path_factory):
    """Every codec, legacy messages, transactions (a commit and an abort), compaction, headers."""
    from logdir import build_log_dir
    root = str(tmp_path_factory.mktemp("logs"))
    build_log_dir(root)
    return root


@pytest.fixture(scope="module")
def long_log(tmp_path_factory):
    """``(root, partition folder)`` of :func:`support.engine_logs.long_partition`."""
    from support.engine_logs import long_partition
    root = str(tmp_path_factory.mktemp("long"))
    return root, long_partition(root)
