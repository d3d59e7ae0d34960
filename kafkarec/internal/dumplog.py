"""What ``kafka-dump-log.sh`` prints for internal-topic records with its decoder options.

``format_record(topic, key, value, offset)`` returns the text kafka-dump-log writes after a data record's
metadata (`` key: ... payload: ...``) with ``--offsets-decoder``, ``--transaction-log-decoder``,
``--share-group-state-decoder``, ``--cluster-metadata-decoder`` or ``--remote-log-metadata-decoder``;
``format_control(control_type_id, value, coordinator_epoch)`` the text for a control record. The format
is that of the kafka-dump-log of ``kafka_version`` (``KAFKA_VERSIONS``; Kafka 4.4 by default) reading the
records with schema set ``schemas`` (the fixtures' schema set 1eb7644 prints as that commit's
DumpLogSegments did).
"""
from __future__ import annotations

import base64
import math
from typing import Any, Dict, List, Optional, Tuple

from kafkarec.enums import ControlRecordType
from kafkarec.errors import InternalRecordError
from kafkarec.internal import topics as _topics
from kafkarec.internal.topics import PARTITION_DELETE_STATES, SEGMENT_STATES

__all__ = ["java_json", "java_double", "format_record", "format_control", "DECODER_OPTIONS",
           "transaction_partitions", "TRANSACTION_STATES", "state_name", "KAFKA_VERSIONS", "DEFAULT_KAFKA_VERSION",
           "check_kafka_version"]

#: The kafka-dump-log versions whose text the dump matches. Between 4.3 and 4.4 DumpLogSegments changed its
#: output in one place: 4.4's TransactionLogMessageParser replaces __transaction_state's
#: ``transactionStatus`` (the int8 4.3 prints) by the state's name (TransactionState.stateName; an id it
#: does not know as the number in a JSON string).
KAFKA_VERSIONS = ("4.3", "4.4")
DEFAULT_KAFKA_VERSION = "4.4"


def check_kafka_version(kafka_version: str) -> str:
    """`kafka_version` if the dump can print as that Kafka's kafka-dump-log, else ValueError."""
    if kafka_version not in KAFKA_VERSIONS:
        raise ValueError(f"kafka_version must be one of {', '.join(KAFKA_VERSIONS)}, not {kafka_version!r}")
    return kafka_version


def _since(kafka_version: str, first: str) -> bool:
    """Whether kafka-dump-log of `kafka_version` has what Kafka `first` changed."""
    return tuple(map(int, kafka_version.split("."))) >= tuple(map(int, first.split(".")))

#: kafka-dump-log's decoder option -> the internal topic it decodes
DECODER_OPTIONS = {
    "--offsets-decoder": "__consumer_offsets",
    "--transaction-log-decoder": "__transaction_state",
    "--share-group-state-decoder": "__share_group_state",
    "--cluster-metadata-decoder": "__cluster_metadata",
    "--remote-log-metadata-decoder": "__remote_log_metadata",
}

TRANSACTION_STATES = ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort",
                      "Dead", "PrepareEpochFence")


def state_name(names: Tuple[str, ...], code: int) -> str:
    """The name of a Kafka state enum's wire id (`names` in id order), else the number."""
    return names[code] if 0 <= code < len(names) else str(code)


def java_double(d: float) -> str:
    """Java's Double.toString (shortest digits that round-trip, as Java 19+ and Python both choose)."""
    if math.isnan(d):
        return "NaN"
    if math.isinf(d):
        return "Infinity" if d > 0 else "-Infinity"
    if d == 0:
        return "-0.0" if math.copysign(1, d) < 0 else "0.0"
    a = abs(d)
    if 1e-3 <= a < 1e7:
        s = repr(d)
        if "e" in s or "E" in s:
            s = f"{d:.{17}f}".rstrip("0")
        return s if "." in s else s + ".0"
    digits, exp = f"{a:e}".split("e")
    # shortest round-trip mantissa
    r = repr(a)
    if "e" in r:
        mant, e = r.split("e")
        exp_i = int(e)
    else:
        exp_i = int(exp)
        mant = repr(a / 10 ** exp_i)
        if float(mant) * 10 ** exp_i != a:
            mant = digits
    if "." not in mant:
        mant += ".0"
    if float(mant) >= 10:
        mant = repr(float(mant) / 10)
        exp_i += 1
    return ("-" if d < 0 else "") + mant + "E" + str(exp_i)


