"""kafkarec.restore without a cluster: the offset map's rule and file, the spec's refusals, the
command line's usage errors (issue 51).  The restore itself runs between two brokers in
tests/broker/test_broker_restore.py."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkarec.errors import RestoreError, UsageError
from kafkarec.restore import OffsetMap, RestoreSpec


def _map():
    m = OffsetMap()
    # source 0..2 restored, 3 aborted, 4 a marker, 5..6 restored, 7 compacted away, 8 restored; H = 10
    for s, t in [(0, 0), (1, 1), (2, 2), (5, 4), (6, 5), (8, 6)]:
        m.add("orders", 0, "orders-b", s, t)
    m.set_end("orders", 0, "orders-b", 10, 8)
    return m


def test_positions_on_holes_map_to_the_next_restored_record():
    m = _map()
    assert [m.target_offset("orders", 0, s) for s in range(12)] == [0, 1, 2, 4, 4, 4, 5, 6, 6, 8, 8, 8]
    assert list(m.pairs("orders", 0)) == [(0, 0), (1, 1), (2, 2), (5, 4), (6, 5), (8, 6)]
    assert m.records("orders", 0) == 6


def test_below_the_log_start_maps_to_the_first_restored_record():
    m = OffsetMap()
    m.add("t", 1, "t", 40, 0)
    m.set_end("t", 1, "t", 41, 2)
    assert m.target_offset("t", 1, 0) == 0 and m.target_offset("t", 1, 41) == 2


def test_the_file_round_trips_in_runs(tmp_path):
    m = _map()
    path = str(tmp_path / "map.csv")
    m.write(path)
    assert open(path).read() == ("source_topic,partition,source_offset,target_topic,target_offset,count\n"
                                 "orders,0,0,orders-b,0,3\n"
                                 "orders,0,5,orders-b,4,2\n"
                                 "orders,0,8,orders-b,6,1\n"
                                 "orders,0,10,orders-b,8,0\n")
    assert OffsetMap.read(path) == m
    with open(path, "a") as fh:
        fh.write("orders,0,x,orders-b,9,1\n")
    with pytest.raises(UsageError, match=r"line 6"):
        OffsetMap.read(path)


def test_a_partition_not_in_the_map_is_a_usage_error():
    with pytest.raises(UsageError, match="clicks-0 is not in the offset map"):
        _map().target_offset("clicks", 0, 3)


def test_records_must_be_added_in_order():
    m = _map()
    with pytest.raises(ValueError, match="not after"):
        m.add("orders", 0, "orders-b", 7, 7)


def test_spec_is_read_once_and_refuses_what_cannot_be():
    spec = RestoreSpec.of("logs", "b:9092", topics="a,b", rename=["a=a2"], end_time="2024-01-01T00:00:00Z",
                          restore_id="dr", groups_as_of=5)
    assert spec.topics == ("a", "b") and spec.target_topic("a") == "a2" and spec.target_topic("b") == "b"
    assert spec.end_time == 1704067200000 and spec.groups_as_of == 5
    assert spec.progress_group == "kafkarec-restore.dr"
    assert spec.transactional_id("a2", 3) == "kafkarec-restore.dr.a2-3"
    for kwargs, message in [({"rename": ["a"]}, "expected SOURCE=TARGET"),
                            ({"topics": "a", "rename": ["c=d"]}, "not among the topics"),
                            ({"rename": ["a=x", "b=x"]}, "two source topics"),
                            ({"topics": "bad topic"}, "not a Kafka topic name"),
                            ({"transaction_records": 0}, "at least 1"),
                            ({"target_properties": {"transactional.id": "x"}}, "the restore sets it")]:
        with pytest.raises(UsageError, match=message):
            RestoreSpec.of("logs", "b:9092", **kwargs)


def test_restore_error_names_target_group_and_partition():
    e = RestoreError("b:9092", "past the history", group="g", topic="t", partition=2)
    assert str(e) == "target b:9092, group g, t-2: past the history"
    import pickle
    again = pickle.loads(pickle.dumps(e))
    assert (again.group, again.topic, again.partition, str(again)) == ("g", "t", 2, str(e))


def test_plan_ends_at_the_end_time_and_reads_committed_records_only(tmp_path):
    """The source side without a cluster: partitions, renames, counts, and --end-time's end (the
    last stable offset at the first record at or after T) on kafkarec's sample log."""
    from kafkarec.restore import plan, source
    from kafkarec.sample import generate
    logs = str(tmp_path / "logs")
    generate(logs, seed=7, scale=1)
    whole = plan(RestoreSpec.of(logs, "x:1", topics="payments,orders", rename=["orders=orders-dr"]))
    assert [(p.topic, p.partition, p.target_topic) for p in whole.partitions] == [
        ("orders", 0, "orders-dr"), ("orders", 1, "orders-dr"), ("orders", 2, "orders-dr"), ("payments", 0, "payments")]
    assert whole.topics["orders"].partitions == 3
    payments = [p for p in whole.partitions if p.topic == "payments"][0]
    records = list(source.committed_records(RestoreSpec.of(logs, "x:1"), "payments", 0, payments.start, payments.end))
    offsets = [r.offset for r in records]
    assert offsets == sorted(offsets) and len(offsets) < payments.end      # markers, aborted records: holes
    t = records[len(records) // 2].timestamp
    early = plan(RestoreSpec.of(logs, "x:1", topics="payments", end_time=t)).partitions[0]
    first_at_t = min(r.offset for r in records if r.timestamp >= t)
    assert early.start == payments.start and early.end <= first_at_t < payments.end
    # a rename onto a topic also restored under its own name: two sources, one target partition
    with pytest.raises(UsageError, match="rename: orders and payments would both be restored into payments-0"):
        plan(RestoreSpec.of(logs, "x:1", topics="payments,orders", rename=["orders=payments"]))


def test_pairs_between_skips_the_holes():
    m = _map()
    assert list(m.pairs_between("orders", 0, 2, 9)) == [(2, 2), (5, 4), (6, 5), (8, 6)]
    assert list(m.pairs_between("orders", 0, 3, 5)) == [] and list(m.pairs_between("clicks", 0, 0, 9)) == []


def test_share_state_batches_combine_as_the_share_coordinator_does():
    """Kafka's PersisterStateBatchCombiner: overlapping batches resolved by the higher delivery
    count, then the later state (ARCHIVED 4 over AVAILABLE 0); below the start offset cut; equal
    neighbours joined."""
    from kafkarec.cluster.coordinators import _overlay
    snap = _overlay([], [(10, 19, 0, 1)], 10)
    assert snap == [(10, 19, 0, 1)]
    upd = _overlay(snap, [(12, 13, 4, 1), (15, 15, 0, 2), (17, 18, 0, 1)], 11)
    assert upd == [(11, 11, 0, 1), (12, 13, 4, 1), (14, 14, 0, 1), (15, 15, 0, 2), (16, 19, 0, 1)]
    # a later write of a lower count does not undo an acknowledgement of the same count
    assert _overlay(upd, [(12, 12, 0, 1)], 11)[1] == (12, 13, 4, 1)
    assert _overlay(upd, [], 16) == [(16, 19, 0, 1)]


def test_maps_of_partitions_restored_apart_join_into_one(tmp_path):
    """Each partition's map (a Spark task's, the command line's one after another) joins the
    whole; the joined map is the one a single run makes, and a partition in both is refused."""
    whole = _map()
    whole.add("orders", 1, "orders-b", 4, 0)
    whole.set_end("orders", 1, "orders-b", 5, 1)
    first, second = OffsetMap(), OffsetMap()
    for s, t in [(0, 0), (1, 1), (2, 2), (5, 4), (6, 5), (8, 6)]:
        first.add("orders", 0, "orders-b", s, t)
    first.set_end("orders", 0, "orders-b", 10, 8)
    second.add("orders", 1, "orders-b", 4, 0)
    second.set_end("orders", 1, "orders-b", 5, 1)
    joined = OffsetMap()
    joined.update(first)
    joined.update(second)
    assert joined == whole
    with pytest.raises(UsageError, match="overlap on orders-1"):
        joined.update(second)


def _overlay_by_offset(batches, new, start):
    """The share coordinator's rule offset by offset: the highest (delivery count, state) of the
    batches holding each offset at or past ``start``, runs of equal ones joined."""
    best = {}
    for f, l, st, c in list(batches) + list(new):
        for o in range(max(f, start), l + 1):
            best[o] = max(best.get(o, (c, st)), (c, st))
    out = []
    for o in sorted(best):
        c, st = best[o]
        if out and out[-1][1] == o - 1 and out[-1][2:] == (st, c):
            out[-1] = (out[-1][0], o, st, c)
        else:
            out.append((o, o, st, c))
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 8), st.sampled_from([0, 2, 4]), st.integers(1, 4)),
                max_size=12),
       st.lists(st.tuples(st.integers(0, 40), st.integers(0, 8), st.sampled_from([0, 2, 4]), st.integers(1, 4)),
                max_size=12),
       st.integers(0, 30))
