"""``restore --same-offsets write`` without a broker: a source log dir written as a broker writes
it (support.logs.logdir) into a target log dir laid out as a stopped broker leaves a topic just
created (what ``prepare`` leaves), then read back.  The broker's own view of the result is
tests/broker/test_broker_same_offsets.py's."""
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys

import pytest

from kafkarec import iter_batches
from kafkarec._core import crc32c
from kafkarec.errors import LogDirWriteError, UsageError
from kafkarec.log.writer import PRODUCER_ID_BASE
from kafkarec.restore import same_offsets as so, steps
from kafkarec.restore.spec import RestoreSpec
from support.logs.logdir import CONTROL_COMMIT, PartitionWriter, v2_batch
from support.logs.log_start import write_log_start_checkpoint

TOPIC_ID = bytes(range(16))
CLUSTER = "Xy7DsbXaQsO1ETyyJTH3Aw"
TARGET_EPOCH = 3
DIRECTORY = "r9DxxVAdMw9xy5pfn7MrsA"


def _source(root):
    """t-0: idempotent records (producer 0), a committed transaction (1), then a transaction left
    open (2) and records of producer 0 past it, in several segments; t-1: plain records, its log
    start moved inside its first batch."""
    w = PartitionWriter(root, "t", 0, segment_bytes=400, topic_id=TOPIC_ID, leader_epoch=9)
    seq = 0
    for i in range(6):
        w.append(v2_batch([(1000 + i, b"k", b"v%d" % i, [])] * 3, producer_id=0, producer_epoch=0,
                          base_sequence=seq))
        seq += 3
    w.append(v2_batch([(2000, b"t", b"committed", [])], producer_id=1, producer_epoch=4, base_sequence=0,
                      transactional=True))
    w.end_txn(CONTROL_COMMIT, 1, coordinator_epoch=7, timestamp=2001)
    w.append(v2_batch([(3000, b"o", b"open", [])] * 2, producer_id=2, producer_epoch=5, base_sequence=0,
                      transactional=True))
    w.append(v2_batch([(4000, b"k", b"after", [])], producer_id=0, producer_epoch=0, base_sequence=seq))
    w.close()
    p = PartitionWriter(root, "t", 1, topic_id=TOPIC_ID)
    p.append(v2_batch([(5000 + i, None, b"p%d" % i, []) for i in range(10)]))
    p.close()
    write_log_start_checkpoint(root, {("t", 0): 0, ("t", 1): 4})
    return root


def _target(root, source, partitions=2):
    """A stopped broker's log dir after prepare: the topic's folders as the broker created them,
    its checkpoints, the clean-shutdown marker and the journal."""
    os.makedirs(root)
    with open(os.path.join(root, "meta.properties"), "w") as fh:
        fh.write(f"#\nnode.id=1\ndirectory.id={DIRECTORY}\nversion=1\ncluster.id={CLUSTER}\n")
    with open(os.path.join(root, ".kafka_cleanshutdown"), "w") as fh:
        fh.write('{"version":0,"brokerEpoch":12}')
    for i in range(partitions):
        d = os.path.join(root, f"t-{i}")
        os.makedirs(d)
        with open(os.path.join(d, "partition.metadata"), "w") as fh:
            fh.write("version: 0\ntopic_id: 8Yx6FaMkRVSq9bd5jxlWrA\n")
        with open(os.path.join(d, "leader-epoch-checkpoint"), "w") as fh:
            fh.write(f"0\n1\n{TARGET_EPOCH} 0\n")
        for suffix in (".log", ".index", ".timeindex"):
            open(os.path.join(d, "0" * 20 + suffix), "w").close()
    for name in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint", "log-start-offset-checkpoint"):
        with open(os.path.join(root, name), "w") as fh:
            fh.write("0\n1\n__consumer_offsets 0 5\n")
    with open(os.path.join(root, so.JOURNAL), "w") as fh:
        json.dump({"version": 2, "state": "prepared", "cluster_id": CLUSTER, "source": source,
                   "log_dirs": [[1, DIRECTORY]], "partitions": [["t", i] for i in range(partitions)],
                   "replicas": {f"t-{i}": [[1, DIRECTORY]] for i in range(partitions)}}, fh)
    return root


