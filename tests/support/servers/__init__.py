"""Real servers the tests start besides Kafka and Spark, one per session: SeaweedFS's S3,
PostgreSQL and MariaDB captured by Debezium, a Kafka Connect worker with Iceberg's sink,
a Dask ``distributed.LocalCluster`` of worker processes."""
