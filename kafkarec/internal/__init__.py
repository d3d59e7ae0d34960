"""Kafka's internal topics decoded: __consumer_offsets, __transaction_state, __share_group_state,
__cluster_metadata (+ .checkpoint snapshots) and __remote_log_metadata.

Two schema sets (kafkarec/internal/schemas/): "current" (Apache Kafka trunk at d79bd502, 2026-08-22; the
default) and "1eb7644" (trunk of 2024-10-25, 4.0.0-SNAPSHOT, the test fixtures' Kafka); every function
that reads or writes records takes ``schemas=``.
"""
from kafkarec.internal.schema import encode, kafka_commit, message, messages, plan
from kafkarec.internal.schemas import DEFAULT as DEFAULT_SCHEMAS, PROFILES as SCHEMA_SETS
from kafkarec.internal.metadata import ClusterState, replay
from kafkarec.internal.topics import (InternalRecord, RecordType, TOPICS, decode, decode_consumer_protocol,
                                      decode_control, decoder_for, encode_record, record_types)
from kafkarec.internal.columns import to_arrow

__all__ = ["ClusterState", "replay", "InternalRecord", "RecordType", "TOPICS", "DEFAULT_SCHEMAS", "SCHEMA_SETS",
           "decode", "decode_control", "decode_consumer_protocol", "decoder_for", "encode_record",
           "record_types", "encode", "kafka_commit", "message", "messages", "plan", "to_arrow"]
