"""The versions of the test components, read from their one home: pyspark's (the suite's and
the lakehouse runtimes') from scripts/versions.sh (what scripts/bare_python.sh installs), Kafka's from jvm/kafka/pom.xml
(the ``kafka.version`` property every Kafka artifact there uses)."""
from __future__ import annotations

import os
import xml.etree.ElementTree as ET

from support.paths import ROOT


def _script_versions() -> dict:
    out = {}
    with open(os.path.join(ROOT, "scripts", "versions.sh"), encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if line and not line.startswith("#"):
                name, _, value = line.partition("=")
                out[name] = value
    return out


def _kafka_version() -> str:
    pom = ET.parse(os.path.join(ROOT, "jvm", "kafka", "pom.xml"))
    return pom.getroot().findtext("{http://maven.apache.org/POM/4.0.0}properties/"
                                  "{http://maven.apache.org/POM/4.0.0}kafka.version")


PYSPARK = _script_versions()["PYSPARK_VERSION"]
LAKEHOUSE_PYSPARK = _script_versions()["LAKEHOUSE_PYSPARK_VERSION"]
KAFKA = _kafka_version()
SAIL = _script_versions()["SAIL_VERSION"]
SAIL_PYSPARK_CLIENT = _script_versions()["SAIL_PYSPARK_CLIENT_VERSION"]
