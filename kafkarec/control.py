"""Control records: keys and values as Kafka writes them, in one dict shape.

Key (every control type): ``version int16 | type int16``.  Values, as :attr:`kafkarec.Record.control_value`
returns them and :meth:`kafkarec.RecordBatchBuilder.append_control` takes them, with the field names of
Kafka's JSON converters (what ``kafka-dump-log`` prints, and the internal-topic columns' JSON)::

    ABORT / COMMIT (EndTxnMarker)  {"version": 0, "coordinatorEpoch": 5}
    LEADER_CHANGE                  {"version": 0, "leaderId": 1, "voters": [{"voterId": 1}],
                                    "grantingVoters": [{"voterId": 1}]}
    SNAPSHOT_HEADER                {"version": 0, "lastContainedLogTimestamp": 1700000000000}
    SNAPSHOT_FOOTER                {"version": 0}
    KRAFT_VERSION                  {"version": 0, "kRaftVersion": 1}
    KRAFT_VOTERS                   {"version": 0, "voters": [{"voterId": 1,
                                    "voterDirectoryId": "AAECAwQFBgcICQoLDA0ODw",   (Kafka's base64 UUID text)
                                    "endpoints": [{"name": "CONTROLLER", "host": "h", "port": 9093}],
                                    "kRaftVersionFeature": {"minSupportedVersion": 0,
                                                            "maxSupportedVersion": 1}}]}

The key and the ABORT/COMMIT marker are read by the compiled core (Kafka's ControlRecordType /
EndTransactionMarker rules: short keys or values and negative versions are errors, longer ones are read as
far as known).  The KRaft values are Kafka generated messages at version 0 without a version prefix
(flexible: compact lengths and tagged fields): they are decoded and encoded by the internal schema plans
(kafkarec.internal, schema set "current"), the one codec kafkarec has for Kafka's message protocol; null
arrays or strings are errors, invalid UTF-8 is replaced as Java does and extra bytes are ignored.
``strict=True`` (what a record read with ``strict=True`` passes) refuses the extra bytes, invalid UTF-8 and
unsigned varints with bits past 32, which Kafka's writers never write.

That codec is registered with the core as part of the core's first load (``kafkarec._boot.loader`` calls
kafkarec's hook, which calls :func:`_register`): the core asks it and never imports this module.
"""
from __future__ import annotations

from typing import Any, Dict, Optional

from kafkarec._core import (encode_control_key, encode_control_value, parse_control_key,
                            parse_control_value, parse_end_txn_marker)
from kafkarec.errors import InternalRecordError, InvalidRecordError

__all__ = [
    "parse_control_key", "parse_end_txn_marker", "parse_control_value",
    "encode_control_key", "encode_control_value",
]

# control type id -> schema of its value (and kafka-dump-log's label), the one table (kafkarec.internal.topics)
def _schemas():
    from kafkarec.internal.topics import CONTROL_SCHEMAS
    return CONTROL_SCHEMAS


class _KRaftCodec:
    """KRaft control values by the internal schema plans (registered with the core)."""

    @staticmethod
    def decode(type_id: int, value: Optional[bytes], position: int, strict: bool) -> Optional[Dict[str, Any]]:
        from kafkarec.enums import ControlRecordType
        schemas = _schemas()
        if type_id not in schemas:
            return None
        name = ControlRecordType.from_id(type_id).name
        if value is None:
            raise InvalidRecordError(f"{name} control record has a null value", position)
        from kafkarec.internal.topics import decode_control
        try:
            return decode_control(type_id, value, strict=strict)
        except InternalRecordError as exc:
            # a record's error: at the record, with the byte inside the value in the reason
            raise InvalidRecordError(f"{name} value: {exc.reason} (value byte {exc.position})",
                                     position) from None

    @staticmethod
    def encode(type_id: int, value: Dict[str, Any]) -> bytes:
        schemas = _schemas()
        if type_id not in schemas:
            raise ValueError(f"Cannot append record with unknown control record type {type_id}")
        from kafkarec.internal.schema import encode
        return encode(schemas[type_id][0], 0, value)


def _register(core) -> None:
    """Give ``core`` (``kafkarec._core``, as it first loads: kafkarec's hook, ``kafkarec._core_loaded``)
    the codec of KRaft control values."""
    core.set_control_codec(_KRaftCodec)