def test_share_state_overlay_is_the_offset_by_offset_rule(old, new, start):
    from kafkarec.cluster.coordinators import _overlay
    old = [(f, f + n, s, c) for f, n, s, c in old]
    new = [(f, f + n, s, c) for f, n, s, c in new]
    assert _overlay(old, new, start) == _overlay_by_offset(old, new, start)


def test_share_state_overlay_of_a_full_window_is_quick():
    """2,000 single-record batches (a full window of acquired records): one sweep, not a scan of
    every batch per offset (which took 0.27 s a call, once per ShareUpdate)."""
    import gc
    import time
    from kafkarec.cluster.coordinators import _overlay
    window = [(o, o, 2 if o % 3 else 0, 1) for o in range(2000)]
    updates = [(o, o, 4, 2) for o in range(0, 2000, 7)]
    # this thread's CPU alone, without a collection: process_time counted the test process's
    # other threads too (a fresh clone's run once measured 0.45 s for a call of ~6 ms)
    gc.disable()
    try:
        t0 = time.thread_time()
        out = _overlay(window, updates, 0)
        took = time.thread_time() - t0
    finally:
        gc.enable()
    assert took < 0.2
    assert sum(l - f + 1 for f, l, _, _ in out) == 2000


def test_the_recorded_end_waits_for_the_commit_marker(monkeypatch):
    """commit_transaction returns before the marker reaches the partition: the target's last stable
    offset still reads the transaction's first offset (0 here), then the marker's own (7: the high
    watermark not yet past it).  The end recorded in the offset map is
    the one past the last restored record; one that never moves is a RestoreError, not a wrong map."""
    from kafkarec.errors import RestoreError
    from kafkarec.restore import produce, target
    from kafkarec.restore.offsets import OffsetMap
    from kafkarec.restore.source import SourcePartition
    part = SourcePartition("orders", 0, 0, 9, 9, "orders-dr")
    omap = OffsetMap()
    omap.add("orders", 0, "orders-dr", 2, 0, count=7)           # target offsets 0..6, marker at 7
    # 7: the marker appended, the last stable offset still held to a high watermark not yet past it
    # (seen on a broker: an end of 1 after a one-record transaction)
    answers = iter([0, 0, 7, 8])
    monkeypatch.setattr(target, "ends", lambda spec, keys: {keys[0]: next(answers)})
    assert produce._settled_end(RestoreSpec.of("logs", "b:9092"), part, omap) == 8
    monkeypatch.setattr(target, "ends", lambda spec, keys: {keys[0]: 7})
    with pytest.raises(RestoreError, match="stayed at 7, not past the restored record at 6 and its commit marker"):
        produce._settled_end(RestoreSpec.of("logs", "b:9092", timeout=0.2), part, omap)
    empty = OffsetMap()                                          # nothing restored: the end as it is
    assert produce._settled_end(RestoreSpec.of("logs", "b:9092"), part, empty) == 7


