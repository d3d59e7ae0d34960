"""The keyed state (kafkarec.table, view=latest) of logs a real broker wrote, against the
history the producers saw acknowledged (tests/support/brokers/produce.py's ``acked``).

The compacted topics were rewritten by Kafka's log cleaner (records removed, tombstones kept
until their delete horizon, then removed too); the state of the cleaned log must be the state
of the uncompacted history, which is what compaction promises.  Transactional topics are
checked with both isolation levels, the retention-trimmed topic from its log start on."""
import pytest

from kafkarec import table
from support.brokers.readers import kafkarec_rows

pytestmark = [pytest.mark.broker, pytest.mark.slow]


def _model(acked, *, read_committed, log_start=None):
    """``{(topic, partition): {key: (offset, value)}}`` from acknowledged records."""
    state: dict = {}
    for a in sorted(acked, key=lambda a: (a.topic, a.partition, a.offset)):
        part = state.setdefault((a.topic, a.partition), {})
        if (read_committed and not a.committed) or a.key is None:
            continue
        if log_start is not None and a.offset < log_start.get((a.topic, a.partition), 0):
            continue
        if a.value is None:
            part.pop(a.key, None)
        else:
            part[a.key] = (a.offset, a.value)
    return state


def _state(result):
    out: dict = {}
    for r in result.table.select(["topic", "partition", "key", "value", "offset"]).to_pylist():
        part = out.setdefault((r["topic"], r["partition"]), {})
        assert r["key"] not in part, (r["topic"], r["partition"], r["key"])
        part[r["key"]] = (r["offset"], r["value"])
    return out


@pytest.mark.parametrize("read_committed", [False, True])
def test_state_of_the_broker_log_is_the_state_of_the_acked_history(broker_data, stopped_log_dir, read_committed):
    rows = kafkarec_rows(stopped_log_dir, {"retention"}, False)
    log_start = {("retention", 0): min(r[2] for r in rows)}
    assert log_start[("retention", 0)] > 0                    # retention deleted the oldest segments
    want = _model(broker_data.acked, read_committed=read_committed, log_start=log_start)
    got = _state(table.latest(stopped_log_dir, topics=broker_data.data_topics(), read_committed=read_committed))
    for tp, expected in want.items():
        assert got.get(tp, {}) == expected, tp
    assert set(got) <= set(want)
    # the cleaned topics: fewer records in the log than were written, the same state
    for topic in ("compacted", "compacted-expired"):
        written = sum(1 for a in broker_data.acked if a.topic == topic)
        kept = len(kafkarec_rows(stopped_log_dir, {topic}, False))
        assert kept < written and got[(topic, 0)], topic



@pytest.mark.parametrize("topic", ["compacted", "compacted-expired"])
def test_every_cut_the_cleaned_log_supports(broker_data, stopped_log_dir, topic):
    """The state as of every cut from the cleaner's checkpoint (its first dirty offset: the
    records it removed were all superseded before it) to the log's end is the state of the
    uncompacted history before that cut."""
    import os
    from support.brokers.produce import _checkpoint
    cleaned = _checkpoint(os.path.join(stopped_log_dir, "cleaner-offset-checkpoint"))[(topic, 0)]
    acked = [a for a in broker_data.acked if a.topic == topic]
    end = max(a.offset for a in acked) + 1
    assert 0 < cleaned <= end
    cuts = sorted(set(range(cleaned, end + 1, 3)) | {cleaned, end})
    for cut in cuts:
        want = _model([a for a in acked if a.offset < cut], read_committed=False)[(topic, 0)]
        got = _state(table.latest(stopped_log_dir, topics=[topic], end_offset=cut)).get((topic, 0), {})
        assert got == want, cut
    # before the checkpoint the cleaned log no longer holds the state: the test would notice
    early = _model([a for a in acked if a.offset < cleaned // 2], read_committed=False)[(topic, 0)]
    got = _state(table.latest(stopped_log_dir, topics=[topic], end_offset=cleaned // 2)).get((topic, 0), {})
    assert got != early


@pytest.mark.parametrize("topic", ["compacted", "compacted-expired"])
def test_the_stopped_copy_of_a_cleaned_topic_is_final(stopped_log_dir, topic):
    """The copy's cleaned topics hold nothing the cleaner has yet to clean: their checkpoint is the
    base of the active segment.  A dirty tail left below it is cleaned by the live broker after the
    copy (snapshot_stopped restarts it), and the live consumer, every broker test's oracle, would
    no longer read what the copy holds."""
    import os
    from support.brokers.produce import _checkpoint, active_segment_base
    cleaned = _checkpoint(os.path.join(stopped_log_dir, "cleaner-offset-checkpoint"))[(topic, 0)]
    assert cleaned == active_segment_base(stopped_log_dir, topic)
