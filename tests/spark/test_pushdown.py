"""DataFrame filters pushed into ``format("kafkarec")`` (issue 42 item 5), the user's way: on bare
executors with ``--py-files`` (the session's one user-way application, jobs/pushdown_job.py), with
``spark.sql.python.filterPushdown.enabled`` on.  Each query gives the rows the data say, the rows
Spark gives filtering every row itself (pushdown off) and, for an offset slice, the rows of the
options' bounds; a 1% slice by offset (``partition = 0 AND offset >= A AND offset < B``) or by
time (``timestamp >= '<local time>'`` in the session time zone) reads at most 2% of the segment
bytes; ``key = X'..'`` gives that key's rows, and with ``partitioner=murmur2`` only those of the
partition murmur2 names, reading at most 1/2 + 1% of the bytes; the census over Spark is the local
census; every process's reads counted by kafkarec.log.storage (``KAFKAREC_BYTES_READ_DIR``).  The
same queries run over Spark Connect in tests/spark/test_connect.py."""
from __future__ import annotations

import os

import pytest

from support.spark import spark_helpers as H
from support.logs import events_log as E
from support.spark.user_app import UserAppJob

pytestmark = [pytest.mark.spark, pytest.mark.slow]

_why = H.spark_available()
if _why:
    pytest.skip(_why, allow_module_level=True)


def _prepare(request, work):
    root = str(work / "logs")
    E.build(root)
    counter = work / "bytes-read"
    counter.mkdir()
    return [root, str(counter)], root


JOB = UserAppJob("pushdown", os.path.join(H.ROOT, "tests", "spark", "jobs", "pushdown_job.py"), _prepare)


def test_pushed_filters_read_only_their_slices(user_app):
    result, root = user_app.outcome(JOB)
    E.check(result, root)


def test_the_census_over_spark_is_the_local_census(user_app):
    """``spark_udfs.census``: a task per topic-partition, the rows put together on the driver; the
    document is the local census's, figure for figure (as of the same moment)."""
    import json
    from kafkarec.census import census
    result, root = user_app.outcome(JOB)
    got = result["census"]
    want = json.loads(json.dumps(census(root, as_of_ms=got["as_of_ms"])))
    assert [(p["topic"], p["partition"]) for p in got["partitions"]] == [("events", 0), ("events", 1)]
    assert got == want
