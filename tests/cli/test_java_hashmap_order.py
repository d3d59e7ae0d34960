"""kafkarec dump prints DumpLogSegments' end-of-run reports (index mismatches, time index
errors, non-consecutive offsets) in the order Java's HashMap iterates their files:
:func:`kafkarec.cli.dump.java_hashmap_order` against a real ``java.util.HashMap``
(tests/java/HashMapOrder.java, compiled once, every key list in one JVM run)."""
import os
import random
import shutil
import subprocess

import pytest

from kafkarec.cli.dump import java_hashmap_order
from support.paths import TESTS
from support import java

SOURCE = os.path.join(TESTS, "java", "HashMapOrder.java")


def java_orders(key_lists, tmp_path):
    """Java's order of each list of keys, one JVM for all of them."""
    files = []
    for i, keys in enumerate(key_lists):
        path = tmp_path / f"keys-{i}.txt"
        path.write_text("".join(k + "\n" for k in keys), encoding="utf-8")
        files.append(str(path))
    proc = subprocess.run(java.compiled(SOURCE).command(*files), capture_output=True, timeout=120, check=True)
    maps = proc.stdout.decode("utf-8").split("\n\n")
    assert maps.pop() == "" and len(maps) == len(key_lists), proc.stdout
    return [m.split("\n") for m in maps]


@pytest.mark.skipif(shutil.which("java") is None, reason="java is not installed")
def test_order_is_javas(tmp_path):
    rng = random.Random(27)
    topics = ["cf", "kp", "java", "txn", "\u00e9t\u00e9"]
    sizes = (1, 2, 12, 13, 14, 15, 40, 97, 300)        # around the resize points too
    key_lists = [list(dict.fromkeys(
        f"/tmp/logs/{rng.choice(topics)}-{rng.randrange(9)}/{rng.randrange(10 ** 6):020d}.log"
        for _ in range(n))) for n in sizes]
    for n, keys, javas in zip(sizes, key_lists, java_orders(key_lists, tmp_path)):
        assert java_hashmap_order(keys) == javas, n
