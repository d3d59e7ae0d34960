"""``__remote_log_metadata`` replayed as Kafka's cache replays it (kafkarec.log.remote_metadata):
generated metadata logs against a model written from Kafka's source (rlm_model.py), and what a
read of a tiered root leaves out when the metadata says a copy is being deleted or gone (the
plugin's own objects: tests/data/tiered/aiven)."""
from __future__ import annotations

import os
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import kafkarec
from support.oracles import rlm_model
from support.brokers.readers import planned_rows
from kafkarec.internal import decode, encode_record
from kafkarec.log import layout, remote_metadata, storage
from support.oracles.rlm_model import (COPY_SEGMENT_FINISHED, DELETE_PARTITION_FINISHED, DELETE_PARTITION_MARKED,
                       DELETE_SEGMENT_FINISHED, DELETE_SEGMENT_STARTED, partition_delete_value, segment_value,
                       update_value)
from support.paths import ROOT
from support.logs.aiven_objects import DATA, originals

TOPIC = remote_metadata.TOPIC
CLICKS = ("q3_Yx0-lTnWb5T0aN8Jw_A", "clicks", 0)
TXN = ("-_815o2ZH57GCKVHnvxDzQ", "txn", 0)
# the plugin's copies in tests/data/tiered/aiven/*/objects: partition, segment id, offsets
COPIES = [(CLICKS, "emWsqkJ1QsSpPPWreQUVQQ", 0, 284), (CLICKS, "Nx_zmB0CRUmIs8ul-NUPEw", 285, 599),
          (CLICKS, "hjuRKi93R2CQgqOvcefg-w", 600, 899), (TXN, "A2q7Za74RqCFFsidLMzwfA", 0, 11),
          (TXN, "1iDT96tyRHu6bzK4w4ToAg", 12, 99)]
SECOND = COPIES[1]


def _encoded(kind: str, value: dict) -> bytes:
    return encode_record(TOPIC, rlm_model.API_KEYS[kind], None, value)[1]


def _finished_copies():
    out = []
    for tip, sid, start, end in COPIES:
        out += [_encoded("RemoteLogSegmentMetadataRecord", segment_value(tip, sid, start, end)),
                _encoded("RemoteLogSegmentMetadataUpdateRecord", update_value(tip, sid, COPY_SEGMENT_FINISHED))]
    return out


def _read_with_metadata(tmp_path, values):
    """A whole read of the plain variant's root with option remoteLogMetadata: a broker log
    directory whose __remote_log_metadata-0 holds ``values``."""
    folder = tmp_path / "broker" / f"{TOPIC}-0"
    folder.mkdir(parents=True)
    (folder / "00000000000000000000.log").write_bytes(
        kafkarec.build_batch(values, [None] * len(values), offsets=list(range(len(values)))))
    st_, root = storage.resolve(os.path.join(DATA, "plain", "objects"),
                                {"tieredStorageConfig": os.path.join(DATA, "plain", "rsm.properties"),
                                 "remoteLogMetadata": str(tmp_path / "broker")})
    lay = layout.scan(st_, root)
    return lay, planned_rows(st_, lay=lay)


def _without(rows, start, end):
    return [r for r in rows if not start <= r["offset"] <= end]


def test_every_finished_copy_is_read(tmp_path):
    lay, rows = _read_with_metadata(tmp_path, _finished_copies())
    assert lay.not_live == ()
    assert rows == {"clicks": originals("clicks-0"), "txn": originals("txn-0")}


@pytest.mark.parametrize("deletion, problem", [
    ((DELETE_SEGMENT_STARTED,),
     "offset 11: remote segment {sid} cannot move from DELETE_SEGMENT_STARTED to COPY_SEGMENT_FINISHED "
     "(RemoteLogSegmentState.isValidTransition): dropped"),
    ((DELETE_SEGMENT_STARTED, DELETE_SEGMENT_FINISHED),
     "offset 12: an update of remote segment {sid} to COPY_SEGMENT_FINISHED after Kafka forgot it "
     "(DELETE_SEGMENT_FINISHED): dropped"),
], ids=["deletion-started", "deletion-finished"])
def test_a_late_copy_finished_after_its_deletion_is_not_read(tmp_path, deletion, problem):
    """An old leader finishes its copy after the new leader started (or finished) deleting it:
    Kafka drops the update (a deletion cannot move back; a finished one forgets the copy), so
    the copy stays out of reads."""
    tip, sid, start, end = SECOND
    late = [_encoded("RemoteLogSegmentMetadataUpdateRecord", update_value(tip, sid, state))
            for state in deletion + (COPY_SEGMENT_FINISHED,)]
    lay, rows = _read_with_metadata(tmp_path, _finished_copies() + late)
    assert [why for _uri, why in lay.not_live] == [
        f"its copy is in state {rlm_model.NAMES[deletion[-1]]} ({TOPIC}), not COPY_SEGMENT_FINISHED"]
    assert rows["clicks"] == _without(originals("clicks-0"), start, end)
    assert remote_metadata.load(str(tmp_path / "broker")).problems == [f"{TOPIC}-0 " + problem.format(sid=sid)]


