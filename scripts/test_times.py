"""Where the suite's time goes, from the JUnit XML files a full ``scripts/test.sh`` run writes
under ``.venv/test-results/``: the wall time of each pytest run, the summed test time per
directory, and the slowest tests.

    python scripts/test_times.py [XML ...] [--top N]
    python scripts/test_times.py --closing-line [--elapsed SECONDS --budget SECONDS]

With ``--elapsed`` (scripts/test.sh passes the whole command's seconds, set-up included) the closing
line holds the wall time, and a run over ``--budget`` (the suite's: 30 minutes on a fresh 2-core
machine) ends with a WARNING line and exit status 1.  ``.venv/test-results/phases.json``, when
test.sh wrote it, adds where the whole command's wall time went: set-up, pytest, and beside it
scripts/test_deps.sh's wheelhouses and the release check.

Per-directory figures are the sum of the tests' own durations (setup, call and teardown, as
pytest reports them), so a session fixture's start-up counts for the first test that asked for
it; with several lanes (pytest-xdist) they add up to more than the wall time.
"""
from __future__ import annotations

import argparse
import collections
import glob
import json
import os
import re
import sys
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_GLOB = os.path.join(ROOT, ".venv", "test-results", "*.xml")
PHASES = os.path.join(ROOT, ".venv", "test-results", "phases.json")
#: The suite's budget: the whole of ``bash scripts/test.sh`` on a fresh 2-core machine, set-up included.
BUDGET_SECONDS = 30 * 60


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


def failures(paths):
    """``(what, test, first line of its message)`` for every test of ``paths`` that failed or
    errored (``what``: failure or error, an error being one in a fixture's set-up or teardown)."""
    found = []
    for path in paths:
        for case in ET.parse(path).getroot().iter("testcase"):
            for child in case:
                if child.tag in ("failure", "error"):
                    text = (child.get("message") or child.text or "").strip()
                    found.append((child.tag, f"{case.get('classname', '')}::{case.get('name', '')}",
                                  text.splitlines()[0][:200] if text else "(no message)"))
    return found


#: An exception's line in a traceback pytest prints as an internal error (``INTERNALERROR> E ...
#: OSError: [Errno 28] ...``, ``RuntimeError: can't start new thread``).
_EXCEPTION_LINE = re.compile(r"^INTERNALERROR>(?: E)?\s+[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning)\b")

#: How many failed tests the closing lines name one by one (then: how many more, by message).
NAMED_FAILURES = 25


def closing_report(paths, log_paths, phases_file: str | None) -> None:
    """What failed, where only the output's tail is read: each failed test with its message's first
    line, how many failed with each message, a pytest internal error's last lines (a worker's:
    the tests queued to it never ran, and every exception line it holds), and a warning when the
    disk's free space or the available memory ran low."""
    found = failures(paths)
    if found:
        print(f"---- what failed ({len(found)}; the first {min(len(found), NAMED_FAILURES)}, then by message) ----")
        for what, test, message in found[:NAMED_FAILURES]:
            print(f"  {what}: {test}: {message}")
        by_message = collections.Counter(message for _, _, message in found)
        for message, n in by_message.most_common(10):
            print(f"  {n:5d} x {message}")
    for log in log_paths:
        if not os.path.isfile(log):
            continue
        with open(log, encoding="utf-8", errors="replace") as fh:
            internal = [line.rstrip() for line in fh if line.startswith("INTERNALERROR>")]
        if internal:
            # a traceback's cause is its last lines (one worker's, quoted in the controller's, which
            # may end with a few of its own); with two workers' errors, the first one's cause is
            # among the exception lines
            print(f"---- pytest internal error ({os.path.basename(log)}, its last lines) ----")
            for line in internal[-12:]:
                print("  " + line[:300])
            raised = list(dict.fromkeys(line for line in internal if _EXCEPTION_LINE.match(line)))
            if raised:
                print("  the exceptions it names:")
                for line in raised[:10]:
                    print("    " + line[:300])
    if phases_file and os.path.isfile(phases_file):
        with open(phases_file) as fh:
            lowest = json.load(fh).get("lowest_kib") or {}
        for what, kib in lowest.items():
            if 0 < kib < LOW_KIB:
                print(f"WARNING: the {what} fell to {kib / 2**20:.2f} GiB during the run")


#: Below this much free disk or available memory (KiB), seen during a full run, the closing lines warn.
LOW_KIB = 2 * 2**20


def over_budget(elapsed: float | None, budget: float) -> int:
    """1 and a WARNING line when the whole command took longer than the budget, else 0."""
    if elapsed is None or elapsed <= budget:
        return 0
    print(f"WARNING: the whole test command took {elapsed:.0f} s, over the suite's budget of {budget:.0f} s "
          f"(by {elapsed - budget:.0f} s): scripts/test_times.py shows where the time went")
    return 1


def phases(xml) -> None:
    """Where test.sh's wall time went (its phases.json), when the report is of its results."""
    if xml or not os.path.isfile(PHASES):
        return
    with open(PHASES) as fh:
        p = json.load(fh)
    print(f"the whole command: {p['whole']:.0f} s = set-up {p['setup']:.0f} s + pytest {p['pytest']:.0f} s "
          f"(beside it: the wheelhouses {p['deps']:.0f} s, then the release check "
          f"{p['release']:.0f} s, ending {p['beside_end']:.0f} s after the set-up)")
    if p.get("machine_busy_s") is not None:
        busy, idle = p["machine_busy_s"], p["machine_idle_s"]
        share = busy / (busy + idle) if busy + idle else 0.0
        # own: what the run's processes used (a daemon it started and that left its parent is not
        # counted); the machine: everything, so a quiet machine's figure is the run's
        print(f"CPU: the run's processes {p['own_cpu_s']:.0f} CPU-s; the machine busy {busy:.0f} CPU-s of "
              f"{busy + idle:.0f} ({share:.0%} of its {p['cores']} cores over the run)")
    print()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("xml", nargs="*", help=f"JUnit XML files (default: {DEFAULT_GLOB})")
    ap.add_argument("--top", type=int, default=20, help="how many of the slowest tests (default 20)")
    ap.add_argument("--closing-line", action="store_true",
                    help="print only the counts of every run together: 'suite: N passed, N failed, N skipped'")
    ap.add_argument("--elapsed", type=float, help="the whole command's wall time in seconds, set-up included")
    ap.add_argument("--budget", type=float, default=BUDGET_SECONDS,
                    help=f"the suite's budget in seconds (default {BUDGET_SECONDS}): over it, a WARNING and exit 1")
    ap.add_argument("--phases", help="test.sh's phases.json (default: its own, when no XML is named)")
    args = ap.parse_args(argv)
    paths = args.xml or sorted(glob.glob(DEFAULT_GLOB))
    if not paths:
        print(f"no JUnit XML found ({DEFAULT_GLOB}): run bash scripts/test.sh first", file=sys.stderr)
        return 2
    runs, cases = read(paths)
    if args.closing_line:
        # (test.sh's phases.json is of its own results only)
        closing_report(paths, [p[:-len(".xml")] + ".log" for p in paths],
                       args.phases or (None if args.xml else PHASES))
        tests, failed, skipped = (sum(r[i] for r in runs) for i in (2, 3, 4))
        took = "" if args.elapsed is None else f" in {args.elapsed:.0f} s (budget {args.budget:.0f} s)"
        print(f"suite: {tests - failed - skipped} passed, {failed} failed, {skipped} skipped{took}")
        return over_budget(args.elapsed, args.budget)
    phases(args.xml)
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