class _SharePartition:
    """A share-partition as KIP-932's broker keeps one (kafka.server.share.SharePartition), enough
    for :func:`kafkarec.restore.shares.acknowledge`: records from the start offset, each AVAILABLE,
    ACQUIRED, ACKNOWLEDGED or ARCHIVED, a fetch acquiring the available ones in offset order from the
    lowest (a released record first), each acquisition one more delivery."""

    def __init__(self, start, end, per_fetch):
        self.state = {o: "AVAILABLE" for o in range(start, end)}
        self.deliveries = {o: 0 for o in range(start, end)}
        self.per_fetch = per_fetch


class _FakeShareConsumer:
    def __init__(self, parts):
        self.parts, self.pending, self.closed = parts, [], False

    def subscribe(self, topics):
        self.topics = topics

    def poll(self, timeout):
        import confluent_kafka as ck
        out = []
        for (topic, p), sp in sorted(self.parts.items()):
            for o in sorted(o for o, s in sp.state.items() if s == "AVAILABLE")[:sp.per_fetch]:
                sp.state[o] = "ACQUIRED"
                sp.deliveries[o] += 1
                out.append(_Msg(topic, p, o))
        self.acquired = out
        assert ck.AcknowledgeType.ACCEPT      # the real enum is what is passed
        return out

    def acknowledge(self, m, how):
        self.pending.append((m, how))

    def commit_sync(self, timeout):
        import confluent_kafka as ck
        after = {ck.AcknowledgeType.ACCEPT: "ACKNOWLEDGED", ck.AcknowledgeType.REJECT: "ARCHIVED",
                 ck.AcknowledgeType.RELEASE: "AVAILABLE"}
        for m, how in self.pending:
            self.parts[(m.topic(), m.partition())].state[m.offset()] = after[how]
        self.pending = []
        return {}

    def close(self):
        self.closed = True