def _jstr(s: str) -> str:
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif o < 0x20:
            out.append({"\n": "\\n", "\t": "\\t", "\r": "\\r", "\b": "\\b", "\f": "\\f"}.get(ch, "\\u%04X" % o))
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def java_json(obj: Any) -> str:
    """Jackson's compact JSON text (its toString()), as kafka-dump-log prints decoded objects."""
    if obj is None:
        return "null"
    if obj is True:
        return "true"
    if obj is False:
        return "false"
    if isinstance(obj, int):
        return str(obj)
    if isinstance(obj, float):
        return java_double(obj)
    if isinstance(obj, str):
        return _jstr(obj)
    if isinstance(obj, (bytes, bytearray)):
        return _jstr(base64.b64encode(obj).decode("ascii"))
    if isinstance(obj, dict):
        return "{" + ",".join(_jstr(k) + ":" + java_json(v) for k, v in obj.items()) + "}"
    if isinstance(obj, (list, tuple)):
        return "[" + ",".join(java_json(v) for v in obj) + "]"
    raise TypeError(f"cannot write {type(obj).__name__} as JSON")


# ------------------------------------------------------------------ __transaction_state partitions order

def _java_string_hash(s: str) -> int:
    """Java's String.hashCode (over UTF-16 code units, int32 arithmetic)."""
    raw = s.encode("utf-16-be")
    h = 0
    for i in range(0, len(raw), 2):
        h = (31 * h + ((raw[i] << 8) | raw[i + 1])) & 0xFFFFFFFF
    return h


def _int32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v & 0x80000000 else v


def _table_size_for(capacity: int) -> int:
    c = max(capacity - 1, 4)
    return min(1 << c.bit_length(), 1 << 30)


def transaction_partitions(entries: Optional[List[dict]]) -> List[Tuple[str, int]]:
    """The partitions of a TransactionLogValue in the order kafka-dump-log prints them: the iteration order
    of the Scala 2.13 mutable.HashSet that TransactionMetadata fills with one ``++=`` of an immutable set per
    topic entry (buckets of improved TopicPartition hashes, ascending hash within a bucket)."""
    length, threshold, size = 16, 12, 0
    members: Dict[Tuple[str, int], int] = {}
    order: List[Tuple[str, int]] = []
    for entry in entries or ():
        topic = entry["topic"]
        th = _java_string_hash(topic)
        elems = []
        for p in entry.get("partitionIds") or ():
            tp = (topic, p)
            if tp not in elems:
                elems.append(tp)
        target = _table_size_for(int((len(elems) + 1) / 0.75))
        if target > length:
            length, threshold = target, int(target * 0.75)
        for tp in elems:
            if len(elems) <= 4 and size + 1 >= threshold:
                length, threshold = length * 2, int(length * 2 * 0.75)
            if tp in members:
                continue
            h = _int32(31 * (31 + tp[1]) + th)
            h = _int32(h ^ ((h & 0xFFFFFFFF) >> 16))
            members[tp] = h
            order.append(tp)
            size += 1
    # Bucket order, then ascending (signed) hash, then insertion order
    return sorted(order, key=lambda tp: (members[tp] & (length - 1), members[tp]))


# ----------------------------------------------------------------------------------------- formatting

def _remote_tip(tip: dict) -> str:
    return f"{tip['id']}:{tip['name']}-{tip['partition']}"


def _remote_custom(raw: Optional[str]) -> str:
    if raw is None:
        return "Optional.empty"
    return f"Optional[CustomMetadata{{{len(base64.b64decode(raw))} bytes}}]"


