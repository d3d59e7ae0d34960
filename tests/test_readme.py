"""The README's Python examples run as written (those that need no SparkSession)."""
import os
import re

import pytest

README = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md")
BLOCKS = re.findall(r"```python\n(.*?)```", open(README, encoding="utf-8").read(), re.S)
STANDALONE = [b for b in BLOCKS if "spark" not in b]


def test_readme_has_examples():
    assert len(STANDALONE) >= 4


@pytest.mark.parametrize("index", range(len(STANDALONE)))
def test_readme_example_runs(index, capfd):
    exec(compile(STANDALONE[index], f"README example {index}", "exec"), {})
    out = capfd.readouterr().out
    if "print(" in STANDALONE[index]:
        assert out


def test_error_example_output(capfd):
    (block,) = [b for b in STANDALONE if "DecodeError" in b]
    exec(block, {})
    assert capfd.readouterr().out.strip() == (
        "0 at byte 0: Record size 5 is less than the minimum record overhead (14)")