class _Msg:
    def __init__(self, topic, partition, offset):
        self._t, self._p, self._o = topic, partition, offset

    def topic(self):
        return self._t

    def partition(self):
        return self._p

    def offset(self):
        return self._o

    def error(self):
        return None


def _acknowledge(monkeypatch, parts, positions):
    from kafkarec.restore import shares, target
    consumer = _FakeShareConsumer(parts)
    monkeypatch.setattr(target, "client", lambda spec, kind, **conf: consumer)
    spec = RestoreSpec.of("sample-data", "target:9092", timeout=5, share_groups_acknowledge=True)
    return shares.acknowledge(spec, positions), consumer


def test_share_acknowledge_applies_the_source_state_once(monkeypatch):
    pytest.importorskip("confluent_kafka")
    from kafkarec.restore import SharePosition
    # the source: accepted 6 and 9, rejected 7 and 10, 5, 8 and 11-19 available; start offset 5
    pos = SharePosition("g", "t", 0, 5, "t-b", 5, ((6, 6), (7, 7), (9, 9), (10, 10)), (7, 10))
    parts = {("t-b", 0): _SharePartition(5, 20, per_fetch=100)}
    done, consumer = _acknowledge(monkeypatch, parts, [pos])
    assert [(a.accepted, a.rejected, a.released, a.missing, a.status) for a in done] == \
        [((6, 9), (7, 10), 11, (), "done")]
    sp = parts[("t-b", 0)]
    assert {o for o, s in sp.state.items() if s == "AVAILABLE"} == {5, 8} | set(range(11, 20))
    assert sp.state[6] == sp.state[9] == "ACKNOWLEDGED" and sp.state[7] == sp.state[10] == "ARCHIVED"
    assert consumer.closed and set(sp.deliveries.values()) == {1}
    # a re-run: nothing acknowledged twice, the available ones released once more
    again, _ = _acknowledge(monkeypatch, parts, [pos])
    assert [(a.accepted, a.rejected, a.released, a.missing, a.status) for a in again] == \
        [((), (), 11, (6, 7, 9, 10), "done")]
    assert sp.deliveries[5] == 2 and sp.deliveries[6] == 1


def test_share_acknowledge_stops_when_released_records_keep_coming_back(monkeypatch):
    pytest.importorskip("confluent_kafka")
    from kafkarec.restore import SharePosition
    # a window of 3 fetches of 2 records: the released 5 comes back with every fetch
    pos = SharePosition("g", "t", 0, 5, "t-b", 5, ((6, 6), (8, 8), (10, 10)), ())
    parts = {("t-b", 0): _SharePartition(5, 12, per_fetch=2)}
    with pytest.raises(RestoreError, match=r"group g, t-b-0: offset 5 was acquired a third time"):
        _acknowledge(monkeypatch, parts, [pos])
    sp = parts[("t-b", 0)]
    assert sp.state[6] == "ACKNOWLEDGED" and sp.state[5] == "AVAILABLE"     # kept, and released


