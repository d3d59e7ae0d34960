"""Schema texts of Kafka's internal-topic messages, one module per schema set."""

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
