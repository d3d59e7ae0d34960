#!/usr/bin/env python
"""Where a run's CPU goes, by kind of process: the suite is CPU-bound on 2 cores (phases.json:
the machine ~98% busy), so its time falls only where CPU-seconds do.

    python scripts/cpu_profile.py sample OUT.json [--interval 1] [--ready FILE]   # until SIGTERM/SIGINT
    python scripts/cpu_profile.py report OUT.json [--top 40]

``sample`` reads every process's user+system time from /proc each interval and keeps the last
value seen per process (a process that lives shorter than the interval is missed, one that
ends loses at most an interval), with its command line as last seen; processes running
before the sampler started count from their value then.  ``report`` adds them up by kind: a
JVM by its main class or Spark application, a Python by its script or module, the C compiler,
pip, the kernel's threads.  ``KAFKAREC_CPU_PROFILE=1 bash scripts/test.sh`` samples the whole
suite beside it and prints the report after scripts/test_times.py's.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import re
import signal
import sys
import time


def _busy_idle(hz: int):
    with open("/proc/stat") as fh:
        ticks = [int(t) for t in fh.readline().split()[1:]]
    return (ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6] + ticks[7]) / hz, (ticks[3] + ticks[4]) / hz


def sample(out: str, interval: float, ready: str | None = None) -> None:
    hz = os.sysconf("SC_CLK_TCK")
    stop = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.append(True))
    start = time.monotonic()
    busy0, idle0 = _busy_idle(hz)
    before = {}                                   # (pid, start ticks) -> CPU-s when first seen
    seen = {}                                     # (pid, start ticks) -> [CPU-s, command, first, last]
    first_pass = True
    while not stop:
        now = time.monotonic() - start
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    stat = fh.read()
                fields = stat[stat.rindex(")") + 2:].split()
                key = (int(entry), int(fields[19]))
                cpu = (int(fields[11]) + int(fields[12])) / hz
                # the command line as last seen: a fork becomes what it execs (spark-class becomes java)
                try:
                    with open(f"/proc/{entry}/cmdline", "rb") as fh:
                        words = fh.read().decode(errors="replace").split("\0")
                    # a JVM's classpath is kilobytes; its main class comes after it
                    cmd = " ".join("<classpath>" if i and words[i - 1] in ("-cp", "-classpath") else w
                                   for i, w in enumerate(words)).strip()[:4000]
                except OSError:
                    cmd = ""
                if key not in seen:
                    seen[key] = [0.0, cmd or "[" + stat[stat.index("(") + 1:stat.rindex(")")] + "]", now, now]
                    if first_pass:
                        before[key] = cpu
                elif cmd:                         # an exiting process's is empty: keep the last
                    seen[key][1] = cmd
                seen[key][0] = cpu - before.get(key, 0.0)
                seen[key][3] = now
            except (OSError, ValueError, IndexError):
                continue                          # ended between the listing and the read
        if first_pass and ready:
            with open(ready, "w") as fh:          # what ran before now is counted from here on
                fh.write("sampling\n")
        first_pass = False
        time.sleep(interval)
    busy1, idle1 = _busy_idle(hz)
    with open(out, "w") as fh:
        json.dump({"wall_s": time.monotonic() - start, "busy_s": busy1 - busy0, "idle_s": idle1 - idle0,
                   "processes": [[pid, *v] for (pid, _), v in seen.items() if v[0] > 0]}, fh)


_JAVA_KINDS = [
    ("org.apache.spark.deploy.master.Master", "Spark master"),
    ("org.apache.spark.deploy.worker.Worker", "Spark worker"),
    ("CoarseGrainedExecutorBackend", "Spark executor"),
    ("SparkConnectServer", "Spark Connect server"),
    ("pyspark-shell", "Spark, in-process SparkSession"),
    ("kafka.Kafka ", "Kafka broker"),
    ("ConnectDistributed", "Kafka Connect worker"),
    ("org.codehaus.plexus.classworlds", "Maven"),
]


def kind(cmd: str) -> str:
    """A process's kind, from its command line."""
    if cmd.startswith("["):
        return "kernel threads"
    words = cmd.split()
    exe = os.path.basename(words[0]) if words else ""
    if exe == "java" or "spark-class" in cmd or "spark-submit" in cmd:
        for needle, name in _JAVA_KINDS:
            if needle in cmd:
                return "java: " + name
        app = re.findall(r"(\S+\.py)\b", cmd)
        if app:
            return "java: Spark application " + os.path.basename(app[-1])
        main = re.search(r" -(?:cp|classpath) <classpath> (?:-\S+ )*([\w.$]+)", cmd)
        return "java: " + (main.group(1) if main else "other")
    if exe in ("cc1", "cc1plus", "as", "ld", "collect2", "gcc", "x86_64-linux-gnu-gcc", "ccache"):
        return "C compiler (" + exe + ")"
    if exe.startswith("python") or exe in ("pytest", "kafkarec"):
        if " pip " in cmd or "pip-runner" in cmd or "pyproject_hooks" in cmd:
            return "python: pip"
        module = re.search(r" -m (\S+)(?: (pyspark\.\S+))?", cmd)
        if module:
            name = module.group(1) + (" " + module.group(2) if module.group(2) else "")
            return "python: -m " + ("pytest" if name == "pytest" else name)
        if "exec(eval(sys.stdin.readline()))" in cmd:
            return "python: pytest-xdist worker"
        script = re.search(r"(\S+\.py)\b", cmd)
        if script:
            return "python: " + os.path.basename(script.group(1))
        return "python: -c"
    return exe


def report(path: str, top: int) -> None:
    with open(path) as fh:
        run = json.load(fh)
    by_kind = collections.defaultdict(lambda: [0.0, 0])
    for _, cpu, cmd, _, _ in run["processes"]:
        by_kind[kind(cmd)][0] += cpu
        by_kind[kind(cmd)][1] += 1
    total = sum(v[0] for v in by_kind.values())
    print(f"CPU by kind of process: {total:.0f} CPU-s seen of the machine's {run['busy_s']:.0f} busy "
          f"({run['idle_s']:.0f} idle) over {run['wall_s']:.0f} s")
    print(f"{'CPU-s':>8} {'share':>6} {'procs':>6}  kind")
    for name, (cpu, n) in sorted(by_kind.items(), key=lambda kv: -kv[1][0])[:top]:
        print(f"{cpu:8.1f} {100 * cpu / max(total, 1e-9):5.1f}% {n:6d}  {name}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sample")
    s.add_argument("out")
    s.add_argument("--interval", type=float, default=1.0)
    s.add_argument("--ready", help="a file written once the first pass is done")
    r = sub.add_parser("report")
    r.add_argument("out")
    r.add_argument("--top", type=int, default=40)
    args = parser.parse_args(argv)
    if args.command == "sample":
        sample(args.out, args.interval, args.ready)
    else:
        report(args.out, args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