def _spec(src, dst):
    return RestoreSpec.of(src, None, same_offsets="write", target_log_dir=dst)


def _files(root):
    """Every file under ``root`` and its bytes (the journal and the lock aside)."""
    out = {}
    for folder, _, names in os.walk(root):
        for n in names:
            if n not in (so.JOURNAL, ".lock"):
                with open(os.path.join(folder, n), "rb") as fh:
                    out[os.path.relpath(os.path.join(folder, n), root)] = fh.read()
    return out


@pytest.fixture
def dirs(tmp_path):
    src = _source(str(tmp_path / "source"))
    return src, _target(str(tmp_path / "target"), src)


def _batches(folder):
    data = b"".join(open(os.path.join(folder, n), "rb").read() for n in sorted(os.listdir(folder))
                    if n.endswith(".log"))
    return data, list(iter_batches(data))


def test_write_keeps_every_offset_and_rewrites_only_the_named_fields(dirs):
    src, dst = dirs
    out = so.write(_spec(src, dst))
    by = {w.partition: w for w in out}
    source_data, source_batches = _batches(os.path.join(src, "t-0"))
    data, batches = _batches(os.path.join(dst, "t-0"))
    # every source batch at its offset, its bytes but the leader epoch, the producer id and the CRC
    assert [b.base_offset for b in batches[:-1]] == [b.base_offset for b in source_batches]
    for s, t in zip(source_batches, batches):
        want = bytearray(s.raw())
        struct.pack_into(">i", want, 12, TARGET_EPOCH)
        if s.producer_id >= 0:
            struct.pack_into(">q", want, 43, s.producer_id + PRODUCER_ID_BASE)
            struct.pack_into(">I", want, 17, crc32c(memoryview(want)[21:]))
        assert bytes(t.raw()) == bytes(want)
    assert all(b.crc_valid and b.partition_leader_epoch == TARGET_EPOCH for b in batches)
    # the open transaction aborted at the log's end, with its producer's id and epoch
    end = source_batches[-1].next_offset
    marker = batches[-1]
    assert (marker.base_offset, marker.is_control, marker.producer_id, marker.producer_epoch) == \
        (end, True, 2 + PRODUCER_ID_BASE, 5)
    assert marker.records()[0].control_type_id == 0 and marker.records()[0].coordinator_epoch == 7
    assert by[0].abort_markers == [(end, 2 + PRODUCER_ID_BASE, 5)] and by[0].log_end == end + 1
    assert by[0].producer_ids == {p: p + PRODUCER_ID_BASE for p in (0, 1, 2)}
    assert "abort markers at %d (producer %d epoch 5)" % (end, 2 + PRODUCER_ID_BASE) in by[0].line()
    # segments named by their base offsets, only .log files; the target's topic id and epochs kept
    names = sorted(os.listdir(os.path.join(dst, "t-0")))
    assert names == sorted([n for n in os.listdir(os.path.join(src, "t-0")) if n.endswith(".log")]
                           + ["leader-epoch-checkpoint", "partition.metadata"])
    assert "8Yx6FaMkRVSq9bd5jxlWrA" in open(os.path.join(dst, "t-0", "partition.metadata")).read()
    # the log start inside t-1's first batch, the high watermark at the end, recovery from 0
    assert (by[1].log_start, by[1].log_end, by[1].abort_markers) == (4, 10, [])
    assert open(os.path.join(dst, "log-start-offset-checkpoint")).read() == \
        "0\n3\n__consumer_offsets 0 5\nt 0 0\nt 1 4\n"
    assert open(os.path.join(dst, "replication-offset-checkpoint")).read() == \
        f"0\n3\n__consumer_offsets 0 5\nt 0 {end + 1}\nt 1 10\n"
    assert open(os.path.join(dst, "recovery-point-offset-checkpoint")).read() == "0\n1\n__consumer_offsets 0 5\n"
    assert not os.path.exists(os.path.join(dst, ".kafka_cleanshutdown"))
    assert so.read_journal(dst)["state"] == "written"
    # a second write writes nothing and answers the same
    before = _files(dst)
    assert so.write(_spec(src, dst)) == out
    assert _files(dst) == before


