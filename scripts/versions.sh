# The pyspark the project pins, in one place: scripts source this file
# (scripts/bare_python.sh: the bare Spark Python), the tests read it
# (tests/support/versions.py: the Spark Connect client, the docs' install line).
# Kafka's version lives in jvm/kafka/pom.xml (kafka.version), the one file Maven reads.
# LAKEHOUSE_PYSPARK_VERSION: the Spark the lakehouse runtimes load on (iceberg-spark-runtime-4.1_2.13
# fails on 4.3, delta-spark wants <= 4.2), for the lakehouse Spark check (bare_python.sh --lakehouse);
# the runtimes' own versions live in jvm/lakehouse-spark/pom.xml.
# One NAME=value a line, no quoting or expansion: the tests read it as text.
PYSPARK_VERSION=4.3.0
LAKEHOUSE_PYSPARK_VERSION=4.1.4
# Sail (pysail), the Rust Spark Connect server tests/spark/test_sail.py runs, and the Connect client it
# takes: Sail 0.7.2 refuses a server Python whose pyspark is 4.3 ("unsupported PySpark version"), and
# pyspark-client 4.2's schema() fails inside Sail (a timestamp type without a time zone); 4.1.3 works.
SAIL_VERSION=0.7.2
SAIL_PYSPARK_CLIENT_VERSION=4.1.3
