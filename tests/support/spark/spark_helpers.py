"""Shared pieces of the Spark tests: the session, sample data, the oracle, the user's environment
(wheelhouse, bare Python, a Spark Connect client); the standalone cluster and the Connect server
are in support/spark/spark_cluster.py.

The oracle is kafkarec's own decoder (``iter_arrow``) run on the same bytes
without Spark; Spark's rows are compared with it column by column.
"""
from __future__ import annotations

from support.paths import ROOT
import glob
import os
import shutil
import subprocess
import sys

import pytest

VENV_PY = sys.executable

# Columns compared between Spark and the oracle.
KAFKA_COLUMNS = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers"]
RECORD_COLUMNS = ["key", "value", "offset", "timestamp", "timestampType", "headers"]


def spark_available() -> str | None:
    """Why the Spark tests cannot run here, or None."""
    try:
        import pyspark  # noqa: F401
        import pyarrow  # noqa: F401
        import pandas  # noqa: F401
    except ImportError as exc:
        return f"pyspark/pyarrow/pandas missing: {exc}"
    if not (shutil.which("java") or os.environ.get("JAVA_HOME")):
        return "no Java runtime"
    return None


#: The JVM flags of every Spark JVM the suite starts (the in-process session's, each application's
#: driver and executors, the standalone cluster's daemons, the Connect server), as the suite's other
#: JVMs run (the broker, Kafka's tools: support/brokers/kafka_broker.py, support/jvm.py): one JIT tier and the
#: serial collector.  The suite's applications are short and read little, and on a 2-core machine C2's
#: compiler threads and G1's workers cost more CPU than they save (measured on a small local
#: application: 49 CPU-s -> 33 CPU-s).  Kafkarec's code and what the tests prove do not depend on them.
SPARK_JVM_FLAGS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def spark_conf_dir() -> str:
    """A ``SPARK_CONF_DIR`` whose ``spark-defaults.conf`` gives drivers and executors
    :data:`SPARK_JVM_FLAGS`, as a user's Spark installation may set defaults: the applications a
    user's Python starts itself (``SparkSession.builder...getOrCreate()``, ``remote("local")``),
    which the suite does not launch with its own ``--conf``, run on them too.  A ``--conf`` of the
    same key still wins, as in any Spark."""
    folder = os.path.join(ROOT, ".cache", "spark-conf")
    path = os.path.join(folder, "spark-defaults.conf")
    text = "".join(f"spark.{side}.extraJavaOptions {SPARK_JVM_FLAGS}\n" for side in ("driver", "executor"))
    try:
        with open(path) as fh:
            if fh.read() == text:
                return folder
    except OSError:
        pass
    os.makedirs(folder, exist_ok=True)
    part = f"{path}.{os.getpid()}"
    with open(part, "w") as fh:
        fh.write(text)
    os.replace(part, path)          # whole: another worker may read it meanwhile
    return folder


def spark_env(extra=None) -> dict:
    env = dict(os.environ)
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    env["PYSPARK_PYTHON"] = VENV_PY
    env["PYSPARK_DRIVER_PYTHON"] = VENV_PY
    env["PYTHONWARNINGS"] = "ignore:PySpark does not yet fully support pandas:FutureWarning"
    env.update(extra or {})
    return env


def make_session(cache_dir: str):
    """local[2] on 127.0.0.1, UI off, UTC, 4g driver; kafkarec shipped by register()."""
    import warnings
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas",
                            category=FutureWarning)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = VENV_PY
    os.environ["KAFKAREC_SPARK_CACHE"] = cache_dir
    import spark_udfs
    spark = spark_udfs.session_builder("kafkarec-tests", conf={
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.driver.extraJavaOptions": SPARK_JVM_FLAGS,
    }).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


# -- the oracle --------------------------------------------------------------------------

def read(spark, path, **options):
    """``spark.read.format("kafkarec")`` with ``options``, loaded from ``path``; the
    ``headers`` column included (``includeHeaders=true``) unless ``options`` say otherwise."""
    reader = spark.read.format("kafkarec")
    if not any(k.lower() == "includeheaders" for k in options):
        options = {"includeHeaders": "true", **options}
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load(path)


