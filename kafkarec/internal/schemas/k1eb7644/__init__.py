"""Kafka's internal-topic message schemas at commit 1eb7644 (trunk of 2024-10-25, 4.0.0-SNAPSHOT): the
commit of the test fixtures (tests/data/internal-topics/)."""

KAFKA_COMMIT = "1eb7644349cb07139d6a3c1ad1986979647cac99"
KAFKA_VERSION = "4.0.0-SNAPSHOT"

SETS = (
    "group_coordinator",
    "transaction_coordinator",
    "share_coordinator",
    "metadata",
    "remote_log_metadata",
    "raft",
    "consumer_protocol",
)
