"""The session's real Kafka broker (KRaft, tiered storage) and what is written through it:
its topics, producers, deleteRecords, the restore tests' history, and kafkarec's reading
of its log dir as rows to compare with Kafka's consumer."""