def test_a_batch_larger_than_the_window_is_written_whole(dirs, tmp_path, monkeypatch):
    """The writer reads a window at a time into one buffer: with a window smaller than every batch
    (each grows it) the folders come out as with the default window."""
    from kafkarec.log import writer
    src, dst = dirs
    other = _target(str(tmp_path / "small-window"), src)
    so.write(_spec(src, dst))
    monkeypatch.setattr(writer, "_WINDOW", 64)
    so.write(_spec(src, other))
    assert _files(other) == _files(dst)


def test_replicas_on_two_filesystems_get_the_same_bytes(dirs, tmp_path):
    """The writer copies a segment into the other replicas inside the kernel (copy_file_range); a
    replica on another filesystem, where the kernel refuses that (EXDEV), gets the same bytes
    through sendfile."""
    import tempfile
    from kafkarec.log.layout import scan_history
    from kafkarec.log.writer import write_partition
    if not os.path.isdir("/dev/shm") or os.stat("/dev/shm").st_dev == os.stat(str(tmp_path)).st_dev:
        pytest.skip("needs /dev/shm on another filesystem than the test's tmp_path")
    src, _ = dirs
    layout, _ = scan_history(src)
    part = next(p for p in layout.partitions if (p.topic, p.partition) == ("t", 0))
    with tempfile.TemporaryDirectory(dir="/dev/shm") as other:
        folders = [str(tmp_path / "a" / "t-0"), os.path.join(other, "t-0")]
        for f in folders:
            os.makedirs(f)
        w = write_partition(layout.storage, part, folders, 0)
        assert w.copies == 2 and w.segments > 1
        a, b = _files(os.path.dirname(folders[0])), _files(other)
    assert a == b and sum(len(v) for v in a.values()) == w.bytes


def _one_segment(tmp_path, data):
    from kafkarec.log.layout import scan_history
    folder = tmp_path / "src" / "d-0"
    os.makedirs(folder)
    (folder / ("0" * 20 + ".log")).write_bytes(data)
    layout, _ = scan_history(str(tmp_path / "src"))
    out = tmp_path / "out" / "d-0"
    os.makedirs(out)
    return layout, layout.partitions[0], str(out)


def test_a_damaged_or_legacy_batch_is_refused_with_its_position(tmp_path):
    """The core's re-stamp checks each batch's CRC before giving it a new one (a damaged batch would
    otherwise leave with a good CRC), and takes v2 batches only (Kafka 4 loads nothing else): either
    is a LogDirWriteError naming the segment, the byte and the batch, and nothing is renamed into
    place."""
    from kafkarec import LegacyBatchBuilder
    from kafkarec.log.writer import write_partition
    good = [bytearray(v2_batch([(1000, b"k", b"v%d" % i, [])] * 2, producer_id=7, producer_epoch=0,
                               base_sequence=2 * i)) for i in range(3)]
    for i, b in enumerate(good):
        struct.pack_into(">q", b, 0, 2 * i)         # base offsets 0, 2, 4 (outside the CRC)
    data = bytearray(b"".join(good))
    first = len(good[0])
    data[first + len(good[1]) - 1] ^= 0xFF          # the second batch's last byte
    layout, part, out = _one_segment(tmp_path / "crc", bytes(data))
    with pytest.raises(LogDirWriteError, match=rf"d-0 00000000000000000000.log byte {first}: the batch at offset "
                                               rf"2 fails its CRC"):
        write_partition(layout.storage, part, [out], 0)
    assert not any(n.endswith(".log") for n in os.listdir(out))
    legacy = LegacyBatchBuilder(magic=1, base_offset=0)
    legacy.append(b"old", key=b"k", timestamp=1000)
    layout, part, out = _one_segment(tmp_path / "v1", legacy.build())
    with pytest.raises(LogDirWriteError, match=r"byte 0: a message format v1 batch \(Kafka 4 loads v2 only"):
        write_partition(layout.storage, part, [out], 0)


