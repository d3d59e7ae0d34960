"""Spark reads from each partition's log start offset, as the Kafka source does (its ``earliest`` is
the broker's log start): batch reads of local log dirs (memory-mapped slices) and listed ones
(selection options, ``view=latest``), and streams, whose offsets still to read below the log start
are lost data (``failOnDataLoss``).  ``includeDeletedRecords=true`` reads the records
``deleteRecords`` left in the files."""
from __future__ import annotations

import pytest

from support.spark import spark_helpers as H

pytestmark = [pytest.mark.spark]

_why = H.spark_available()
if _why:
    pytest.skip(_why, allow_module_level=True)

from support.logs.log_start import BATCHES, RECORDS, deleted_records_dir  # noqa: E402
from support.spark.streams import stream_reader as _stream  # noqa: E402

END = BATCHES * RECORDS
STARTS = {0: 37, 1: 45, 2: END}


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("spark-log-start") / "logs")
    deleted_records_dir(root, {("t", p): o for p, o in STARTS.items()})
    return root


def _offsets(df):
    t = df.select("partition", "offset").toArrow()
    out: dict = {}
    for p, o in zip(t.column("partition").to_pylist(), t.column("offset").to_pylist()):
        out.setdefault(p, []).append(o)
    return {p: sorted(v) for p, v in out.items()}


def _from(starts):
    return {p: list(range(s, END)) for p, s in starts.items() if s < END}


@pytest.mark.parametrize("options", [{}, {"subscribe": "t"}, {"startingOffsets": "earliest", "subscribe": "t"},
                                     {"readCommitted": "true"}, {"maxPartitionBytes": "300"}])
def test_a_batch_read_starts_at_the_log_start(spark, logs, options):
    assert _offsets(H.read(spark, logs, **options)) == _from(STARTS)


def test_include_deleted_records_reads_the_files(spark, logs):
    assert _offsets(H.read(spark, logs, includeDeletedRecords="true")) == _from({0: 0, 1: 0, 2: 0})


def test_view_latest_starts_at_the_log_start(spark, logs):
    got = _offsets(H.read(spark, logs, view="latest"))
    assert got == {p: list(range(END - 7, END)) for p in (0, 1)}


def _stream_offsets(reader, start, end):
    out = []
    for part in reader.partitions(start, end):
        for rb in reader.read(part):
            out += rb.column(rb.schema.get_field_index("offset")).to_pylist()
    return sorted(out)


def test_a_stream_from_earliest_starts_at_the_log_start(logs):
    reader = _stream(logs, startingOffsets="earliest")
    start = reader.initialOffset()
    assert start == {"t": {str(p): s for p, s in STARTS.items()}}
    end = reader.latestOffset(start, reader.getDefaultReadLimit())
    assert _stream_offsets(reader, start, end) == sorted(list(range(37, END)) + list(range(45, END)))
    deleted = _stream(logs, startingOffsets="earliest", includeDeletedRecords="true")
    assert deleted.initialOffset() == {"t": {"0": 0, "1": 0, "2": 0}}


def test_a_stream_below_the_log_start_is_data_loss(logs):
    from spark_udfs.read.streaming import DataLossError
    below = {"t": {"0": 10, "1": 45, "2": END}}
    end = {"t": {"0": END, "1": END, "2": END}}
    with pytest.raises(DataLossError, match="offsets 10 to 36 are not in the log any more"):
        _stream(logs).partitions(below, end)
    assert _stream_offsets(_stream(logs, failOnDataLoss="false"), below, end) == sorted(
        list(range(37, END)) + list(range(45, END)))
