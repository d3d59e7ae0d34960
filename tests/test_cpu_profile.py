"""scripts/cpu_profile.py: a process's kind from its command line, and a sample of a real
child's CPU reported under its kind."""
from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time

from support.paths import ROOT

_spec = importlib.util.spec_from_file_location("cpu_profile", os.path.join(ROOT, "scripts", "cpu_profile.py"))
cpu_profile = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cpu_profile)


def test_kinds():
    k = cpu_profile.kind
    assert k("java -Xmx768m -XX:+UseSerialGC -cp <classpath> kafka.Kafka /tmp/server.properties") == \
        "java: Kafka broker"
    assert k("java -Xshare:auto -cp <classpath> -Dfile.encoding=UTF-8 Oracle --serve") == "java: Oracle"
    assert k("bash /x/pyspark/bin/spark-class org.apache.spark.deploy.SparkSubmit --master local[2] "
             "/w/tests/spark/jobs/paths_job.py /in /out") == "java: Spark application paths_job.py"
    assert k("/b/bin/python -m pyspark.daemon pyspark.worker") == "python: -m pyspark.daemon pyspark.worker"
    assert k("/v/bin/python -m pip install -q x") == "python: pip"
    assert k("/v/bin/python -u -c import sys;exec(eval(sys.stdin.readline()))") == "python: pytest-xdist worker"
    assert k("/usr/lib/gcc/x86_64-linux-gnu/12/cc1 -quiet kafkarec/_core.c") == "C compiler (cc1)"
    assert k("[kworker/0:1H]") == "kernel threads"


def test_a_sample_counts_a_busy_child(tmp_path):
    out, ready = tmp_path / "profile.json", tmp_path / "ready"
    sampler = subprocess.Popen([sys.executable, os.path.join(ROOT, "scripts", "cpu_profile.py"), "sample",
                                str(out), "--interval", "0.2", "--ready", str(ready)])
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():           # its signal handlers are set and its first pass done
            assert sampler.poll() is None and time.monotonic() < deadline, "the sampler did not start"
            time.sleep(0.05)
        subprocess.run([sys.executable, "-c", "import time\nt = time.process_time()\n"
                        "while time.process_time() - t < 1.0: pass\nbusy_child = 1"], check=True, timeout=60)
    finally:
        sampler.send_signal(signal.SIGTERM)
        sampler.wait(timeout=60)
    run = json.loads(out.read_text())
    child = [p for p in run["processes"] if "busy_child" in p[2]]
    assert len(child) == 1 and 0.6 <= child[0][1] <= 1.6, child
    report = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "cpu_profile.py"), "report", str(out)],
                            capture_output=True, text=True, check=True, timeout=60).stdout
    assert "python: -c" in report and report.startswith("CPU by kind of process: ")