def _share_state(root):
    """``root``'s ``__cluster_metadata`` naming topic t, and a ``__share_group_state`` with share
    group sg's state of t-0 (records 2-4 acknowledged at the start offset, 5-6 available, 7
    accepted and 8 rejected past them) and of t-1 (its start offset at the log start, 6
    accepted), as the share coordinator writes it (a ShareSnapshot record)."""
    import base64
    from kafkarec import RecordBatchBuilder, internal
    from kafkarec.cluster.coordinators import SHARE_ACKNOWLEDGED, SHARE_ARCHIVED, SHARE_AVAILABLE
    topic_id = base64.urlsafe_b64encode(TOPIC_ID).rstrip(b"=").decode()

    def segment(folder, records):
        os.makedirs(os.path.join(root, folder))
        b = RecordBatchBuilder()
        for k, v in records:
            b.append(v, key=k, timestamp=1000)
        with open(os.path.join(root, folder, "%020d.log" % 0), "wb") as f:
            f.write(b.build())

    def state(partition, start, batches):
        return internal.encode_record("__share_group_state", "ShareSnapshot",
                                      {"groupId": "sg", "topicId": topic_id, "partition": partition}, {
            "snapshotEpoch": 0, "stateEpoch": 1, "leaderEpoch": 0, "startOffset": start, "createTimestamp": 1000,
            "writeTimestamp": 1000, "stateBatches": [
                {"firstOffset": f, "lastOffset": l, "deliveryState": d, "deliveryCount": 1} for f, l, d in batches]})
    segment("__cluster_metadata-0", [internal.encode_record("__cluster_metadata", "TOPIC_RECORD", None,
                                                            {"name": "t", "topicId": topic_id})])
    segment("__share_group_state-0", [
        state(0, 2, [(2, 4, SHARE_ACKNOWLEDGED), (5, 6, SHARE_AVAILABLE), (7, 7, SHARE_ACKNOWLEDGED),
                     (8, 8, SHARE_ARCHIVED)]),
        state(1, 4, [(6, 6, SHARE_ACKNOWLEDGED)])])


def test_share_groups_state_is_taken_as_it_was(dirs, tmp_path):
    """With the same offsets a share group's state needs no translation: the groups step takes the
    source's ``__share_group_state`` through the identity map -- start offsets the source's (moved
    past the acknowledged records at its head, as the produced restore moves them), the records
    acknowledged past it named at their own offsets -- and writes the start offsets for
    ``kafka-share-groups --reset-offsets --from-file``."""
    from kafkarec.restore import plan as plan_of, shares
    from kafkarec.restore.offsets import OffsetMap
    src, dst = dirs
    _share_state(src)
    spec = RestoreSpec.of(src, "target:9092", same_offsets="groups", target_log_dir=dst)
    p = plan_of(spec)
    omap = so.identity_map(p)
    for part in p.partitions:
        assert list(omap.pairs(part.topic, part.partition)) == [(o, o) for o in range(part.start, part.log_end)]
    path = str(tmp_path / "shares.csv")
    got = so.share_groups(spec, p, path)
    assert [(s.group, s.topic, s.partition, s.source_start, s.target_topic, s.target_start, s.redelivered, s.rejected)
            for s in got] == [("sg", "t", 0, 5, "t", 5, ((7, 7), (8, 8)), (8,)),
                              ("sg", "t", 1, 4, "t", 4, ((6, 6),), ())]
    assert open(path).read() == "sg,t,0,5\nsg,t,1,4\n"
    # the produced restore's rule, through a map that moves every offset, names the same records
    moved = OffsetMap()
    for part in p.partitions:
        moved.add(part.topic, part.partition, part.target_topic, part.start, part.start + 100,
                  part.log_end - part.start)
        moved.set_end(part.topic, part.partition, part.target_topic, part.log_end, part.log_end + 100)
    assert [(s.target_start - 100, tuple((a, b - 100) for a, b in s.redelivered))
            for s in shares.translate_shares(spec, p, moved)] == [(s.target_start, s.redelivered) for s in got]


