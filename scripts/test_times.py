"""Where the suite's time goes, from the JUnit XML files a full ``scripts/test.sh`` run writes
under ``.venv/test-results/``: the wall time of each pytest run, the summed test time per
directory, and the slowest tests.

    python scripts/test_times.py [XML ...] [--top N]

Per-directory figures are the sum of the tests' own durations (setup, call and teardown, as
pytest reports them), so a session fixture's start-up counts for the first test that asked for
it; with several lanes (pytest-xdist) they add up to more than the wall time.
"""
from __future__ import annotations

import argparse
import collections
import glob
import os
import sys
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_GLOB = os.path.join(ROOT, ".venv", "test-results", "*.xml")


def _directory(classname: str, file: str | None) -> str:
    """``tests/spark`` for a test of ``tests/spark/test_x.py``; JUnit's classname is dotted."""
    if file:
        return os.path.dirname(file) or "."
    parts = classname.split(".")
    # tests.spark.test_x[.Class] -> tests/spark
    for i, part in enumerate(parts):
        if part.startswith("test_"):
            return "/".join(parts[:i]) or "."
    return "/".join(parts[:-1]) or "."


def read(paths):
    runs, cases = [], []
    for path in paths:
        root = ET.parse(path).getroot()
        suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
        for suite in suites:
            runs.append((os.path.basename(path), float(suite.get("time", 0)), int(suite.get("tests", 0)),
                         int(suite.get("failures", 0)) + int(suite.get("errors", 0)),
                         int(suite.get("skipped", 0))))
            for case in suite.iter("testcase"):
                cls = case.get("classname", "")
                name = case.get("name", "")
                cases.append((float(case.get("time", 0)), _directory(cls, case.get("file")),
                              f"{cls}::{name}"))
    return runs, cases


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("xml", nargs="*", help=f"JUnit XML files (default: {DEFAULT_GLOB})")
    ap.add_argument("--top", type=int, default=20, help="how many of the slowest tests (default 20)")
    ap.add_argument("--closing-line", action="store_true",
                    help="print only the counts of every run together: 'suite: N passed, N failed, N skipped'")
    args = ap.parse_args(argv)
    paths = args.xml or sorted(glob.glob(DEFAULT_GLOB))
    if not paths:
        print(f"no JUnit XML found ({DEFAULT_GLOB}): run bash scripts/test.sh first", file=sys.stderr)
        return 2
    runs, cases = read(paths)
    if args.closing_line:
        tests, failed, skipped = (sum(r[i] for r in runs) for i in (2, 3, 4))
        print(f"suite: {tests - failed - skipped} passed, {failed} failed, {skipped} skipped")
        return 0
    print("pytest runs (wall time as pytest measured it):")
    for name, seconds, tests, failed, skipped in runs:
        print(f"  {name:<20} {seconds:8.1f} s  {tests:5d} tests, {failed} failed or errors, {skipped} skipped")
    per_dir = collections.defaultdict(lambda: [0.0, 0])
    for seconds, directory, _ in cases:
        per_dir[directory][0] += seconds
        per_dir[directory][1] += 1
    total = sum(v[0] for v in per_dir.values())
    print(f"\ntest time per directory (sum of test durations, {total:.1f} s in all):")
    for directory, (seconds, n) in sorted(per_dir.items(), key=lambda kv: -kv[1][0]):
        print(f"  {directory:<28} {seconds:8.1f} s  {n:5d} tests")
    print(f"\nthe {args.top} slowest tests:")
    for seconds, _, name in sorted(cases, reverse=True)[:args.top]:
        print(f"  {seconds:8.1f} s  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
