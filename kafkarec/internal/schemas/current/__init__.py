"""Kafka's internal-topic message schemas at commit d79bd502 (Apache Kafka trunk of 2026-08-22): current Kafka,
with streams groups, consumer-group regular expressions and the coordinator record types by api key."""

KAFKA_COMMIT = "d79bd502ec7fa49335afa422f442af80ed0ab8f6"
KAFKA_VERSION = "trunk of 2026-08-22"

SETS = (
    "group_coordinator",
    "transaction_coordinator",
    "share_coordinator",
    "metadata",
    "remote_log_metadata",
    "raft",
    "consumer_protocol",
)
