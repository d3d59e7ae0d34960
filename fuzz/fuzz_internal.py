"""The internal-topic decoders (__consumer_offsets, __transaction_state, __share_group_state,
__cluster_metadata, __remote_log_metadata) on arbitrary keys and values, lenient and strict,
plain and as Kafka's JSON: a record or kafkarec's typed error.

Then the same key and value in a batch through ``to_arrow(decode=...)``, strict and not: the typed
columns must refuse exactly what ``internal.decode`` refuses (the same error class) and otherwise hold
what it returns for the record."""
import atheris

from _harness import EXPECTED, run

import kafkarec
from kafkarec import internal
from kafkarec.internal import columns, schema
from kafkarec.internal.dumplog import java_json

TOPICS = sorted(internal.TOPICS)
OFFSETS = "__consumer_offsets"


def _decode(topic, key, value, strict):
    try:
        return internal.decode(topic, key, value, strict=strict, json=topic != OFFSETS), None
    except EXPECTED as exc:
        return None, type(exc)


def _row(topic, key, value, strict):
    data = kafkarec.build_batch([value], [key], [0])
    try:
        return columns.to_arrow(data, decode=topic, strict=strict).to_pylist()[0], None
    except EXPECTED as exc:
        return None, type(exc)


def _check_columns(topic, key, value, strict):
    rec, rec_error = _decode(topic, key, value, strict)
    row, row_error = _row(topic, key, value, strict)
    assert rec_error == row_error, (topic, key, value, strict, rec_error, row_error)
    if rec is None:
        return
    assert row["recordTypeName"] == rec.record_type, (row, rec)
    assert row["tombstone"] == rec.tombstone and row["valueVersion"] == (None if rec.tombstone else rec.value_version)
    if topic != OFFSETS:
        assert row["decodedKey"] == (None if rec.key is None else java_json(rec.key))
        assert row["decodedValue"] == (None if rec.value is None else java_json(rec.value))
        return
    if rec.key is not None:
        assert row["group"] == rec.key.get("group", rec.key.get("groupId")), (row, rec)
    commit = rec.record_type in ("OffsetCommit", "LegacyOffsetCommit")
    assert (row["committedTopic"], row["committedPartition"]) == (
        (rec.key["topic"], rec.key["partition"]) if commit else (None, None)), (row, rec)
    if commit and rec.value is not None and not rec.unknown:
        v = rec.value
        # a field the value's version lacks: its schema default (-1), or null if the schema has no such field
        defaults = {f.name: int(f.default) for f in schema.message(rec.value_schema).fields if f.default}
        assert (row["committedOffset"], row["leaderEpoch"], row["metadata"], row["commitTimestamp"],
                row["expireTimestamp"]) == (v["offset"], v.get("leaderEpoch", defaults.get("leaderEpoch")),
                                            v["metadata"], v["commitTimestamp"],
                                            v.get("expireTimestamp", defaults.get("expireTimestamp"))), (row, rec)
    else:
        assert row["committedOffset"] is None and row["metadata"] is None, (row, rec)


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    topic = TOPICS[fdp.ConsumeIntInRange(0, len(TOPICS) - 1)]
    strict, as_json = fdp.ConsumeBool(), fdp.ConsumeBool()
    key = fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 64)) if fdp.ConsumeBool() else None
    value = fdp.ConsumeBytes(fdp.remaining_bytes()) if fdp.ConsumeBool() else None
    try:
        internal.decode(topic, key, value, strict=strict, json=as_json)
    except EXPECTED:
        pass
    _check_columns(topic, key, value, strict)


if __name__ == "__main__":
    run(test_one_input)
