"""``__remote_log_metadata`` replay (``kafkarec.log.remote_metadata.replay``) against a model of
Kafka's remote log metadata cache written from Kafka's source (tests/support/oracles/rlm_model.py).

The input is cut into up to 64 records: segment, update and partition-delete records built with
the project's encoder from fuzzed fields (any state id, offsets, leader epochs, a few partitions
and segment ids, so that updates meet the segments they name, come late or go to the wrong
partition), and raw values through kafkarec's decoder.  Each decoded record goes to the replay
and to the model: the segments held and their states must agree, so must the live copies, and
every record the model drops or Kafka would throw on must be one of kafkarec's problems."""
import os
import sys

import atheris

from _harness import EXPECTED, ROOT, run

sys.path.insert(0, os.path.join(ROOT, "tests"))

from support.oracles import rlm_model  # noqa: E402
from kafkarec.internal import decode, encode_record  # noqa: E402
from kafkarec.log import remote_metadata  # noqa: E402

TOPIC = remote_metadata.TOPIC
PARTITIONS = [("q3_Yx0-lTnWb5T0aN8Jw_A", "clicks", 0), ("q3_Yx0-lTnWb5T0aN8Jw_A", "clicks", 1),
              ("-_815o2ZH57GCKVHnvxDzQ", "txn", 0), ("-_815o2ZH57GCKVHnvxDzQ", "clicks", 0)]
SEGMENT_IDS = ["emWsqkJ1QsSpPPWreQUVQQ", "Nx_zmB0CRUmIs8ul-NUPEw", "hjuRKi93R2CQgqOvcefg-w",
               "A2q7Za74RqCFFsidLMzwfA", "1iDT96tyRHu6bzK4w4ToAg", "AAAAAAAAAAAAAAAAAAAAAA"]
INT64 = (-(1 << 63), (1 << 63) - 1)


def _state(fdp, known: int) -> int:
    return fdp.ConsumeIntInRange(0, known - 1) if fdp.ConsumeBool() else fdp.ConsumeIntInRange(-128, 127)


def _offset(fdp) -> int:
    return fdp.ConsumeIntInRange(-2, 40) if fdp.ConsumeBool() else fdp.ConsumeIntInRange(*INT64)


def _value(fdp) -> bytes:
    kind = fdp.ConsumeIntInRange(0, 3)
    tip = PARTITIONS[fdp.ConsumeIntInRange(0, len(PARTITIONS) - 1)]
    sid = SEGMENT_IDS[fdp.ConsumeIntInRange(0, len(SEGMENT_IDS) - 1)]
    if kind == 0:
        epochs = [(fdp.ConsumeIntInRange(-1, 3), _offset(fdp)) for _ in range(fdp.ConsumeIntInRange(0, 2))]
        value = rlm_model.segment_value(tip, sid, _offset(fdp), _offset(fdp), state=_state(fdp, 4), epochs=epochs)
    elif kind == 1:
        value = rlm_model.update_value(tip, sid, _state(fdp, 4))
    elif kind == 2:
        value = rlm_model.partition_delete_value(tip, _state(fdp, 3))
    else:
        return fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 200))
    schema = ("RemoteLogSegmentMetadataRecord", "RemoteLogSegmentMetadataUpdateRecord",
              "RemotePartitionDeleteMetadataRecord")[kind]
    return encode_record(TOPIC, rlm_model.API_KEYS[schema], None, value)[1]


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    records = []
    for _ in range(fdp.ConsumeIntInRange(0, 64)):
        try:
            records.append(decode(TOPIC, None, _value(fdp)))
        except EXPECTED:
            pass                      # a value Kafka's serde cannot read either: load() reports it
    model = rlm_model.Store()
    for rec in records:
        model.handle(rec.value_schema, rec.value)
    meta = remote_metadata.replay(records)
    held, expected = rlm_model.held_by(meta), model.held()
    ids = [key[3] for key in expected]
    if len(ids) == len(set(ids)):
        assert held == expected, (held, expected, meta.problems)
        assert {s.segment_id for s in meta.segments.values() if s.live} == {key[3] for key in model.live()}
    else:                             # one id in two partitions: kafkarec keeps one copy per id
        assert held.items() <= expected.items(), (held, expected)
    drops = [p for p in meta.problems if "kafkarec looks copies up by id" not in p]
    assert len(drops) == model.ignored, (meta.problems, model.ignored)


if __name__ == "__main__":
    run(test_one_input)