def test_share_group_options_belong_to_the_groups_step(dirs, tmp_path):
    src, dst = dirs
    for step in ("write", "prepare"):
        r = subprocess.run([sys.executable, "-m", "kafkarec", "restore", src, "--same-offsets", step,
                            "--target-bootstrap", "h:1", "--target-log-dir", dst, "--share-groups-csv",
                            str(tmp_path / "s.csv")], capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and f"--same-offsets {step} sets no group" in r.stderr, r.stderr


class _Killed(BaseException):
    pass


def test_a_write_killed_midway_then_run_again_ends_as_one_run(dirs, tmp_path):
    src, dst = dirs
    once = _target(str(tmp_path / "once"), src)
    so.write(_spec(src, once))

    def kill(point, settle):
        if point == "partition-written":
            raise _Killed()
    previous = steps.set_step_hook(kill)
    try:
        with pytest.raises(_Killed):
            so.write(_spec(src, dst))
    finally:
        steps.set_step_hook(previous)
    assert so.read_journal(dst)["state"] == "writing"
    # a segment left under its temporary name too, as a kill inside a partition leaves one
    open(os.path.join(dst, "t-1", "0" * 20 + ".log.cleaned"), "wb").write(b"half")
    so.write(_spec(src, dst))
    assert _files(dst) == _files(once)


#: the child of the kill -9 test: ``python -m kafkarec restore SOURCE --same-offsets write`` with a
#: hook that SIGKILLs the process at a point of the write (no ``finally``, no flush runs).  A named
#: step (steps.POINTS) through steps.set_step_hook; inside a partition, where no step is named, the
#: hook is the child's wrapper of the call that ends one file's part of the write: the first
#: ``os.fsync`` of a segment (every segment of the partition written under its temporary name, the
#: target's own segments deleted, none renamed into place) or the first ``os.replace`` of one (a
#: segment in place, the rest still temporary)
_KILLED_CHILD = """
import os, runpy, signal, sys
from kafkarec.restore import steps
point, src, dst = sys.argv[1:]

def die():
    os.kill(os.getpid(), signal.SIGKILL)

if point in steps.POINTS:
    steps.set_step_hook(lambda at, settle: die() if at == point else None)
else:
    real = getattr(os, point)

    def then_die(first, *args, **kwargs):
        path = os.readlink(f"/proc/self/fd/{first}") if isinstance(first, int) else first
        real(first, *args, **kwargs)
        if path.endswith(".log.cleaned"):
            die()
    setattr(os, point, then_die)
sys.argv = ["kafkarec", "restore", src, "--same-offsets", "write", "--target-log-dir", dst]
runpy.run_module("kafkarec", run_name="__main__", alter_sys=True)
"""


@pytest.mark.parametrize("point", ["partition-written", "fsync", "replace"])
def test_a_write_killed_by_sigkill_then_run_again_ends_as_one_run(dirs, tmp_path, point):
    """A real ``kill -9`` of the command line in the middle of the write (after a partition, or
    inside one), then the same command again: the target's files are a one-run write's, byte for byte."""
    src, dst = dirs
    once = _target(str(tmp_path / "once"), src)
    so.write(_spec(src, once))
    child = subprocess.run([sys.executable, "-c", _KILLED_CHILD, point, src, dst], capture_output=True,
                           text=True, timeout=60)
    assert child.returncode == -signal.SIGKILL, (child.returncode, child.stdout, child.stderr)
    assert so.read_journal(dst)["state"] == "writing"
    left = _files(dst)
    assert left != _files(once)
    temporary = [n for n in left if n.endswith(".log.cleaned")]
    if point == "partition-written":
        # one partition whole, the other as prepare left it
        assert not temporary and left["t-1/" + "0" * 20 + ".log"] == b""
    else:
        # killed inside t-0's write: segments still under their temporary name
        assert temporary and all(n.startswith("t-0/") for n in temporary), sorted(left)
    again = _cli(src, "--same-offsets", "write", "--target-log-dir", dst)
    assert again.returncode == 0, again.stderr
    assert so.read_journal(dst)["state"] == "written"
    assert _files(dst) == _files(once)


def _unchanged(dst):
    return os.path.exists(os.path.join(dst, ".kafka_cleanshutdown")) and so.read_journal(dst)["state"] == "prepared"


def test_refused_while_a_broker_holds_the_log_dir(dirs):
    src, dst = dirs
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, os, sys, time\n"
        f"fd = os.open({os.path.join(dst, '.lock')!r}, os.O_RDWR | os.O_CREAT)\n"
        "fcntl.lockf(fd, fcntl.LOCK_EX)\nprint('locked', flush=True)\ntime.sleep(60)\n")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(LogDirWriteError, match="a broker is running on it"):
            so.write(_spec(src, dst))
    finally:
        holder.kill()
        holder.wait()
    assert _unchanged(dst)


