"""Log directories written for the tests as a broker writes them (logdir.PartitionWriter and
the topics built on it), with models of what Kafka's rules make of them, and the
Kafka-written fixtures of tests/data read back (internal topics, Aiven's tiered objects)."""
