"""kafkarec's data source on Sail (a ``sail spark server``) against Spark classic on ``local[2]``, side by side.

    .venv/bin/python benchmarks/bench_sail.py [--records 1000000] [--repeats 5] [--data DIR] [--json FILE]

The log dir is bench_spark.py's (topic ``bench``, 5 partitions, one a codec: none, lz4, zstd, snappy,
gzip; 1000 records a batch, 16-byte keys, 100-byte values, one header; segments of 64 batches),
cached under ``--data``.  Two reads, each forced by ``df.write.format("noop")``, as bench_spark.py's:

* ``datasource``: ``spark.read.format("kafkarec").option("includeHeaders", "true").load(logdir)``;
* ``datasource-meta``: the same with the user schema ``topic, partition, offset, timestamp`` (the
  core's meta-only walk).

Spark classic is a SparkSession on ``local[2]`` in this process (the suite's pyspark); Sail is a
``sail spark server`` on 127.0.0.1 started by this script from the Sail venv
(tests/support/spark/sail.py: ``pysail`` and ``pyspark-client`` at scripts/versions.sh's pins,
kafkarec from this checkout), and its client is that venv's Python running this file with
``--client`` (pyspark 4.3, the suite's, is not a client Sail 0.7.2 takes).  Each read's rows are
checked once on both (count, sum of offsets, of value lengths, headers), then each round times
every read on classic and then on Sail, after one warm-up round; medians of ``--repeats`` rounds.
The server and the client are stopped at the end.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
if ROOT not in sys.path:
    sys.path.insert(1, ROOT)

from bench_spark import META_SCHEMA, check  # noqa: E402

READS = ("datasource", "datasource-meta")
STARTUP_S = 60


def reads(spark, logdir: str) -> dict:
    """The reads, by name: each a function making the DataFrame (the same on classic and Sail)."""
    return {
        "datasource": lambda: spark.read.format("kafkarec").option("includeHeaders", "true").load(logdir),
        "datasource-meta": lambda: spark.read.format("kafkarec").schema(META_SCHEMA).load(logdir),
    }


def timed(df) -> float:
    t = time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - t


def client_main(url: str, logdir: str, want_file: str) -> int:
    """``--client``: a Spark Connect client of Sail; each line on stdin names a read, and the seconds
    its noop write took go to stdout as a JSON line (``"check"``: check both reads' rows)."""
    import logging

    import spark_udfs
    from pyspark.sql import SparkSession
    logging.getLogger("spark_udfs").setLevel(logging.ERROR)     # Sail takes no artifacts: ship=False
    spark = SparkSession.builder.remote(url).getOrCreate()
    spark_udfs.register(spark)
    with open(want_file) as fh:
        want = json.load(fh)
    made = reads(spark, logdir)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        name = line.strip()
        if name == "check":
            for read, df in made.items():
                check(f"Sail {read}", df(), want)
            print(json.dumps({"checked": True}), flush=True)
        else:
            print(json.dumps({"seconds": timed(made[name]())}), flush=True)
    return 0


class SailClient:
    """The Sail server and this script's ``--client`` over it, in the Sail venv."""

    def __init__(self, logdir: str, want_file: str, work: str):
        from support.net import free_port
        from support.spark.sail import checkout_env, sail_python
        python = sail_python()
        port = free_port()
        self.log = os.path.join(work, "sail-server.log")
        with open(self.log, "wb") as out:
            self.server = subprocess.Popen([os.path.join(os.path.dirname(python), "sail"), "spark", "server",
                                            "--ip", "127.0.0.1", "--port", str(port)],
                                           cwd=work, env=checkout_env(), stdout=out, stderr=subprocess.STDOUT,
                                           start_new_session=True)
        t = time.perf_counter()
        while True:
            if self.server.poll() is not None:
                raise SystemExit(f"sail spark server exited with {self.server.returncode}: see {self.log}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.perf_counter() - t > STARTUP_S:
                    raise SystemExit(f"sail spark server did not listen in {STARTUP_S} s")
                time.sleep(0.1)
        self.started_s = time.perf_counter() - t
        self.client = subprocess.Popen([python, os.path.abspath(__file__), "--client", f"sc://127.0.0.1:{port}",
                                        logdir, want_file], env=checkout_env(), stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, text=True)
        self._reply()

    def _reply(self) -> dict:
        line = self.client.stdout.readline()
        if not line:
            raise SystemExit(f"the Sail client ended (exit {self.client.wait()}); the server's log: {self.log}")
        return json.loads(line)

    def ask(self, what: str) -> dict:
        self.client.stdin.write(what + "\n")
        self.client.stdin.flush()
        return self._reply()

    def close(self) -> None:
        from support.procs import stop_group
        if self.client.poll() is None:
            self.client.stdin.close()
            self.client.wait(timeout=60)
        stop_group(self.server, grace=10)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--data", default=os.path.join(tempfile.gettempdir(), "kafkarec-bench-spark"))
    ap.add_argument("--json", default=None)
    ap.add_argument("--client", nargs=3, metavar=("URL", "LOGDIR", "WANT"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.client:
        return client_main(*args.client)
    sys.path.insert(0, os.path.join(ROOT, "tests"))

    import warnings
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)
    from bench_spark import CODECS, build_logdir
    logdir = os.path.join(args.data, f"logdir-{args.records}-{'-'.join(CODECS)}")
    want = build_logdir(logdir, args.records)
    print(f"log dir {logdir}: {want['records']} records, {want['batches']} batches, "
          f"{want['segment_bytes'] / 1e6:.1f} MB of segments")
    work = tempfile.mkdtemp(prefix="kafkarec-bench-sail-")
    want_file = os.path.join(work, "want.json")
    with open(want_file, "w") as fh:
        json.dump(want, fh)

    import spark_udfs
    spark = spark_udfs.session_builder("kafkarec-bench-sail", master="local[2]",
                                       conf={"spark.sql.session.timeZone": "UTC"}).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark_udfs.register(spark)
    classic = reads(spark, logdir)
    for read, df in classic.items():
        check(f"classic {read}", df(), want)
    sail = SailClient(logdir, want_file, work)
    try:
        print(f"Spark classic {spark.version} on {spark.sparkContext.master}; Sail server started in "
              f"{sail.started_s:.1f} s", flush=True)
        sail.ask("check")
        walls: dict = {(engine, read): [] for engine in ("classic", "Sail") for read in READS}
        loads = []
        for round_ in range(args.repeats + 1):      # round 0 warms up
            for read in READS:
                seconds = {"classic": timed(classic[read]()), "Sail": sail.ask(read)["seconds"]}
                if round_:
                    for engine, s in seconds.items():
                        walls[(engine, read)].append(s)
            loads.append(os.getloadavg()[0])
    finally:
        sail.close()
        spark.stop()
    results = {}
    print(f"noop write of {want['records']} rows, median of {args.repeats} rounds after 1 warm-up "
          f"(load average {min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} cores):")
    for read in READS:
        for engine in ("classic", "Sail"):
            runs = walls[(engine, read)]
            med = statistics.median(runs)
            results[f"{read} | {engine}"] = {"median_s": med, "rows_per_s": want["records"] / med, "runs_s": runs}
            print(f"  {read:16s} {engine:8s} median {med:7.3f} s  {want['records'] / med / 1e6:6.3f} M rows/s  "
                  f"runs {', '.join(f'{w:.2f}' for w in runs)}")
        ratio = results[f"{read} | classic"]["median_s"] / results[f"{read} | Sail"]["median_s"]
        print(f"  {read}: Sail's rows/s / classic's: {ratio:.2f}x (target >= 1.0x: {'MET' if ratio >= 1 else 'NOT MET'})")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"records": want["records"], "results": results}, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
