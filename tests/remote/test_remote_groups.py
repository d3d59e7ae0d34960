"""Groups from an object store (issue 51): ``__consumer_offsets``, ``__share_group_state`` and
``__cluster_metadata`` of a log directory copied to S3 (SeaweedFS) read through the storage layer
give what the same directory on disk gives -- the analyses, and a restore's planned and translated
group and share-group positions (offline: no cluster)."""
from __future__ import annotations

import os
import shutil

import pytest

import kafkarec
from kafkarec import internal
from kafkarec.enums import Compression, ControlRecordType
from kafkarec.cluster import coordinators
from kafkarec.sample import BASE_TIME, generate
from support.logs.internal_fixtures import DATA

BUCKET, PREFIX = "group-logs", "cluster-a"
ORDERS_ID = "ioNpEorxLpqqSK7HcI_9ow"
T1, T2 = BASE_TIME + 1000, BASE_TIME + 5000          # first commits, later commits
MARKER_TIME = BASE_TIME + 3000


def _segment(folder, base, batches):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "%020d.log" % base), "wb") as f:
        for b in batches:
            f.write(b)


def _commit(group, topic, partition, offset, at):
    """An OffsetCommit record as the coordinator writes it at ``at`` (its commitTimestamp)."""
    k, v = internal.encode_record("__consumer_offsets", "OffsetCommit",
                                  {"group": group, "topic": topic, "partition": partition},
                                  {"offset": offset, "leaderEpoch": 0, "metadata": "", "commitTimestamp": at}, 3)
    return k, v


def _batch(base, records, *, ts, **kw):
    b = kafkarec.RecordBatchBuilder(base_offset=base, **kw)
    for i, (k, v) in enumerate(records):
        b.append(v, key=k, timestamp=ts + i)
    return b.build()


def _consumer_offsets(root):
    folder = os.path.join(root, "__consumer_offsets-0")
    first = [_commit("g1", "orders", p, 10 + p, T1) for p in range(3)] + [_commit("g2", "payments", 0, 30, T1)]
    txn = [_commit("g3", "orders", 0, 55, T1 + 600)]
    marker = kafkarec.RecordBatchBuilder(base_offset=6, producer_id=9, producer_epoch=0, is_transactional=True,
                                         is_control=True)
    marker.append_control(ControlRecordType.COMMIT, {"coordinatorEpoch": 1}, timestamp=MARKER_TIME)
    _segment(folder, 0, [_batch(0, first, ts=T1),
                         _batch(4, [_commit("g1", "orders", 1, 40, T1 + 500)], ts=T1 + 500,
                                compression=Compression.ZSTD),
                         _batch(5, txn, ts=T1 + 600, producer_id=9, producer_epoch=0, base_sequence=0,
                                is_transactional=True),
                         marker.build()])
    # a second segment: later positions, a tombstone (group g2 deleted its commit)
    later = [_commit("g1", "orders", 0, 120, T2), _commit("g1", "payments", 0, 70, T2),
             (_commit("g2", "payments", 0, 0, T2)[0], None)]
    _segment(folder, 7, [_batch(7, later, ts=T2, compression=Compression.GZIP)])


def _share_state(root):
    key = {"groupId": "sg", "topicId": ORDERS_ID, "partition": 1}
    snap = internal.encode_record("__share_group_state", "ShareSnapshot", key, {
        "snapshotEpoch": 0, "stateEpoch": 1, "leaderEpoch": 0, "startOffset": 5, "createTimestamp": T1,
        "writeTimestamp": T1, "stateBatches": [
            {"firstOffset": 5, "lastOffset": 9, "deliveryState": coordinators.SHARE_ACKNOWLEDGED, "deliveryCount": 1},
            {"firstOffset": 12, "lastOffset": 14, "deliveryState": coordinators.SHARE_ARCHIVED, "deliveryCount": 2},
            {"firstOffset": 15, "lastOffset": 20, "deliveryState": coordinators.SHARE_AVAILABLE, "deliveryCount": 1}]})
    update = internal.encode_record("__share_group_state", "ShareUpdate", key, {
        "snapshotEpoch": 0, "leaderEpoch": 0, "startOffset": -1, "stateBatches": [
            {"firstOffset": 15, "lastOffset": 16, "deliveryState": coordinators.SHARE_ACKNOWLEDGED,
             "deliveryCount": 1}]})
    _segment(os.path.join(root, "__share_group_state-0"), 0,
             [_batch(0, [snap], ts=T1), _batch(1, [update], ts=T2)])
    topic = internal.encode_record("__cluster_metadata", "TOPIC_RECORD", None, {"name": "orders",
                                                                                "topicId": ORDERS_ID})
    _segment(os.path.join(root, "__cluster_metadata-0"), 0, [_batch(0, [topic], ts=BASE_TIME)])


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("group-logs"))
    generate(root, seed=7, scale=1)
    _consumer_offsets(root)
    _share_state(root)
    return root


@pytest.fixture(scope="module")
def uri(s3, logs):
    s3.upload_dir(logs, BUCKET, PREFIX)
    return f"s3://{BUCKET}/{PREFIX}"