def sample_logs(tmp_path_factory, seed: int = 7) -> str:
    """A sample log directory written by kafkarec.sample (every codec, a transaction, a
    corrupt batch ...) in a fresh temporary folder."""
    from kafkarec.sample import generate
    root = str(tmp_path_factory.mktemp("sample") / "logs")
    generate(root, seed=seed, scale=1)
    return root


def oracle_file(path: str, *, topic=None, partition=None, **kw):
    """kafkarec.iter_arrow over one whole file: (pyarrow.Table, errors)."""
    import kafkarec
    import pyarrow as pa
    with open(path, "rb") as fh:
        data = fh.read()
    sink: list = []
    batches = list(kafkarec.iter_arrow(data, topic=topic, partition=partition, errors="skip",
                                       error_sink=sink, **kw))
    table = pa.Table.from_batches(batches, schema=kafkarec.arrow_schema(
        batch_columns=kw.get("batch_columns", False)))
    return table, sink


def topic_partition(path: str):
    name = os.path.basename(os.path.dirname(path))
    topic, _, part = name.rpartition("-")
    return (topic, int(part)) if part.isdigit() and topic else (None, None)


def oracle_dir(root: str, **kw):
    """The oracle over every segment under ``root``: (Table, {path: errors})."""
    import pyarrow as pa
    tables, errors = [], {}
    for path in sorted(glob.glob(os.path.join(root, "**", "*.log"), recursive=True)):
        topic, partition = topic_partition(path)
        t, errs = oracle_file(path, topic=topic, partition=partition, **kw)
        tables.append(t)
        if errs:
            errors[path] = errs
    return pa.concat_tables(tables), errors


def normalize(table, columns, sort_by=("topic", "partition", "offset")):
    """A table's ``columns`` as comparable Python rows, sorted; timestamps as epoch ms."""
    import pyarrow as pa
    import pyarrow.compute as pc
    cols = {}
    for name in columns:
        col = table.column(name)
        if pa.types.is_timestamp(col.type):
            col = pc.cast(pc.cast(col, pa.timestamp("ms", tz="UTC")), pa.int64())
        if pa.types.is_list(col.type):
            col = [None if v is None else [(h["key"], h["value"]) for h in v] for v in col.to_pylist()]
        else:
            col = col.to_pylist()
        cols[name] = col
    rows = list(zip(*[cols[n] for n in columns]))
    keys = [columns.index(k) for k in sort_by if k in columns]
    rows.sort(key=lambda r: tuple((r[i] is None, r[i] if r[i] is not None else 0) for i in keys))
    return rows


def assert_same_rows(spark_table, oracle_table, columns, sort_by=("topic", "partition", "offset")):
    got = normalize(spark_table, columns, sort_by)
    want = normalize(oracle_table, columns, sort_by)
    assert len(got) == len(want), f"{len(got)} rows from Spark, {len(want)} from kafkarec"
    for i, (g, w) in enumerate(zip(got, want)):
        assert g == w, f"row {i} differs:\n spark   {g}\n kafkarec {w}"


# -- corrupt inputs ---------------------------------------------------------------------

def batch_spans(data: bytes):
    """(position, size) of the whole batches of ``data`` (by length prefix)."""
    import kafkarec
    return [(b.position, b.size_in_bytes) for b in kafkarec.iter_batches(data, verify_crc=False)]