@pytest.mark.parametrize("damage, reason", [
    ("no-meta", "no meta.properties: not a formatted Kafka log dir"),
    ("other-cluster", "prepared was cluster"),
    ("no-journal", "run --same-offsets prepare first"),
    ("holds-data", "t-1 holds records"),
    ("more-partitions", "t has a partition folder t-2, the source 2 partitions"),
])
def test_refused_before_anything_is_written(dirs, damage, reason):
    src, dst = dirs
    if damage == "no-meta":
        os.unlink(os.path.join(dst, "meta.properties"))
    elif damage == "other-cluster":
        with open(os.path.join(dst, "meta.properties"), "a") as fh:
            fh.write("cluster.id=AnotherClusterIdAAAAAAA\n")
    elif damage == "no-journal":
        os.unlink(os.path.join(dst, so.JOURNAL))
    elif damage == "holds-data":
        shutil.copy(os.path.join(src, "t-1", "0" * 20 + ".log"), os.path.join(dst, "t-1", "0" * 20 + ".log"))
    else:
        shutil.copytree(os.path.join(dst, "t-1"), os.path.join(dst, "t-2"))
    before = _files(dst)
    with pytest.raises(LogDirWriteError, match=reason):
        so.write(_spec(src, dst))
    assert _files(dst) == before
    assert damage == "no-journal" or so.read_journal(dst)["state"] == "prepared"


def test_the_command_line_refuses_what_a_copy_at_the_same_offsets_does_not_do(dirs):
    src, dst = dirs

    def run(*args):
        return subprocess.run([sys.executable, "-m", "kafkarec", "restore", src, *args], capture_output=True,
                              text=True, timeout=60)
    for args, said in [(("--same-offsets", "write"), "needs --target-log-dir"),
                       (("--same-offsets", "prepare", "--target-log-dir", dst), "required: --target-bootstrap"),
                       (("--same-offsets", "write", "--target-log-dir", dst, "--end-time", "5"), "--end-time"),
                       (("--same-offsets", "write", "--target-log-dir", dst, "--verify"), "--verify"),
                       (("--target-bootstrap", "h:1", "--target-log-dir", dst), "add --same-offsets")]:
        r = run(*args)
        assert r.returncode == 2 and said in r.stderr, (args, r.stderr)
    with pytest.raises(UsageError, match="one of prepare, write, groups"):
        RestoreSpec.of(src, None, same_offsets="copy", target_log_dir=dst)
    r = run("--same-offsets", "write", "--target-log-dir", dst)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("t-0 -> t-0 [0, ") and "partition leader epoch -> 3" in r.stdout
    assert "next: start the target broker" in r.stderr


DIRECTORIES = {1: "r9DxxVAdMw9xy5pfn7MrsA", 2: "oXy536di30pTBHbJeQYuBg", 3: "bJC_dJW-Al5lx5VPsyRTHA"}


