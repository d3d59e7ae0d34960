"""Kafka's internal topics decoded: __consumer_offsets, __transaction_state, __share_group_state,
__cluster_metadata (+ .checkpoint snapshots) and __remote_log_metadata -- the codec of their records
(Kafka's message protocol by schema, record by record or into Arrow columns, and as kafka-dump-log
prints them).  What the records say of a cluster read from its log (``__cluster_metadata`` replayed,
the coordinators' transactions, group offsets and share groups) is a room above, kafkarec.cluster,
which reads the log through kafkarec.scan; this one reads no log and imports nothing above it
(tests/test_layout.py).

Two schema sets (kafkarec/internal/schemas/): "current" (Apache Kafka trunk at d79bd502, 2026-08-22; the
default) and "1eb7644" (trunk of 2024-10-25, 4.0.0-SNAPSHOT, the test fixtures' Kafka); every function
that reads or writes records takes ``schemas=``.
"""
from kafkarec.internal.schema import encode, kafka_commit, message, messages, plan
from kafkarec.internal.schemas import DEFAULT as DEFAULT_SCHEMAS, PROFILES as SCHEMA_SETS
from kafkarec.internal.topics import (InternalRecord, RecordType, TOPICS, decode, decode_consumer_protocol,
                                      decode_control, decoder_for, encode_record, record_types)
from kafkarec.internal.columns import to_arrow

__all__ = ["InternalRecord", "RecordType", "TOPICS", "DEFAULT_SCHEMAS", "SCHEMA_SETS",
           "decode", "decode_control", "decode_consumer_protocol", "decoder_for", "encode_record",
           "record_types", "encode", "kafka_commit", "message", "messages", "plan", "to_arrow"]