def test_share_acknowledge_refuses_a_start_offset_not_set(monkeypatch):
    pytest.importorskip("confluent_kafka")
    from kafkarec.restore import SharePosition
    pos = SharePosition("g", "t", 0, 5, "t-b", 5, ((6, 6),), ())
    parts = {("t-b", 0): _SharePartition(0, 12, per_fetch=100)}     # the group starts at the log start
    with pytest.raises(RestoreError, match=r"delivered offset 0, before the translated start offset 5"):
        _acknowledge(monkeypatch, parts, [pos])
    assert set(parts[("t-b", 0)].state.values()) == {"AVAILABLE"}       # nothing acknowledged


def test_share_groups_acknowledge_is_a_spec_option():
    assert RestoreSpec.of("s", "t:1", share_groups_acknowledge=True).share_groups_acknowledge
    assert not RestoreSpec.of("s", "t:1").share_groups_acknowledge


def test_groups_are_taken_as_of_the_end_time_unless_told_otherwise():
    """A restore up to --end-time translates the groups as that history left them; --groups-as-of
    still picks another moment."""
    assert RestoreSpec.of("logs", "b:9092", end_time=1000).groups_as_of == 1000
    assert RestoreSpec.of("logs", "b:9092", end_time=1000, groups_as_of=500).groups_as_of == 500
    assert RestoreSpec.of("logs", "b:9092").groups_as_of is None


def test_a_share_start_offset_past_the_log_when_written_is_refused(tmp_path):
    """A share group's start offset past the log's end as it stood when the share coordinator wrote
    the state (the record's time) is a history that disagrees with itself: refused before anything
    is written, naming the group, the partition and both ends."""
    import os
    import kafkarec
    from kafkarec import internal
    from kafkarec.errors import RestoreError
    from kafkarec.cluster import coordinators
    from kafkarec.restore import plan, shares
    from kafkarec.sample import BASE_TIME, generate
    root = str(tmp_path / "logs")
    generate(root, seed=7, scale=1)
    topic_id = "ioNpEorxLpqqSK7HcI_9ow"

    def segment(folder, records, ts):
        os.makedirs(os.path.join(root, folder))
        b = kafkarec.RecordBatchBuilder()
        for k, v in records:
            b.append(v, key=k, timestamp=ts)
        with open(os.path.join(root, folder, "%020d.log" % 0), "wb") as f:
            f.write(b.build())

    # orders' records carry the broker's append times (LogAppendTime), so the log's end when the
    # state was written is known
    segment("__cluster_metadata-0", [
        internal.encode_record("__cluster_metadata", "TOPIC_RECORD", None, {"name": "orders", "topicId": topic_id}),
        internal.encode_record("__cluster_metadata", "CONFIG_RECORD", None, {
            "resourceType": 2, "resourceName": "orders", "name": "message.timestamp.type",
            "value": "LogAppendTime"})], BASE_TIME)
    # written when the partition held only its first records (the sample's times start at BASE_TIME)
    segment("__share_group_state-0", [internal.encode_record("__share_group_state", "ShareSnapshot",
                                                             {"groupId": "sg", "topicId": topic_id, "partition": 1}, {
        "snapshotEpoch": 0, "stateEpoch": 1, "leaderEpoch": 0, "startOffset": 40, "createTimestamp": BASE_TIME,
        "writeTimestamp": BASE_TIME, "stateBatches": [
            {"firstOffset": 40, "lastOffset": 44, "deliveryState": coordinators.SHARE_AVAILABLE, "deliveryCount": 1}]})],
        BASE_TIME + 100)
    spec = RestoreSpec.of(root, "x:1", topics="orders")
    with pytest.raises(RestoreError, match=r"start offset 40 of orders-1 is outside the history \(its log ended at "
                                           r"\d+ when the state was written") as info:
        shares.checked_share_positions(spec, plan(spec))
    assert "sg" in str(info.value)
    # a CreateTime topic's record times are the producers' clocks: held to the log's end only
    plan_create_time = plan(spec)._replace(append_time_topics=frozenset())
    assert [p.source_start for p, _ in shares.checked_share_positions(spec, plan_create_time)] == [40]


def test_share_acknowledge_judges_only_the_partitions_it_walks(monkeypatch):
    """The subscription brings the topic's other partitions too: their records are released as they
    come and neither stop the walk nor count as its progress or its third acquisitions."""
    pytest.importorskip("confluent_kafka")
    from kafkarec.restore import SharePosition
    pos = SharePosition("g", "t", 0, 5, "t-b", 5, ((6, 6), (9, 9)), ())
    parts = {("t-b", 0): _SharePartition(5, 12, per_fetch=100), ("t-b", 1): _SharePartition(0, 4, per_fetch=100)}
    done, consumer = _acknowledge(monkeypatch, parts, [pos])
    assert [(a.partition, a.accepted, a.status) for a in done] == [(0, (6, 9), "done")]
    other = parts[("t-b", 1)]
    assert set(other.state.values()) == {"AVAILABLE"} and set(other.deliveries.values()) == {1}