def _remote_epochs(entries: List[dict]) -> str:
    pairs = sorted((e["leaderEpoch"], e["offset"]) for e in entries)
    return "{" + ", ".join(f"{k}={v}" for k, v in dict(pairs).items()) + "}"


def _remote_text(rec: "_topics.InternalRecord", current: bool) -> str:
    v = rec.value
    txn = f", txnIdxEmpty={'true' if v.get('txnIndexEmpty') else 'false'}" if current else ""
    if rec.value_schema == "RemoteLogSegmentMetadataRecord":
        sid = v["remoteLogSegmentId"]
        return (f"RemoteLogSegmentMetadata{{remoteLogSegmentId=RemoteLogSegmentId{{topicIdPartition="
                f"{_remote_tip(sid['topicIdPartition'])}, id={sid['id']}}}, startOffset={v['startOffset']}, "
                f"endOffset={v['endOffset']}, brokerId={v['brokerId']}, maxTimestampMs={v['maxTimestampMs']}, "
                f"eventTimestampMs={v['eventTimestampMs']}, segmentLeaderEpochs="
                f"{_remote_epochs(v['segmentLeaderEpochs'])}, segmentSizeInBytes={v['segmentSizeInBytes']}, "
                f"customMetadata={_remote_custom(v['customMetadata'])}, "
                f"state={state_name(SEGMENT_STATES, v['remoteLogSegmentState'])}{txn}}}")
    if rec.value_schema == "RemoteLogSegmentMetadataUpdateRecord":
        sid = v["remoteLogSegmentId"]
        return (f"RemoteLogSegmentMetadataUpdate{{remoteLogSegmentId=RemoteLogSegmentId{{topicIdPartition="
                f"{_remote_tip(sid['topicIdPartition'])}, id={sid['id']}}}, "
                f"customMetadata={_remote_custom(v['customMetadata'])}, "
                f"state={state_name(SEGMENT_STATES, v['remoteLogSegmentState'])}, "
                f"eventTimestampMs={v['eventTimestampMs']}, brokerId={v['brokerId']}}}")
    if rec.value_schema == "RemotePartitionDeleteMetadataRecord":
        return (f"RemotePartitionDeleteMetadata{{topicPartition={_remote_tip(v['topicIdPartition'])}, "
                f"state={state_name(PARTITION_DELETE_STATES, v['remotePartitionDeleteState'])}, "
                f"eventTimestampMs={v['eventTimestampMs']}, brokerId={v['brokerId']}}}")
    return (f"RemoteLogSegmentMetadataSnapshot{{segmentId={v['segmentId']}, startOffset={v['startOffset']}, "
            f"endOffset={v['endOffset']}, maxTimestampMs={v['maxTimestampMs']}, segmentLeaderEpochs="
            f"{_remote_epochs(v['segmentLeaderEpochs'])}, segmentSizeInBytes={v['segmentSizeInBytes']}, "
            f"customMetadata={_remote_custom(v['customMetadata'])}, "
            f"state={state_name(SEGMENT_STATES, v['remoteLogSegmentState'])}{txn}}}")


def _transaction_text(v: dict) -> str:
    status = v["transactionStatus"]
    state = state_name(TRANSACTION_STATES, status)
    parts = [] if status == 0 else transaction_partitions(v.get("transactionPartitions"))
    return (f"producerId:{v['producerId']},producerEpoch:{v['producerEpoch']},state={state},"
            f"partitions=[{','.join(f'{t}-{p}' for t, p in parts)}],"
            f"txnLastUpdateTimestamp={v['transactionLastUpdateTimestampMs']},"
            f"txnTimeoutMs={v['transactionTimeoutMs']}")


def _prints_as_current(schemas: str) -> bool:
    """Whether the records print as today's kafka-dump-log prints them; the fixtures' Kafka
    (schema set 1eb7644) printed some differently."""
    return schemas != "1eb7644"


