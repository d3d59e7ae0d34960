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

import importlib  # noqa: E402
import pkgutil  # noqa: E402

# Every kafkarec module is imported here, inside the instrumentation block, so
# that atheris is guided by the Python layers too (a module a target imports
# later would otherwise run uninstrumented).
with atheris.instrument_imports(include=["kafkarec"]):
    import kafkarec  # noqa: E402,F401
    for _mod in pkgutil.walk_packages(kafkarec.__path__, "kafkarec."):
        if _mod.name.endswith("__main__"):
            continue
        try:
            importlib.import_module(_mod.name)
        except ImportError:  # an optional dependency (pyarrow) is missing
            pass

#: What a parser may raise on hostile input: kafkarec's typed errors.
EXPECTED = (kafkarec.KafkaRecError,)


def run(test_one_input) -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
