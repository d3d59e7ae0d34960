"""Typed values on a stream, the user's way: a bare Python (pyspark, pyarrow, pandas only),
``spark-submit --py-files <kafkarec wheel>`` (jobs/typed_stream_job.py), two applications (the
second restarts from the checkpoint).  The log directory grows while the query reads it:
``_schemas-0`` (the registry's topic, as Confluent's registry writes it) and ``orders-0``,
whose values confluent-kafka's own AvroSerializer wrote (id prefix and header ids); a new
schema version is registered mid-stream, a bad payload, a tombstone and a truncated payload
arrive, a new segment starts, and more records come while the query is down.

Checked against the serializer's input: every record reaches the Parquet file sink exactly
once, typed with the reader schema fixed when its application started (v1 in the first, the
later latest version v2 after the restart; docs/typed-values.md, "Streams"), records written
with the schema registered mid-stream resolved to v1 (the registry read again when
``_schemas`` grew), bad payloads as error rows, FAILFAST naming topic, partition, offset and
reason.  On the session's standalone cluster (its bare Python 3.12 and the cp312 wheel;
support/spark/spark_cluster.py).  The two applications are tests/spark/test_streaming_user.py's too
(support/spark/stream_apps.py: both streams run in each)."""
from __future__ import annotations

import os

import pytest

from support.spark import spark_helpers as H

pytestmark = [pytest.mark.spark]

_why = H.spark_available()
if _why:
    pytest.skip(_why, allow_module_level=True)

from support.registry.typed_stream_log import V1_FIELDS  # noqa: E402


def _as_read(rec, reader_v2, names):
    """The input record as the reader schema gives it; once the sink holds both applications'
    files (read with mergeSchema), a row of the first (v1 reader) has null for v2's fields."""
    out = {k: rec[k] for k in V1_FIELDS}
    if reader_v2:
        out["note"] = rec.get("note")
        out["lines"] = rec.get("lines", [])
    else:
        assert set(names) - set(V1_FIELDS) <= {"note", "lines"}
        out.update({k: None for k in names if k not in V1_FIELDS})
    return out


@pytest.fixture(scope="module")
def runs(stream_apps_cluster):
    apps = stream_apps_cluster
    return apps.typed_log, apps.typed_ids, apps.result("typed", 1), apps.result("typed", 2)


def _check_rows(rows, log, ids, phases):
    want = {o: e for o, e in log.expected.items() if e[3] in phases}
    got = [r["offset"] for r in rows]
    assert len(got) == len(set(got)), "a record was written twice"
    assert sorted(got) == sorted(want), (sorted(got), sorted(want))
    value_ids = ids["orders-value"]
    for r in rows:
        key, rec, err, phase = want[r["offset"]]
        assert r["topic"] == "orders" and r["partition"] == 0
        assert r["key"] == key, r
        if err is None:
            assert r["_corrupt_record"] is None, r
            if rec is None:                                   # the tombstone
                assert r["value"] is None and r["valueSchemaId"] is None
            else:
                assert H.plain(r["value"]) == H.plain(_as_read(rec, phase != 1, r["value"])), r
                assert r["valueSchemaId"] == value_ids[0 if "note" not in rec else 1], r
        else:
            assert r["value"] is None and err in r["_corrupt_record"], r


def test_first_application_reads_each_record_once_with_the_start_schema(runs):
    log, ids, r1, _ = runs
    assert r1["exceptions"] == []
    assert len(ids["orders-value"]) == 2
    _check_rows(r1["rows"], log, ids, {1})
    # the header id (__value_schema_id, magic 1 + GUID) of a schema registered mid-stream
    with_header = [r for r in r1["rows"] if r["headers"]]
    assert [r["valueSchemaId"] for r in with_header] == [ids["orders-value"][1]]
    names = [f["name"] for f in r1["schema"]["fields"]]
    assert {"key", "value", "headers", "keySchemaId", "valueSchemaId", "_corrupt_record"} <= set(names)
    # the columns stayed v1's although v2 was registered (and read) mid-stream
    assert _value_fields(r1) == V1_FIELDS


def test_failfast_names_topic_partition_offset_and_reason(runs):
    log, _, r1, _ = runs
    bad = min(o for o, e in log.expected.items() if e[2])
    msg = r1["failfast"]
    assert msg and f"topic orders partition 0 offset {bad}" in msg and "Unknown magic byte" in msg, msg


def test_restart_from_the_checkpoint_reads_the_rest_once_with_the_new_latest(runs):
    log, ids, _, r2 = runs
    assert r2["exceptions"] == []
    _check_rows(r2["rows"], log, ids, {1, "between", 2})
    assert _value_fields(r2) == V1_FIELDS + ["note", "lines"]


def test_bad_records_are_kept_whole_once_across_the_restart(runs):
    """badRecordsPath on the stream: every record that failed (both applications) is in the
    quarantine log once, with its original offset, timestamp, key and value bytes, headers and the
    reason _corrupt_record gave; the quarantine reads back with kafkarec as any log directory."""
    import glob
    import kafkarec
    from kafkarec.log.quarantine import REASON_HEADER
    log, ids, r1, r2 = runs
    root = log.work
    files = sorted(glob.glob(os.path.join(root, "bad", "orders-0", "*.log")))
    assert files, os.listdir(os.path.join(root, "bad")) if os.path.isdir(os.path.join(root, "bad")) else root
    kept = {}
    for f in files:
        for batch in kafkarec.iter_batches(open(f, "rb").read()):
            assert batch.crc_valid
            for rec in batch:
                assert rec.offset not in kept, f"offset {rec.offset} kept twice"
                kept[rec.offset] = rec
    original = {}
    for f in sorted(glob.glob(os.path.join(root, "logs", "orders-0", "*.log"))):
        for batch in kafkarec.iter_batches(open(f, "rb").read()):
            for rec in batch:
                original[rec.offset] = rec
    failed = {r["offset"]: r["_corrupt_record"] for r in r2["rows"] if r["_corrupt_record"]}
    assert failed and sorted(kept) == sorted(failed)
    for o, rec in kept.items():
        src = original[o]
        assert (rec.timestamp, rec.key, rec.value) == (src.timestamp, src.key, src.value)
        headers = list(rec.headers)
        assert headers[:len(src.headers)] == list(src.headers)
        assert dict(headers[len(src.headers):])[REASON_HEADER].decode() == failed[o]


def _value_fields(result):
    value = next(f["type"] for f in result["schema"]["fields"] if f["name"] == "value")
    return [f["name"] for f in value["fields"]]