def test_kafkas_own_internal_topics_over_s3_equal_the_local_dir(s3):
    """Kafka's own __consumer_offsets and __transaction_state bytes (every record type, compressed
    batches, aborted commits)."""
    s3.upload_dir(os.path.join(DATA, "logs"), BUCKET, "kafka-written")
    uri, local, opts = f"s3://{BUCKET}/kafka-written", os.path.join(DATA, "logs"), s3.options()
    found = coordinators.committed_offsets(local)
    assert len({k[0] for k in found}) > 3
    assert coordinators.committed_offsets(uri, storage_options=opts) == found
    assert coordinators.transaction_states(uri, storage_options=opts) == coordinators.transaction_states(local)
    assert coordinators.consumer_lag(uri, storage_options=opts) == coordinators.consumer_lag(local)


def test_committed_offsets_over_s3_equal_the_local_dir(logs, uri, s3):
    opts = s3.options()
    local = coordinators.committed_offsets(logs)
    assert local[("g1", "orders", 0)]["offset"] == 120 and ("g2", "payments", 0) not in local
    assert coordinators.committed_offsets(uri, storage_options=opts) == local
    for t in (T1 - 1, T1, T1 + 550, MARKER_TIME - 1, MARKER_TIME, T2):
        at = coordinators.committed_offsets(logs, as_of=t)
        assert coordinators.committed_offsets(uri, storage_options=opts, as_of=t) == at, t
    assert coordinators.committed_offsets(uri, storage_options=opts, as_of=MARKER_TIME)[("g3", "orders", 0)]["offset"] == 55
    shares = coordinators.share_group_states(logs)
    assert shares[("sg", ORDERS_ID, 1)]["start_offset"] == 5
    assert coordinators.share_group_states(uri, storage_options=opts) == shares
    assert coordinators.share_group_states(uri, storage_options=opts, as_of=T1) == coordinators.share_group_states(
        logs, as_of=T1)


def _translated(spec):
    from kafkarec.restore import OffsetMap, groups, plan, shares, source
    p = plan(spec)
    omap = OffsetMap()
    for part in p.partitions:           # each committed record restored in order: target offset = its index
        n = 0
        for r in source.committed_records(spec, part.topic, part.partition, part.start, part.end, p.listing):
            omap.add(part.topic, part.partition, part.target_topic, r.offset, n)
            n += 1
        omap.set_end(part.topic, part.partition, part.target_topic, part.end, n)
    # the plan as compared: its listing (the storage it was made over: a local dir, an object store)
    # is how it was made, not what it says
    return p._replace(listing=None), groups.translate(spec, p, omap), shares.translate_shares(spec, p, omap)


def test_restore_plans_the_same_groups_from_s3_as_from_the_local_dir(logs, uri, s3):
    from kafkarec.restore import RestoreSpec
    for as_of in (None, T1 + 550):
        local = _translated(RestoreSpec.of(logs, "x:1", topics="orders,payments", rename=["orders=orders-b"],
                                           groups_as_of=as_of))
        remote = _translated(RestoreSpec.of(uri, "x:1", topics="orders,payments", rename=["orders=orders-b"],
                                            storage_options=s3.options(), groups_as_of=as_of))
        assert remote == local
        plan, positions, share_positions = local
        assert plan.topics["orders"].configs == {"message.timestamp.type": "CreateTime"}
        got = {(g.group, g.topic, g.partition): (g.source_offset, g.target_topic) for g in positions}
        assert got[("g1", "orders", 1)] == (40, "orders-b")
        assert got[("g1", "orders", 0)][0] == (10 if as_of else 120)
        assert ("g1", "payments", 0) in got if as_of is None else ("g2", "payments", 0) in got
        assert [(s.group, s.topic, s.partition, s.source_start) for s in share_positions] == [
            ("sg", "orders", 1, 10)]
        assert len(share_positions[0].redelivered) == (3 if as_of else 5)   # 12-14, and 15-16 once updated


def test_restore_plans_the_same_groups_with_tiered_storage(logs, tmp_path):
    """A source whose first segments are tiered (``--tiered-storage``, Kafka's LocalTieredStorage
    layout): the same plan and positions as the whole log on disk."""
    from kafkarec.restore import RestoreSpec
    source, tiered = str(tmp_path / "broker"), str(tmp_path / "tiered")
    shutil.copytree(logs, source)
    for p in range(3):
        folder = os.path.join(source, f"orders-{p}")
        first = sorted(n for n in os.listdir(folder) if n.endswith(".log"))[0]
        remote = os.path.join(tiered, f"orders-{p}-{ORDERS_ID}")
        os.makedirs(remote)
        shutil.move(os.path.join(folder, first), os.path.join(remote, f"{first[:-4]}-oAtiIQ95REujbuzNd_lkL{p}.log"))
        for side in os.listdir(folder):
            if side.startswith(first[:-4]):
                os.remove(os.path.join(folder, side))
    whole = _translated(RestoreSpec.of(logs, "x:1", topics="orders,payments"))
    assert _translated(RestoreSpec.of(source, "x:1", topics="orders,payments", tiered_storage=tiered)) == whole
    assert whole[1] and whole[2]
    from kafkarec.restore import plan
    local_only = plan(RestoreSpec.of(source, "x:1", topics="orders")).partitions
    assert all(p.start > 0 for p in local_only)     # the tiered copies hold the first records