def make_corrupt_dir(sample: str, dest: str) -> dict:
    """A log dir with one problem per partition folder; returns what was done.

    * ``crc-0``       one batch's value byte flipped (CRC mismatch; the batch is skipped)
    * ``truncated-0`` the file ends half way through its last batch
    * ``framing-0``   the 3rd batch's length field is negative: nothing after it can be framed
    * ``ok-0``        an untouched copy
    """
    src = sorted(glob.glob(os.path.join(sample, "orders-0", "*.log")))[0]
    data = open(src, "rb").read()
    spans = batch_spans(data)
    info = {}

    def put(folder, blob):
        os.makedirs(os.path.join(dest, folder), exist_ok=True)
        path = os.path.join(dest, folder, "00000000000000000000.log")
        with open(path, "wb") as fh:
            fh.write(blob)
        return path

    crc = bytearray(data)
    pos, size = spans[4]
    crc[pos + size - 3] ^= 0x55
    info["crc"] = {"path": put("crc-0", bytes(crc)), "position": pos}
    last_pos, last_size = spans[-1]
    info["truncated"] = {"path": put("truncated-0", data[:last_pos + last_size // 2]),
                         "position": last_pos, "trailing": last_size // 2}
    fr = bytearray(data)
    pos, _ = spans[2]
    fr[pos + 8:pos + 12] = (-5).to_bytes(4, "big", signed=True)
    info["framing"] = {"path": put("framing-0", bytes(fr)), "position": pos,
                       "not_decoded": len(data) - pos}
    info["ok"] = {"path": put("ok-0", data)}
    info["batches"] = len(spans)
    return info


# -- the user's environment: wheelhouse, bare Python, a Spark Connect client -------------------

def python_for(version: str) -> str | None:
    """An interpreter for ``version`` ("3.12"): on PATH, else pyenv's."""
    pyenv = sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}.*/bin/python{version}")))
    for candidate in pyenv[::-1] + [shutil.which(f"python{version}")]:
        if candidate and subprocess.run([candidate, "-c", "pass"], capture_output=True).returncode == 0:
            return candidate
    return None


def _cache_tag(python: str) -> str:
    return subprocess.run([python, "-c", "import sys; print(sys.implementation.cache_tag)"],
                          capture_output=True, text=True, check=True).stdout.strip()


def bare_python(python: str, *, lakehouse: bool = False) -> str:
    """A venv of ``python`` with only pyspark, pyarrow and pandas, made once in
    ``.cache/bare-<tag>`` by scripts/bare_python.sh (the main job's too); ``lakehouse``: the
    pyspark the lakehouse runtimes load on (``--lakehouse``), in ``.cache/bare-lakehouse-<tag>``."""
    kind = "bare-lakehouse" if lakehouse else "bare"
    folder = os.path.join(ROOT, ".cache", f"{kind}-{_cache_tag(python)}")
    proc = subprocess.run(["bash", os.path.join(ROOT, "scripts", "bare_python.sh"), folder,
                           "--python", python, *(["--lakehouse"] if lakehouse else [])],
                          capture_output=True, text=True, timeout=1200)
    if proc.returncode != 0:
        pytest.fail(f"bare_python.sh failed:\n{proc.stderr[-4000:]}")
    return proc.stdout.strip().splitlines()[-1]


def wheelhouse(python: str, folder: str | None = None) -> str:
    """kafkarec's wheel for ``python``, with every dependency wheel next to it
    (scripts/wheelhouse.sh; nothing is rebuilt when the sources did not change)."""
    folder = folder or os.path.join(ROOT, ".cache", f"wheelhouse-{_cache_tag(python)}")
    proc = subprocess.run(["bash", os.path.join(ROOT, "scripts", "wheelhouse.sh"), folder,
                           "--python", python], capture_output=True, text=True, timeout=1200)
    if proc.returncode != 0:
        pytest.fail(f"wheelhouse.sh failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    return proc.stdout.strip().splitlines()[-1]


def bare_env(python: str, extra=None) -> dict:
    """The environment of a user's shell: no PYTHONPATH, no project venv; Spark's
    driver and workers on ``python``."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON",
                        "SPARK_HOME")}
    env["PATH"] = os.path.dirname(python) + os.pathsep + env.get("PATH", "")
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    env["SPARK_CONF_DIR"] = spark_conf_dir()
    env["PYSPARK_PYTHON"] = python
    env["PYSPARK_DRIVER_PYTHON"] = python
    env["PYTHONWARNINGS"] = "ignore:PySpark does not yet fully support pandas:FutureWarning"
    env.update(extra or {})
    return env


def kafka_source_jars(bare: str) -> list:
    """The jars (jvm/spark) that put Spark's Kafka source and spark-avro on the class path of
    an application submitted from ``bare``'s pyspark (``--jars``)."""
    from support import jvm
    jars_dir = subprocess.run([bare, "-c", "import os, pyspark; print(os.path.join(os.path.dirname("
                               "pyspark.__file__), 'jars'))"], capture_output=True, text=True,
                              check=True).stdout.strip()
    return jvm.spark_jars(jars_dir)


def connect_client(python: str, wheel: str, *, lakehouse: bool = False, extras: str = "") -> str:
    """A Spark Connect client's Python, as a user makes one: a venv of ``python`` with
    ``pyspark[connect]`` at the pinned version (pandas<3) from the package index, and kafkarec installed
    from the wheelhouse of ``wheel`` (``pip install --no-index --find-links``), never the
    checkout's editable install.  The venv is made once in ``.cache/connect-client-<tag>``;
    kafkarec is installed again whenever the wheel changed.  ``lakehouse``: at the lakehouse
    runtimes' pyspark, in ``.cache/connect-client-lakehouse-<tag>``.  ``extras``: kafkarec's extras
    installed with it (``"restore"``), from the same wheelhouse."""
    import fcntl
    import hashlib
    from support.versions import LAKEHOUSE_PYSPARK, PYSPARK
    kind = "connect-client-lakehouse" if lakehouse else "connect-client"
    folder = os.path.join(ROOT, ".cache", f"{kind}-{_cache_tag(python)}")
    py = os.path.join(folder, "bin", "python")
    reqs = [f"pyspark[connect]=={LAKEHOUSE_PYSPARK if lakehouse else PYSPARK}", "pandas<3"]
    base_stamp = f"{subprocess.run([python, '-c', 'import sys; print(sys.version)'], capture_output=True, text=True).stdout.strip()} | {' '.join(reqs)}"
    with open(wheel, "rb") as fh:
        wheel_stamp = f"{os.path.basename(wheel)} {hashlib.sha256(fh.read()).hexdigest()} [{extras}]"
    os.makedirs(os.path.dirname(folder), exist_ok=True)

    def stamp(name):
        try:
            with open(os.path.join(folder, name)) as fh:
                return fh.read()
        except OSError:
            return None

    def run(cmd):
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
        if proc.returncode != 0:
            pytest.fail(f"{' '.join(cmd)} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")

    with open(folder + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        made = not (os.path.exists(py) and stamp(".base-stamp") == base_stamp)
        if made:
            shutil.rmtree(folder, ignore_errors=True)
            # nothing byte-compiled (scripts/make_venv.sh): all of pyspark costs CPU-seconds the
            # suite shares; the client compiles the modules it imports when it imports them
            run(["bash", os.path.join(ROOT, "scripts", "make_venv.sh"), python, folder] + reqs)
            with open(os.path.join(folder, ".base-stamp"), "w") as fh:
                fh.write(base_stamp)
        if stamp(".kafkarec-stamp") != wheel_stamp:
            wh = os.path.dirname(os.path.abspath(wheel))
            if not made:
                # a wheel installed before (of the same version, maybe): replaced, as pip keeps an
                # installed version it finds satisfied; a venv made just now has none to replace
                run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-index",
                     "--find-links", wh, "--force-reinstall", "--no-deps", wheel])
            run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-index",
                 "--find-links", wh, wheel + (f"[{extras}]" if extras else "")])
            with open(os.path.join(folder, ".kafkarec-stamp"), "w") as fh:
                fh.write(wheel_stamp)
    return py


def load_job(path: str):
    """The job script at ``path`` (a spark-submit or Connect client script, tests/*/jobs/) as a module
    of this process, for a test that runs its functions on the session's own SparkSession: loaded from
    its file, as the one user-way application loads its jobs, with no folder put on the import path."""
    import importlib.util
    name = "job_" + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def plain(value):
    """``value`` (a row's value, from Spark or from kafkarec) as the suite's jobs write Spark's rows,
    ``json.dump(default=str)``, read back: timestamps naive UTC (Spark collects them in the session's
    time zone, UTC here), decimals and anything else JSON has no type for as text."""
    import datetime
    import json

    def naive(x):
        if isinstance(x, datetime.datetime) and x.tzinfo is not None:
            return x.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        if isinstance(x, dict):
            return {k: naive(y) for k, y in x.items()}
        if isinstance(x, list):
            return [naive(y) for y in x]
        return x
    return json.loads(json.dumps(naive(value), default=str))
