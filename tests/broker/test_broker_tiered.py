"""The session's KRaft broker runs tiered storage (Kafka's LocalTieredStorage, from
kafka-storage's test jar): it copies closed segments of the ``tiered`` topic (tests/broker/
tiered_topic.py, written with the other topics) to its remote storage, records each copy in
``__remote_log_metadata`` and deletes the local segments past ``local.retention.bytes``.
kafkarec reads the remote copies (LocalTieredStorage's layout), replays the real remote log
metadata to know which copies are live, and stitches remote and local into one history that
holds every acked record exactly once, in Python, on the command line and in Spark.  The
files read are the session's copy of the broker after a clean shutdown (``stopped_broker``);
Spark's Kafka source reads the live broker."""
from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys

import pytest

from support.brokers.readers import planned_rows
from support.brokers.tiered_topic import RECORDS, TOPIC, copy_with_gap, live_remote_segments

pytestmark = [pytest.mark.broker, pytest.mark.slow]


@pytest.fixture(scope="module")
def tiered(broker_data, stopped_broker):
    """``(log_dir, remote_root, acked)``: the broker's copy after a clean shutdown."""
    return stopped_broker.log_dir, stopped_broker.remote_dir, broker_data.tiered_acked


def _rows(lay, st):
    from kafkarec.log import selection
    return planned_rows(st, selection.parse_selection({"topics": TOPIC}), lay=lay,
                        columns=("offset", "key", "value")).get(TOPIC, [])


def _acked(acked, offsets=None):
    rows = sorted((a.offset, a.key, a.value) for a in acked)
    return [{"offset": o, "key": k, "value": v} for o, k, v in rows if offsets is None or o in offsets]


def test_the_remote_log_metadata_names_every_copy_live(tiered):
    from kafkarec.log import layout, remote_metadata, storage
    log_dir, remote, _ = tiered
    meta = remote_metadata.load(log_dir)
    assert meta.problems == []
    st, root = storage.resolve(remote, {"remoteLogMetadata": log_dir})
    lay = layout.scan(st, root)
    (part,) = [p for p in lay.partitions if p.topic == TOPIC]
    ids = {s.segment_id for s in part.segments + part.copies}
    assert ids and ids <= {sid for sid, seg in meta.segments.items() if seg.live}
    for s in part.segments:
        m = meta.state(s.segment_id)
        assert (m.topic, m.partition, m.start_offset) == (TOPIC, 0, s.base_offset)
        assert m.topic_id == part.topic_id
    # a copy the broker was making when it stopped is not live, and not read
    assert all(why.endswith("in state COPY_SEGMENT_STARTED (__remote_log_metadata), not COPY_SEGMENT_FINISHED")
               for _, why in lay.not_live)


def test_the_remote_copies_hold_the_acked_records(tiered):
    from kafkarec.log import layout, storage
    log_dir, remote, acked = tiered
    st, root = storage.resolve(remote, {"remoteLogMetadata": log_dir})
    rows = _rows(layout.scan(st, root), st)
    assert rows and rows == _acked(acked, {r["offset"] for r in rows})
    assert rows[0]["offset"] == 0


def test_one_history_from_remote_and_local(tiered):
    from kafkarec.log import layout
    log_dir, remote, acked = tiered
    lay, gaps = layout.scan_history(log_dir, remote)
    assert gaps == []
    (part,) = [p for p in lay.partitions if p.topic == TOPIC]
    kinds = {s.storage is not None for s in part.segments}
    assert kinds == {True, False}                   # both remote and local segments are read
    assert _rows(lay, lay.storage) == _acked(acked)
    # the local log alone starts later: the remote copies are what holds the beginning
    alone, _ = layout.scan_history(log_dir)
    assert _rows(alone, alone.storage)[0]["offset"] > 0


def test_a_copy_the_metadata_does_not_record_is_not_read(tiered, tmp_path):
    from kafkarec.log import layout
    log_dir, remote, acked = tiered
    copy = str(tmp_path / "remote")
    shutil.copytree(remote, copy)
    (first,) = glob.glob(os.path.join(copy, "**", "00000000000000000000-*.log"), recursive=True)
    stray = first[:-len("-AAAAAAAAAAAAAAAAAAAAAA.log")] + "-strayCopyXXXXXXXXXXXXX.log"
    with open(first, "rb") as src, open(stray, "wb") as dst:
        dst.write(src.read()[:200])                # an unfinished copy of the same offsets
    lay, gaps = layout.scan_history(log_dir, copy)
    assert "__remote_log_metadata does not record remote segment strayCopyXXXXXXXXXXXXX" in [
        why for uri, why in lay.not_live]
    assert _rows(lay, lay.storage) == _acked(acked)


def test_a_gap_between_remote_and_local_is_reported(tiered, tmp_path):
    """Remove the remote copy of an early segment (its offsets are no longer local): they are in
    neither copy, which is data loss, reported where it starts."""
    from kafkarec.log import layout
    log_dir, remote, _ = tiered
    copy = str(tmp_path / "remote")
    victim = copy_with_gap(log_dir, remote, copy)
    first = live_remote_segments(log_dir)[0]
    lay, gaps = layout.scan_history(log_dir, copy)
    offsets = [r["offset"] for r in _rows(lay, lay.storage)]
    assert not set(range(victim.start_offset, victim.end_offset + 1)) & set(offsets)
    assert [(g.topic, g.start) for g in gaps] == [(TOPIC, first.end_offset + 1)]
    assert gaps[0].end > victim.end_offset


def test_the_command_line_reads_one_history(tiered):
    log_dir, remote, acked = tiered
    proc = subprocess.run([sys.executable, "-m", "kafkarec", "dump", log_dir, "--topics", TOPIC,
                           "--tiered-storage", remote, "--json"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    batches = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    records = sum(b.get("count", 0) for b in batches if b.get("type", "batch") == "batch")
    assert records == len(acked)


@pytest.mark.spark
def test_sparks_kafka_source_on_the_broker_gives_the_same_rows(broker_spark):
    """The live broker serves the early offsets from its remote storage to Spark's Kafka source;
    kafkarec's stitched read of the live files gives the same records."""
    live = json.loads((broker_spark / "tiered" / "kafka_source.json").read_text())
    assert live["kafka"] and live["kafkarec"] == live["kafka"]
    assert len(live["kafka"]) == RECORDS and live["kafka"][0][2] == 0


@pytest.mark.spark
def test_spark_reads_one_history_on_bare_executors(tiered, broker_spark):
    """``spark-submit --py-files <wheel>`` from a bare Python: the stitched read is the acked
    records; a gap (tiered_topic.copy_with_gap: the second live remote segment removed) fails
    the read unless failOnDataLoss=false, which reads around it."""
    log_dir, _, acked = tiered
    victim = live_remote_segments(log_dir)[1]
    result = json.loads((broker_spark / "tiered" / "stitched.json").read_text())
    hexed = lambda v: None if v is None else v.hex().upper()  # noqa: E731  (Spark's hex())
    assert result["rows"] == [[a.offset, hexed(a.key), hexed(a.value)] for a in sorted(acked, key=lambda a: a.offset)]
    assert result["tasks"] > 1
    assert result["gap"] and "data loss" in result["gap"] and f"{victim.start_offset}.." in result["gap"]
    lost = set(range(victim.start_offset, victim.end_offset + 1))
    assert result["lenient"] == [a.offset for a in sorted(acked, key=lambda a: a.offset) if a.offset not in lost]