def format_parts(topic: str, key: Optional[bytes], value: Optional[bytes],
                 offset: int, schemas: str = _topics.DEFAULT_SCHEMAS,
                 kafka_version: str = DEFAULT_KAFKA_VERSION) -> Tuple[Optional[str], Optional[str]]:
    """(key text, payload text) as kafka-dump-log (of `kafka_version`) prints them after ``key: `` /
    ``payload: `` (None where it prints nothing) for a data record of `topic` at `offset`."""
    check_kafka_version(kafka_version)
    topic = _topics.decoder_for(topic)
    framing = _topics.TOPICS[topic][0]
    current = _prints_as_current(schemas)
    if framing == "metadata":
        try:
            rec = _topics.decode(topic, key, value, json=True, schemas=schemas)
        except InternalRecordError as e:
            sep = "offset " if topic == "__remote_log_metadata" or not current else ""
            return None, f"Error at {sep}{offset}, skipping. {e}"
        if rec.unknown:
            return None, (f"Error at offset {offset}, skipping. Unknown metadata record (api key "
                          f"{rec.api_key}, version {rec.value_version})")
        if topic == "__remote_log_metadata":
            return None, _remote_text(rec, current)
        return None, java_json({"type": rec.record_type, "version": rec.value_version, "data": rec.value})
    if key is None:
        raise InternalRecordError(f"Failed to decode message at offset {offset} using the {topic} decoder "
                                  "(message had a missing key)", 0)
    try:
        rec = _topics.decode(topic, key, value, json=True, schemas=schemas)
    except InternalRecordError as e:
        return f"Error at offset {offset}, skipping. {e}", None
    if framing == "transaction" and not current:
        if rec.unknown:
            return f"unknown::version={rec.key_version}", None
        key_text = f"transaction_metadata::transactionalId={rec.key['transactionalId']}"
        if rec.tombstone:
            return key_text, "<DELETE>"
        return key_text, _transaction_text(rec.value)
    if rec.unknown and rec.key is None:
        return f"Unknown record type {rec.key_version} at offset {offset}, skipping.", None
    if rec.unknown:
        return (f"Error at offset {offset}, skipping. Found an unknown record version {rec.value_version} "
                f"for {rec.key_version} type"), None
    key_text = java_json({"type": str(rec.key_version), "data": rec.key})
    if rec.tombstone:
        return key_text, "<DELETE>"
    data = rec.value
    if rec.value_schema == "TransactionLogValue" and _since(kafka_version, "4.4"):
        # 4.4 replaces the generated converter's int8 by the state's name, in place (see KAFKA_VERSIONS)
        data = dict(data, transactionStatus=state_name(TRANSACTION_STATES, data["transactionStatus"]))
    label = "type" if topic == "__share_group_state" and not current else "version"
    return key_text, java_json({label: str(rec.value_version), "data": data})


def format_record(topic: str, key: Optional[bytes], value: Optional[bytes], offset: int,
                  schemas: str = _topics.DEFAULT_SCHEMAS, kafka_version: str = DEFAULT_KAFKA_VERSION) -> str:
    """The text kafka-dump-log (of `kafka_version`) prints after a data record's metadata
    (`` key: ... payload: ...``)."""
    k, p = format_parts(topic, key, value, offset, schemas, kafka_version)
    out = ""
    if k is not None:
        out += f" key: {k}"
    if p is not None:
        out += f" payload: {p}"
    return out


def format_control(control_type_id: int, value: Optional[bytes], coordinator_epoch: Optional[int] = None,
                   schemas: str = _topics.DEFAULT_SCHEMAS) -> str:
    """The text kafka-dump-log prints after a control record's metadata."""
    name = ControlRecordType.from_id(control_type_id).name
    if control_type_id in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        return f" endTxnMarker: {name} coordinatorEpoch: {coordinator_epoch}"
    label = _topics.CONTROL_SCHEMAS.get(control_type_id, (None, None))[1]
    if label is None and control_type_id == ControlRecordType.LEADER_CHANGE and _prints_as_current(schemas):
        label = "LeaderChange:"           # newer DumpLogSegments decodes LeaderChange records too
    if label is None:
        return f" controlType: {name}({control_type_id})"
    return f" {label} " + java_json(_topics.decode_control(control_type_id, value, json=True, schemas=schemas))
