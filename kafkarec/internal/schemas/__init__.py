"""Schema texts of Kafka's internal-topic messages, one subpackage per Kafka commit, one module per schema set.

* ``current``: Apache Kafka trunk at commit d79bd502 (2026-08-22), the default; its internal-topic messages
  are those of Kafka 4.4.0 field for field (tests/internal/test_internal_kafka_schemas.py holds them against
  the generated classes of the Kafka the tests run);
* ``1eb7644``: Apache Kafka trunk at commit 1eb7644 (2024-10-25, 4.0.0-SNAPSHOT), what the test fixtures
  were written with. Its share-group records are not compatible with current Kafka's (share groups were a
  preview), and record type 16 of __consumer_offsets was unknown then.
"""

PROFILES = {"current": "current", "1eb7644": "k1eb7644"}
DEFAULT = "current"


def profile_package(name: str) -> str:
    try:
        return "kafkarec.internal.schemas." + PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown schema set {name!r} (one of {', '.join(PROFILES)})") from None