def test_partition_deletion_as_the_store_applies_it(tmp_path):
    """A partition marked for deletion keeps serving its finished copies (the broker deletes
    them one by one, each through its own updates); DELETE_PARTITION_FINISHED drops the
    partition, and Kafka refuses its later segment records."""
    tip, sid, start, end = SECOND
    after = [_encoded("RemotePartitionDeleteMetadataRecord", partition_delete_value(TXN, DELETE_PARTITION_MARKED)),
             _encoded("RemotePartitionDeleteMetadataRecord", partition_delete_value(CLICKS, DELETE_PARTITION_FINISHED)),
             _encoded("RemoteLogSegmentMetadataRecord", segment_value(tip, sid, start, end))]
    lay, rows = _read_with_metadata(tmp_path, _finished_copies() + after)
    assert rows == {"txn": originals("txn-0")}
    assert sorted(why for _uri, why in lay.not_live) == [f"its partition clicks-0 is being deleted ({TOPIC})"] * 3
    meta = remote_metadata.load(str(tmp_path / "broker"))
    assert meta.problems == [f"{TOPIC}-0 offset 12: remote segment {sid} of partition clicks-0 (topic id {CLICKS[0]}) "
                             f"after its DELETE_PARTITION_FINISHED: Kafka refuses it"]


# Generated logs: three partitions (two of one topic), three segment ids each, every kind of
# record in any order, states and offsets Kafka refuses included, updates sent to the wrong
# partition (Kafka knows a segment by its partition and id together) and ids never recorded.
PARTITIONS = [CLICKS, (CLICKS[0], CLICKS[1], 1), TXN]
SEGMENT_IDS = [[f"seg{p}{s}AAAAAAAAAAAAAAAAAA"[:21] + "A" for s in range(3)] for p in range(len(PARTITIONS))]
NEVER_RECORDED = "neverRecordedAAAAAAAAA"

_state = st.one_of(st.integers(0, 3), st.integers(0, 3), st.sampled_from([-1, 4, 127]))
_segment = st.tuples(st.just("segment"), st.integers(0, 2), st.integers(0, 2),
                     st.one_of(st.just(0), st.just(0), _state), st.sampled_from(["ok", "ok", "ok", "backwards",
                                                                                  "negative", "no epochs"]))
_update = st.tuples(st.just("update"), st.integers(0, 2), st.integers(0, 3), _state, st.booleans())
_delete = st.tuples(st.just("delete"), st.integers(0, 2), st.sampled_from([0, 1, 2, 2, 3]))
_log = st.lists(st.one_of(_segment, _update, _update, _update, _delete), max_size=40)


def generated_value(op) -> bytes:
    """One generated operation as an encoded record value."""
    if op[0] == "segment":
        _, p, s, state, shape = op
        start, end = {"ok": (10 * s, 10 * s + 9), "backwards": (10, 9), "negative": (-1, 5),
                      "no epochs": (0, 1)}[shape]
        value = segment_value(PARTITIONS[p], SEGMENT_IDS[p][s], start, end, state=state,
                              epochs=() if shape == "no epochs" else ((0, None),))
        return _encoded("RemoteLogSegmentMetadataRecord", value)
    if op[0] == "update":
        _, p, s, state, misaddressed = op
        sid = SEGMENT_IDS[p][s] if s < 3 else NEVER_RECORDED
        tip = PARTITIONS[(p + 1) % len(PARTITIONS)] if misaddressed else PARTITIONS[p]
        return _encoded("RemoteLogSegmentMetadataUpdateRecord", update_value(tip, sid, state))
    _, p, state = op
    return _encoded("RemotePartitionDeleteMetadataRecord", partition_delete_value(PARTITIONS[p], state))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_log)
def test_generated_logs_replay_as_kafkas_cache(ops):
    records = [decode(TOPIC, None, generated_value(op)) for op in ops]
    model = rlm_model.Store()
    for rec in records:
        model.handle(rec.value_schema, rec.value)
    meta = remote_metadata.replay(records)
    assert rlm_model.held_by(meta) == model.held()
    assert {key for key, state in rlm_model.held_by(meta).items() if state == "COPY_SEGMENT_FINISHED"} == model.live()
    assert {s.segment_id for s in meta.segments.values() if s.live} == {key[3] for key in model.live()}
    assert len(meta.problems) == model.ignored, meta.problems


@pytest.mark.slow                 # a JVM: Kafka's own classes
def test_the_model_is_kafkas_store():
    """The oracle checked once more: 300 generated logs replayed by Kafka's
    RemotePartitionMetadataStore itself (tests/java/RemoteLogMetadataCacheOracle.java) hold
    what the model and kafkarec hold."""
    from support.jvm import classpath
    from support.java import compiled
    logs = []

    @settings(max_examples=300, deadline=None, database=None)
    @given(_log)
    def collect(ops):
        logs.append([generated_value(op) for op in ops])

    collect()
    program = compiled(os.path.join(ROOT, "tests", "java", "RemoteLogMetadataCacheOracle.java"),
                       classpath("jvm/kafka"))
    proc = subprocess.run(program.command(jvm_flags=["-XX:+UseSerialGC", "-Xmx256m"]), text=True,
                          input="".join(" ".join(v.hex() for v in values) + "\n" for values in logs),
                          capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    answers = [line.split()[1:] for line in proc.stdout.splitlines() if line.split()[:1] == ["HELD"]]
    assert len(answers) == len(logs)
    for values, answer in zip(logs, answers):
        records = [decode(TOPIC, None, v) for v in values]
        model = rlm_model.Store()
        for rec in records:
            model.handle(rec.value_schema, rec.value)
        java = dict(item.rsplit("=", 1) for item in answer)
        held = {"/".join(map(str, key)): state for key, state in model.held().items()}
        assert held == java, values
        assert {"/".join(map(str, key)): state
                for key, state in rlm_model.held_by(remote_metadata.replay(records)).items()} == java