def _replicated(root, source, partitions=2):
    """Three brokers' log dirs after prepare, replication factor 3: node 2 led the partitions (its
    leader-epoch-checkpoint says epoch 5), the followers' checkpoints are empty, as a fresh topic
    leaves them."""
    out = []
    for node, directory in DIRECTORIES.items():
        d = os.path.join(root, f"node{node}")
        _target(d, source, partitions)
        with open(os.path.join(d, "meta.properties"), "w") as fh:
            fh.write(f"node.id={node}\ndirectory.id={directory}\nversion=1\ncluster.id={CLUSTER}\n")
        for i in range(partitions):
            with open(os.path.join(d, f"t-{i}", "leader-epoch-checkpoint"), "w") as fh:
                fh.write("0\n1\n5 0\n" if node == 2 else "0\n0\n")
        out.append(d)
    pairs = [[n, i] for n, i in DIRECTORIES.items()]
    for d in out:
        with open(os.path.join(d, so.JOURNAL)) as fh:
            j = json.load(fh)
        j.update(log_dirs=pairs, replicas={f"t-{i}": pairs for i in range(partitions)})
        with open(os.path.join(d, so.JOURNAL), "w") as fh:
            json.dump(j, fh)
    return out


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "kafkarec", "restore", *args], capture_output=True, text=True,
                          timeout=120)


def test_every_replica_gets_the_same_bytes_and_the_check_names_a_tampered_byte(tmp_path):
    src = _source(str(tmp_path / "source"))
    dsts = _replicated(str(tmp_path / "target"), src)
    given = ",".join(dsts)
    # a log dir left out is refused before anything is written
    before = [_files(d) for d in dsts]
    with pytest.raises(LogDirWriteError, match="the log dirs given are not those prepared"):
        so.write(RestoreSpec.of(src, None, same_offsets="write", target_log_dir=dsts[:2]))
    assert [_files(d) for d in dsts] == before
    r = _cli(src, "--same-offsets", "write", "--target-log-dir", given, "--evidence", str(tmp_path / "ev.json"))
    assert r.returncode == 0, r.stderr
    assert "in 3 replica(s)" in r.stdout and "partition leader epoch -> 5" in r.stdout
    for part in ("t-0", "t-1"):
        copies = [{n: b for n, b in _files(os.path.join(d, part)).items()} for d in dsts]
        assert copies[0] == copies[1] == copies[2]
        assert copies[0]["leader-epoch-checkpoint"] == b"0\n1\n5 0\n"
    for d in dsts:
        assert open(os.path.join(d, "log-start-offset-checkpoint")).read().endswith("t 0 0\nt 1 4\n")
        assert not os.path.exists(os.path.join(d, ".kafka_cleanshutdown"))
    doc = json.load(open(tmp_path / "ev.json"))
    p0 = next(p for p in doc["partitions"] if p["partition"] == 0)
    assert p0["leader_epoch"] == 5 and p0["producer_ids"] == {str(i): i + PRODUCER_ID_BASE for i in (0, 1, 2)}
    assert p0["replicas"] == [[n, i] for n, i in DIRECTORIES.items()] and len(p0["abort_markers"]) == 1
    assert set(doc["rewritten_bytes"]) == {"partition_leader_epoch", "producer_id", "crc", "abort_markers"}

    r = _cli("--check", str(tmp_path / "ev.json"), src, given)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines()[-1].startswith("checked: 2 partition(s), 6 replica(s), ") \
        and r.stdout.splitlines()[-1].endswith(" 0 difference(s)")

    # one byte of a record's value on broker 3, then a producer id on broker 1: each named
    seg = sorted(n for n in os.listdir(os.path.join(dsts[2], "t-0")) if n.endswith(".log"))[1]
    path = os.path.join(dsts[2], "t-0", seg)
    data = bytearray(open(path, "rb").read())
    data[-3] ^= 0xFF
    open(path, "wb").write(data)
    path1 = os.path.join(dsts[0], "t-1", "0" * 20 + ".log")
    data1 = bytearray(open(path1, "rb").read())
    struct.pack_into(">i", data1, 12, 4)
    open(path1, "wb").write(data1)
    r = _cli("--check", str(tmp_path / "ev.json"), src, given)
    assert r.returncode == 1
    diffs = [ln for ln in r.stdout.splitlines() if ln.startswith("difference: ")]
    assert len(diffs) == 2, r.stdout
    m = re.fullmatch(rf"difference: t-0 on broker 3 \({re.escape(dsts[2])}\): {seg} byte (\d+): batch at offset "
                     r"\d+, its byte (\d+) differs from the source's \(a byte no rewrite touches\)", diffs[0])
    assert m and int(m.group(1)) + int(m.group(2)) == len(data) - 3, diffs[0]
    assert diffs[1].startswith(f"difference: t-1 on broker 1 ({dsts[0]}): {'0' * 20}.log byte 0: batch at offset 0, "
                               "partition leader epoch 4, the evidence's 5")


