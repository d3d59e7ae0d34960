"""What every kafkarec fuzz target shares: the atheris entry point and the rule
that only kafkarec's own, typed errors may come out of a parser.

A target module defines ``test_one_input(data: bytes)`` and ends with
``if __name__ == "__main__": run(test_one_input)``.  Any other exception, a
crash, a hang (libFuzzer's -timeout) or a memory blow-up (-rss_limit_mb) is a
finding.
"""
from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import atheris  # noqa: E402

with atheris.instrument_imports():
    import kafkarec  # noqa: E402,F401

#: What a parser may raise on hostile input: kafkarec's typed errors.
EXPECTED = (kafkarec.KafkaRecError,)


def run(test_one_input) -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
