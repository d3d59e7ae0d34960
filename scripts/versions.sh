# The pyspark the project pins, in one place: scripts source this file
# (scripts/bare_python.sh: the bare Spark Python), the tests read it
# (tests/support/versions.py: the Spark Connect client, the docs' install line).
# Kafka's version lives in jvm/kafka/pom.xml (kafka.version), the one file Maven reads.
# One NAME=value a line, no quoting or expansion: the tests read it as text.
PYSPARK_VERSION=4.3.0
