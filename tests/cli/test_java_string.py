"""``dump --payload-encoding java`` renders bytes as Java's ``new String(bytes, UTF_8)``
(what kafka-dump-log prints), through the core's one Java decoding rule.

CASES were printed by Java 17 (tests/java/JavaString.java, given every HEX at once); when a
``java`` is on PATH the test asks it again, so the table cannot drift from Java."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

import kafkarec
from kafkarec.cli.common import PAYLOAD_RENDERERS, java_string
from kafkarec.cli import main
from support import java

HERE = os.path.dirname(os.path.abspath(__file__))
ORACLE = os.path.join(os.path.dirname(HERE), "java", "JavaString.java")

# hex input -> code points of new String(bytes, UTF_8) (Java 17)
CASES = {
    "78eda08079": [0x78, 0xFFFD, 0x79],          # an encoded surrogate: ONE replacement
    "eda080eda081": [0xFFFD, 0xFFFD],
    "c0af": [0xFFFD, 0xFFFD],                    # overlong
    "61e282": [0x61, 0xFFFD],                    # cut off at the end
    "f0908080": [0x10000],
    "f4908080": [0xFFFD] * 4,                    # above U+10FFFF
    "e0808062": [0xFFFD, 0xFFFD, 0xFFFD, 0x62],
    "ff41": [0xFFFD, 0x41],
    "f09f9880": [0x1F600],
    "e282ac": [0x20AC],
}


@pytest.mark.parametrize("hexdata, code_points", sorted(CASES.items()))
def test_java_string_is_javas_decoding(hexdata, code_points):
    assert [ord(c) for c in java_string(bytes.fromhex(hexdata))] == code_points
    assert PAYLOAD_RENDERERS["java"] is java_string


def test_python_replace_differs_where_java_does():
    data = b"x\xed\xa0\x80y"
    assert java_string(data) == "x\ufffdy"
    assert data.decode("utf-8", "replace") == "x\ufffd\ufffd\ufffdy"


@pytest.mark.skipif(shutil.which("java") is None, reason="no java on PATH to re-check the recorded table")
def test_table_matches_a_live_java():
    out = subprocess.run(java.compiled(ORACLE).command(*CASES), capture_output=True, text=True,
                         timeout=120, check=True).stdout
    for line in out.splitlines():
        hexdata, points = line.split(" ", 1)
        assert [int(p, 16) for p in points.strip(",").split(",")] == CASES[hexdata], line


def test_dump_renders_java_strings(tmp_path, capfd):
    b = kafkarec.RecordBatchBuilder(base_offset=0)
    b.append(b"x\xed\xa0\x80y", key=b"k", timestamp=1_700_000_000_000)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b.build())
    assert main(["dump", "--print-data-log", str(path)]) == 0
    assert "key: k payload: x\ufffdy" in capfd.readouterr()[0]
