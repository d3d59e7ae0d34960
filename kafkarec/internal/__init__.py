"""Kafka's internal topics decoded: __consumer_offsets, __transaction_state, __share_group_state,
__cluster_metadata (+ .checkpoint snapshots) and __remote_log_metadata.

Schemas follow Apache Kafka at commit 1eb7644349cb07139d6a3c1ad1986979647cac99 (4.0.0-SNAPSHOT); see
kafkarec/internal/schemas/.
"""
from kafkarec.internal.schema import encode, message, messages, plan
from kafkarec.internal.schemas import KAFKA_COMMIT, KAFKA_VERSION
from kafkarec.internal.metadata import ClusterState, replay
from kafkarec.internal.topics import (InternalRecord, TOPICS, decode, decode_consumer_protocol, decode_control, encode_record,
                                      decoder_for, record_types)

__all__ = ["ClusterState", "replay", "InternalRecord", "TOPICS", "KAFKA_COMMIT", "KAFKA_VERSION", "decode", "decode_control",
           "decode_consumer_protocol", "decoder_for", "encode_record", "record_types", "encode", "message", "messages", "plan"]
