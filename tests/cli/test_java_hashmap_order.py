"""kafkarec dump prints DumpLogSegments' end-of-run reports (index mismatches, time index
errors, non-consecutive offsets) in the order Java's HashMap iterates their files:
:func:`kafkarec.cli.dump.java_hashmap_order` against a real ``java.util.HashMap``
(tests/java/HashMapOrder.java, run by ``java``)."""
import os
import random
import shutil
import subprocess

import pytest

from kafkarec.cli.dump import java_hashmap_order
from paths import TESTS

SOURCE = os.path.join(TESTS, "java", "HashMapOrder.java")


def java_order(keys, tmp_path):
    path = tmp_path / "keys.txt"
    path.write_text("".join(k + "\n" for k in keys), encoding="utf-8")
    proc = subprocess.run(["java", SOURCE, str(path)], capture_output=True, timeout=120, check=True)
    return proc.stdout.decode("utf-8").splitlines()


@pytest.mark.skipif(shutil.which("java") is None, reason="java is not installed")
def test_order_is_javas(tmp_path):
    rng = random.Random(27)
    topics = ["cf", "kp", "java", "txn", "\u00e9t\u00e9"]
    for n in (1, 2, 12, 13, 14, 15, 40, 97, 300):       # around the resize points too
        keys = list(dict.fromkeys(
            f"/tmp/logs/{rng.choice(topics)}-{rng.randrange(9)}/{rng.randrange(10 ** 6):020d}.log"
            for _ in range(n)))
        assert java_hashmap_order(keys) == java_order(keys, tmp_path), n