# --- finding 41: the offset map file's numbers within Kafka's ranges ----------------------------
_MAP_HEADER = "source_topic,partition,source_offset,target_topic,target_offset,count\n"


@pytest.mark.parametrize("line, message", [
    # a run of 10^30 records from a 60-byte file: what add_packed refuses
    ("t,0,0,u,0,1000000000000000000000000000000",
     "line 2: count '1000000000000000000000000000000' is not a number from 0 to 9223372036854775807"),
    ("t,0,1180591620717411303424,u,0,1",            # a source offset of 2^70
     "line 2: source_offset '1180591620717411303424' is not a number from 0 to 9223372036854775807"),
    ("t,0,9223372036854775806,u,0,2",               # a run ending past the largest offset
     "line 2: a run past the largest offset (9223372036854775807): source offset 9223372036854775806, "
     "target offset 0, count 2"),
    ("t,0,0,u,9223372036854775807,1", "line 2: a run past the largest offset"),
    ("t,2147483648,0,u,0,1", "line 2: partition '2147483648' is not a number from 0 to 2147483647"),
    ("t,0,-1,u,0,1", "line 2: source_offset '-1' is not a number"),
    ("t,0,1_0,u,0,1", "line 2: source_offset '1_0' is not a number"),     # Python's int() takes these
    ("t,0,0,u,0", "line 2: 5 field(s), expected 6"),
    # a field past csv's 131,072-character limit: _csv.Error before
    pytest.param("t,0,0,u,0," + "1" * 200_000, "line 2: not CSV (field larger than field limit (131072))",
                 id="a-field-past-csvs-limit"),
])
def test_the_offset_map_file_refuses_numbers_outside_kafkas_ranges(tmp_path, line, message):
    path = tmp_path / "map.csv"
    path.write_text(_MAP_HEADER + line + "\n")
    with pytest.raises(UsageError) as info:
        OffsetMap.read(str(path))
    assert str(info.value).startswith(f"offset map {path}, ") and message in str(info.value), str(info.value)
    # the largest run Kafka's offsets allow is read
    path.write_text(_MAP_HEADER + "t,0,0,u,0,9223372036854775807\nt,0,9223372036854775807,u,9223372036854775807,0\n")
    assert OffsetMap.read(str(path)).records("t", 0) == 2**63 - 1


# --- finding 42: numeric options the clients cannot take -----------------------------------------
@pytest.mark.parametrize("kwargs, message", [
    ({"timeout": float("inf")}, "timeout 'inf': not a number of seconds from 0.01 to 300"),
    ({"timeout": float("nan")}, "timeout 'nan': not a number of seconds"),
    ({"timeout": -1}, "timeout '-1': not a number of seconds"),
    ({"timeout": 0.001}, "timeout '0.001': not a number of seconds"),      # socket.timeout.ms 1: below 10
    ({"timeout": 301}, "timeout '301': not a number of seconds"),          # 301,000 ms: above 300,000
    ({"timeout": 10 ** 400}, "not a number of seconds"),                    # float() overflows
    ({"timeout": True}, "not a number of seconds"),
    ({"transaction_records": float("inf")}, "transaction records 'inf': not a whole number at least 1"),
    ({"transaction_records": float("nan")}, "transaction records 'nan'"),
    ({"transaction_records": 2.5}, "transaction records '2.5'"),
    ({"transaction_records": 2**31}, "at most 2147483647"),
    ({"transaction_records": "9" * 5000}, "transaction records '9999"),   # past Python's digit limit
    ({"end_time": float("inf")}, "end time 'inf': not a time"),
    ({"end_time": 2**70}, ("end time", "1180591620717411303424")),      # past Java's longs
    ({"end_time": -5}, "is not a Kafka time"),
    ({"groups_as_of": "9" * 5000}, ("groups as of", "9999")),           # past Python's digit limit
    ({"groups_as_of": float("nan")}, "groups as of 'nan': not a time"),
])
def test_numeric_options_the_clients_cannot_take_are_usage_errors(kwargs, message):
    with pytest.raises(UsageError) as info:
        RestoreSpec.of("logs", "b:9092", **kwargs)
    text = str(info.value)      # one short line, whatever the value's size
    assert all(m in text for m in ((message,) if isinstance(message, str) else message)), text
    assert "\n" not in text and len(text) < 300, text