def test_a_write_into_three_replicas_killed_midway_then_run_again_ends_as_one_run(tmp_path):
    src = _source(str(tmp_path / "source"))
    once = _replicated(str(tmp_path / "once"), src)
    so.write(RestoreSpec.of(src, None, same_offsets="write", target_log_dir=once))
    dsts = _replicated(str(tmp_path / "target"), src)

    def kill(point, settle):
        if point == "partition-written":
            raise _Killed()
    previous = steps.set_step_hook(kill)
    try:
        with pytest.raises(_Killed):
            so.write(RestoreSpec.of(src, None, same_offsets="write", target_log_dir=dsts))
    finally:
        steps.set_step_hook(previous)
    assert {so.read_journal(d)["state"] for d in dsts} == {"writing"}
    # one journal left behind as a kill between the journals' writes leaves it
    with open(os.path.join(dsts[2], so.JOURNAL)) as fh:
        j = json.load(fh)
    with open(os.path.join(dsts[2], so.JOURNAL), "w") as fh:
        json.dump(dict(j, state="prepared"), fh)
    so.write(RestoreSpec.of(src, None, same_offsets="write", target_log_dir=dsts))
    assert [_files(d) for d in dsts] == [_files(d) for d in once]


@pytest.mark.parametrize("variant", ["plain", "both"])
def test_a_tiered_source_becomes_local_segments(tmp_path, variant):
    """A tiered-storage plugin's objects as the source (tests/data/tiered/aiven: chunked, and
    compressed and encrypted in ``both``): each remote segment is written as a local ``.log`` at its
    offsets; the written log dir reads back the original records, and --check proves it against the
    objects."""
    from kafkarec.log import layout, storage
    from support.brokers.readers import planned_rows
    from support.logs.aiven_objects import DATA, originals
    src = os.path.join(DATA, variant, "objects")
    config = os.path.join(DATA, variant, "rsm.properties")
    dst = _target(str(tmp_path / "target"), src, partitions=1)
    os.rename(os.path.join(dst, "t-0"), os.path.join(dst, "clicks-0"))
    shutil.copytree(os.path.join(dst, "clicks-0"), os.path.join(dst, "txn-0"))
    with open(os.path.join(dst, so.JOURNAL)) as fh:
        j = json.load(fh)
    j.update(partitions=[["clicks", 0], ["txn", 0]],
             replicas={"clicks-0": [[1, DIRECTORY]], "txn-0": [[1, DIRECTORY]]})
    with open(os.path.join(dst, so.JOURNAL), "w") as fh:
        json.dump(j, fh)
    r = _cli(src, "--storage-option", f"tieredStorageConfig={config}", "--same-offsets", "write",
             "--target-log-dir", dst, "--evidence", str(tmp_path / "ev.json"))
    assert r.returncode == 0, r.stderr
    assert sorted(n for n in os.listdir(os.path.join(dst, "clicks-0")) if n.endswith(".log")) == \
        [f"{b:020d}.log" for b in (0, 285, 600)]
    st, root = storage.resolve(dst)
    rows = planned_rows(st, None, lay=layout.scan(st, root))
    assert rows["clicks"] == originals("clicks-0")
    # txn's records as they were, the ABORT markers appended (if any) past them, never read as records
    assert rows["txn"] == originals("txn-0")
    r = _cli("--check", str(tmp_path / "ev.json"), src, dst, "--storage-option", f"tieredStorageConfig={config}")
    assert r.returncode == 0 and r.stdout.rstrip().endswith(" 0 difference(s)"), r.stdout + r.stderr
