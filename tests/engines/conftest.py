"""The logs the engine adapters' tests read (tests/support/logs/engine_logs.py)."""
import pytest

from kafkarec.errors import KafkaRecError
from kafkarec.scan import LogScan


@pytest.fixture(scope="module")
def long_log(tmp_path_factory):
    """``(root, partition folder)`` of :func:`support.logs.engine_logs.long_partition`."""
    from support.logs.engine_logs import long_partition
    root = str(tmp_path_factory.mktemp("long"))
    return root, long_partition(root)


@pytest.fixture(scope="module")
def keyed_log(tmp_path_factory):
    """``(root, partitions)`` of :func:`support.logs.engine_logs.keyed_topic`: topic ``keyed``, its
    records placed by murmur2."""
    from support.logs.engine_logs import keyed_topic
    root = str(tmp_path_factory.mktemp("keyed"))
    return root, len(keyed_topic(root))


@pytest.fixture(scope="module")
def log_root(tmp_path_factory):
    """Every codec, legacy messages, transactions (a commit and an abort), compaction, headers
    (tests/support/logs/logdir.py's :func:`build_log_dir`)."""
    from support.logs.logdir import build_log_dir
    root = tmp_path_factory.mktemp("logs")
    build_log_dir(str(root))
    return str(root)


@pytest.fixture(params=["truncated", "corrupt"])
def damaged(request, log_root, tmp_path):
    """``(root, error)``: a copy of ``log_root`` with one segment damaged, and the error
    :class:`kafkarec.scan.LogScan` reading it raises (every engine must raise the same)."""
    from support.logs.engine_logs import damaged_copy
    root = damaged_copy(log_root, str(tmp_path / "damaged"), request.param)
    with pytest.raises(KafkaRecError) as error:
        LogScan(root).to_table()
    return root, error.value