def test_the_timeout_bounds_are_what_librdkafka_takes():
    """Every client the restore makes takes the settings of the least and the largest timeout."""
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient
    from kafkarec.restore.produce import producer_config
    from kafkarec.restore.source import SourcePartition
    for seconds in (0.01, 300):
        spec = RestoreSpec.of("logs", "127.0.0.1:1", timeout=seconds)
        assert spec.client_config()["socket.timeout.ms"] == round(seconds * 1000)
        Producer(spec.client_config(**producer_config(spec, SourcePartition("t", 0, 0, 1, 1, "t"))))
        Consumer(spec.client_config(**{"group.id": "g"})).close()
        AdminClient(spec.client_config())
    assert RestoreSpec.of("logs", "b:1", timeout="2.5", transaction_records="10").timeout == 2.5


def test_timeout_inf_on_the_command_line_is_one_line_and_exit_2(tmp_path, capfd):
    from kafkarec.cli.main import main
    assert main(["restore", str(tmp_path), "--target-bootstrap", "127.0.0.1:1", "--timeout", "inf",
                 "--no-groups"]) == 2
    err = capfd.readouterr().err
    assert err == ("kafkarec restore: error: timeout 'inf': not a number of seconds from 0.01 to 300 "
                   "(librdkafka takes 10 to 300,000 ms for socket.timeout.ms)\n"), err


def test_a_dlq_naming_a_partition_still_to_come_has_it_restored_first(monkeypatch):
    """A DLQ the plan could not put last (no __cluster_metadata) whose dead letter names a partition
    not restored yet stops before writing it; that partition is restored first, the DLQ resumed."""
    from kafkarec.restore import produce
    from kafkarec.restore.deadletters import SourceNotRestored
    from kafkarec.restore.source import SourcePartition, SourcePlan
    dlq, orders = SourcePartition("dlq.g", 0, 0, 2, 2, "dlq.g"), SourcePartition("orders", 0, 0, 8, 8, "orders")
    runs = []

    def restore_partition(spec, part, translation):
        runs.append(part.topic)
        if part is dlq and "orders" not in runs:
            raise SourceNotRestored.of("target:9092", orders, None)
        m = OffsetMap()
        m.set_end(part.topic, 0, part.target_topic, part.end, part.end)
        return produce.PartitionSummary(part.topic, 0, 0, part.end, part.target_topic, part.end, "written"), m

    monkeypatch.setattr(produce, "restore_partition", restore_partition)
    omap = OffsetMap()
    done = produce.restore_partitions(RestoreSpec.of("logs", "target:9092"), SourcePlan([dlq, orders], {}), omap)
    assert runs == ["dlq.g", "orders", "dlq.g"] and [s.topic for s in done] == ["orders", "dlq.g"]
    assert omap.partitions() == [("dlq.g", 0), ("orders", 0)]


def test_the_restores_steps_call_the_hook_the_process_installed(monkeypatch):
    """The restore's named steps (kafkarec/restore/steps.py) call the step hook installed in this
    process, with the step's ``settle`` (None where there is none); with none installed nothing
    happens, and the library reads no environment for it (issue 70: the crash tests' kill is their
    own hook, tests/broker/test_broker_restore.py)."""
    from kafkarec.restore import steps
    monkeypatch.setenv("KAFKAREC_RESTORE_KILL_AT", "groups-translated")    # the variable it once read
    steps.step("groups-translated")                                         # no hook: nothing happens
    seen = []
    assert steps.set_step_hook(lambda point, settle: seen.append((point, settle and settle()))) is None
    try:
        steps.step("mid-transaction", lambda: "flushed")
        steps.step("between-transactions")
    finally:
        ours = steps.set_step_hook(None)
    assert seen == [("mid-transaction", "flushed"), ("between-transactions", None)]
    assert ours is not None and steps.set_step_hook(None) is None
