"""kafkarec on Spark Connect sessions (``pyspark.sql.connect.session.SparkSession``).

A Connect client has no ``SparkContext``: ``spark.sparkContext``, ``_jvm`` and ``_jsc``
raise there, ``addPyFile``/``addFile`` do not exist, and the driver's SparkFiles folder is
on the server.  What a Connect session offers instead is session-scoped:
``spark.addArtifacts(path, pyfile=True)`` puts a ``.zip`` on the ``sys.path`` of every
Python process the server starts for this session (executors' workers, the Data Source
planner, the streaming source runner).  So :func:`ship` sends:

* kafkarec's wheel (the one given, else the wheel in the wheelhouse that holds exactly the
  client's build, else a zip of the installed kafkarec and spark_udfs) as
  ``<name>.whl.zip``;
* every wheel of kafkarec's run-time dependencies and of the Protobuf schema compiler
  found next to it or in ``wheelhouse``, as files (``addArtifacts(path, file=True)``):
  they land in the same session folder as kafkarec's archive, where
  :mod:`spark_udfs._wheels` looks for them (next to the archive), and kafkarec's loader
  unpacks the ones that fit the worker's Python into its cache, as on a classic session
  (compiled modules cannot load from a zip).  Not as py-files: Spark puts a session's
  py-files on a reused worker's ``sys.path`` again before every task, ahead of the
  unpacked folders, and a dependency not imported yet would then be imported out of its
  zip (``No module named 'cramjam.cramjam'``).

:func:`verify_executors` is one DataFrame job (``mapInArrow`` over ``spark.range``, no
RDD) whose tasks run the same check as on classic sessions; its task count is the
session's default parallelism, which the data source uses as its default
``minPartitions``.  Nothing here reads ``sparkContext``, ``_jvm`` or ``_jsc``.
"""
from __future__ import annotations

import glob
import os
from typing import Optional

from spark_udfs import _runtime, _shipping
from spark_udfs._runtime import KafkarecMismatchError, ShippingError
from spark_udfs._shipping import Shipped, Shipping

__all__ = ["is_connect", "ship", "verify_executors", "default_parallelism"]

# session id -> names of the py-files already added to that session
_shipped_by_session: dict = {}

_PROBE_SCHEMA = "task int, host string, interpreter string, kafkarec string, problems array<string>"


def is_connect(spark) -> bool:
    """Is ``spark`` a Spark Connect session?  (Judged from its class, never by touching
    ``sparkContext``.)"""
    return any(cls.__module__.startswith("pyspark.sql.connect") for cls in type(spark).__mro__)


def _session_key(spark) -> str:
    return str(getattr(spark, "session_id", None) or id(spark))


def _add(spark, path: str, *, python: bool = True) -> bool:
    done = _shipped_by_session.setdefault(_session_key(spark), set())
    name = os.path.basename(path)
    if name in done:
        return False
    if python:
        spark.addArtifacts(path, pyfile=True)
    else:
        spark.addArtifacts(path, file=True)
    done.add(name)
    return True


def _wheelhouse_wheels(folder: Optional[str]) -> list:
    return sorted(glob.glob(os.path.join(folder, "kafkarec-*.whl"))) if folder else []


def _kafkarec_archive(wheels, wheelhouse):
    """(kafkarec's archive, the other wheels given)."""
    given = [_shipping._local_path(w) for w in (wheels or [])]
    archive, others = None, []
    for path in dict.fromkeys(given):
        if not os.path.isfile(path):
            raise FileNotFoundError(f"wheel to ship not found: {path}")
        if archive is None and _shipping.archive_fingerprint(path) is not None:
            archive = path
        else:
            others.append(path)
    if archive is None:
        archive = _runtime.shipped_kafkarec_archive()
    if archive is None:
        # kafkarec installed in the client's Python: its wheel from the wheelhouse, else a zip
        kafkarec = _runtime.import_kafkarec()
        fp = _shipping.expected_fingerprint()
        for wheel in _wheelhouse_wheels(wheelhouse) + _shipping.find_wheels(kafkarec):
            if _shipping.archive_fingerprint(wheel) == fp:
                archive = wheel
                break
        else:
            archive = _shipping.build_pyfiles_zip(kafkarec)
    return archive, others


def ship(spark, wheels=None, *, wheelhouse: Optional[str] = None) -> Shipping:
    """Add kafkarec's archive (``addArtifacts(..., pyfile=True)``, as ``.whl.zip``) and its
    dependency wheels (``file=True``, next to it) to the Connect session's artifacts."""
    loader = _runtime.loader_module()
    wheelhouse = wheelhouse or os.environ.get("KAFKAREC_WHEELHOUSE") or None
    archive, others = _kafkarec_archive(wheels, wheelhouse)
    fp = _shipping.archive_fingerprint(archive)
    driver_fp = _shipping.expected_fingerprint()
    if fp != driver_fp:
        raise KafkarecMismatchError(
            f"the kafkarec wheel {archive} holds build {fp}, but this client imported kafkarec "
            f"{_runtime.describe()}; the server would run a different build. Install kafkarec "
            f"from that wheel in the client (or give the wheel of the client's build).")
    shipped = _shipping._as_zip(archive) if archive.endswith(".whl") else archive
    _add(spark, shipped)
    main = Shipped(archive, shipped, fp)
    folder = wheelhouse or os.path.dirname(os.path.abspath(archive))
    if archive.endswith(".pyfiles.zip") and not wheelhouse:
        folder = None     # built from the installed package: no wheelhouse next to it
    candidates = [w for w in loader.wheel_candidates(next_to=None if folder is None else archive,
                                                     folders=[folder] if folder else [])
                  if w.project != "kafkarec"]
    candidates += [loader.parse_wheel_name(p) for p in others if loader.parse_wheel_name(p)]
    meta = loader._archive_metadata(archive, "kafkarec")
    interp = loader.interpreter()
    needed = set(loader.resolve(meta, candidates, interp).projects) if meta else set()
    needed |= set(loader.resolve(loader.requires_dist(loader.PROTOBUF_COMPILER), candidates,
                                 interp, root="the Protobuf schema compiler").projects)
    deps = []
    for w in candidates:
        # every wheel of a needed project goes: the server's workers pick the one that fits
        if w.project in needed and w.path.endswith(".whl"):
            if _add(spark, w.path, python=False):
                deps.append(Shipped(w.path, w.path, None))
    for path in others:
        w = loader.parse_wheel_name(path)
        if w is None or w.project not in needed:
            zipped = _shipping._as_zip(path) if path.endswith(".whl") else path
            if _add(spark, zipped):
                deps.append(Shipped(path, zipped, None))
    return Shipping(main, deps, folder, [], loader.describe_interpreter(interp))


def _probe_task(expected, must_ship):
    """mapInArrow function: one row per task, what :func:`spark_udfs._shipping._probe` saw."""
    def probe(batches):
        import pyarrow as pa
        from pyspark import TaskContext
        for _ in batches:
            pass
        ctx = TaskContext.get()
        r = _shipping._probe(expected, must_ship)[0]
        yield pa.RecordBatch.from_pylist(
            [{"task": ctx.partitionId() if ctx else 0, "host": r["host"],
              "interpreter": r["interpreter"], "kafkarec": r["kafkarec"],
              "problems": list(r["problems"])}],
            schema=pa.schema([("task", pa.int32()), ("host", pa.string()),
                              ("interpreter", pa.string()), ("kafkarec", pa.string()),
                              ("problems", pa.list_(pa.string()))]))
    return probe


# rows of spark.range: enough that every default partition holds some
_RANGE = 1 << 16


def default_parallelism(spark) -> int:
    """``spark.default.parallelism`` when the session's conf has it, else the number of
    partitions of ``spark.range`` (which Spark sizes by the default parallelism), from a
    small job that never starts Python."""
    value = spark.conf.get("spark.default.parallelism", None)
    if value not in (None, ""):
        try:
            return max(1, int(value))
        except ValueError:
            pass
    from pyspark.sql import functions as F
    row = (spark.range(0, _RANGE).select(F.spark_partition_id().alias("p"))
           .agg(F.max("p").alias("p")).first())
    return max(1, int(row["p"]) + 1)


def verify_executors(spark, expected=None, *, shipping: Shipping | None = None,
                     tasks: Optional[int] = None):
    """One DataFrame job whose tasks (one per default partition of ``spark.range``, or
    ``tasks``) check what was shipped, import kafkarec and compare its build with the
    client's.  Returns (descriptions of the executors, the number of tasks)."""
    if expected is None:
        expected = _shipping.expected_fingerprint()
    must_ship = bool(shipping and shipping.kafkarec and shipping.kafkarec.shipped_as)
    df = spark.range(0, _RANGE) if tasks is None else spark.range(0, _RANGE, 1, tasks)
    try:
        rows = df.mapInArrow(_probe_task(expected, must_ship), _PROBE_SCHEMA).collect()
    except Exception as exc:  # noqa: BLE001 - the worker could not even unpickle the probe
        raise ShippingError(
            f"kafkarec cannot run on this Spark Connect session: the check job failed "
            f"({type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''})."
            f"\nFix: {_shipping._fix(shipping.folder if shipping else None)}; then call "
            f"spark_udfs.register(spark, wheelhouse=DIR), or install kafkarec in the server's "
            f"Python.") from exc
    where: dict = {}
    for r in rows:
        for p in r["problems"] or []:
            where.setdefault(p, set()).add(f"{r['host']}: {r['interpreter']}")
    if where:
        problems = [f"{p}  [executor {', '.join(sorted(h))}]" for p, h in where.items()]
        cls = KafkarecMismatchError if all("not the driver's build" in p for p in where) \
            else ShippingError
        raise cls(
            f"kafkarec cannot run on this Spark Connect session ({len(problems)} problem"
            f"{'s' if len(problems) > 1 else ''}):\n  - " + "\n  - ".join(problems)
            + f"\nFix: {_shipping._fix(shipping.folder if shipping else None)}; then call "
              f"spark_udfs.register(spark, wheelhouse=DIR) (the folder holding kafkarec's "
              f"wheel and its dependency wheels), or install kafkarec in the server's Python.")
    return sorted({f"{r['host']}: {r['kafkarec']}" for r in rows}), len(rows)


def data_source_class(expected: str, parallelism: int, shipped: list):
    """The class ``register`` gives ``spark.dataSource.register`` on a Connect session.

    Spark's streaming source runner (``python_streaming_source_runner``) unpickles the
    registered class in a Python process whose ``sys.path`` does not hold the session's
    artifacts: it is given ``<SparkFiles root>/streaming_job/<name>`` for each py-file,
    while a Connect session's files are in ``<SparkFiles root>/<session folder>/``.  (On a
    classic session :func:`spark_udfs._shipping.link_streaming_runner_files` links the
    folder on the driver; a Connect client cannot reach the server's disk.)  So this class
    is pickled by value and refers to nothing of spark_udfs: where ``spark_udfs`` is not
    importable, it first looks for the shipped files (``shipped``: (name, sha256) pairs,
    kafkarec's archive first) in the folders next to its SparkFiles root, takes the folder
    whose kafkarec archive has the shipped digest, and puts those files first on
    ``sys.path``.  Every call then goes to the registered
    :class:`spark_udfs._datasource.KafkaRecDataSource` subclass."""
    from pyspark.sql.datasource import DataSource
    names = [n for n, _ in shipped]
    main_digest = shipped[0][1] if shipped else None

    def find_shipped():
        import glob
        import hashlib
        import os
        import sys
        try:
            import spark_udfs  # noqa: F401
            return
        except ImportError:
            pass
        if not names:
            return
        from pyspark import SparkFiles
        root = SparkFiles.getRootDirectory()
        folders = [root] + sorted(glob.glob(os.path.join(root, "*"))) + sorted(
            glob.glob(os.path.join(os.path.dirname(root), "*")))
        for folder in folders:
            main = os.path.join(folder, names[0])
            if not os.path.isfile(main):
                continue
            if main_digest is not None:
                h = hashlib.sha256()
                with open(main, "rb") as fh:
                    for chunk in iter(lambda: fh.read(1 << 20), b""):
                        h.update(chunk)
                if h.hexdigest() != main_digest:
                    continue
            found = [os.path.join(folder, n) for n in names
                     if n.endswith(".zip") and os.path.isfile(os.path.join(folder, n))]
            sys.path[:0] = [p for p in found if p not in sys.path]
            return

    def registered():
        find_shipped()
        from spark_udfs import _datasource
        return type("RegisteredKafkaRecDataSource", (_datasource.KafkaRecDataSource,), {
            "__module__": _datasource.__name__,
            "__qualname__": "RegisteredKafkaRecDataSource",
            "expected_fingerprint": expected,
            "default_min_partitions": parallelism,
        })

    class KafkaRecConnectDataSource(DataSource):
        expected_fingerprint = expected
        default_min_partitions = parallelism

        @classmethod
        def name(cls) -> str:
            return "kafkarec"

        def _source(self):
            src = self.__dict__.get("_kafkarec_source")
            if src is None:
                src = self.__dict__["_kafkarec_source"] = registered()(self.options)
            return src

        def __getstate__(self):
            # Spark pickles the instance made for schema() into the streaming source
            # runner: never the delegate (a spark_udfs class, by reference)
            state = dict(self.__dict__)
            state.pop("_kafkarec_source", None)
            return state

        def schema(self):
            return self._source().schema()

        def reader(self, schema):
            return self._source().reader(schema)

        def streamReader(self, schema):
            return ConnectStreamReader(self._source().streamReader(schema))

    try:
        from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow
    except ImportError:   # pragma: no cover - older PySpark
        SupportsTriggerAvailableNow = object
    from pyspark.sql.datasource import DataSourceStreamReader

    class ConnectStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
        """The stream reader, pickled to executors by value: their Python workers do not get
        a Connect session's artifacts for a stream's tasks either, so unpickling looks for
        the shipped files first and only then loads the reader itself (kept as bytes)."""

        def __init__(self, reader):
            self._reader = reader

        def __getstate__(self):
            from pyspark import cloudpickle
            return {"blob": cloudpickle.dumps(self._reader)}

        def __setstate__(self, state):
            import pickle
            find_shipped()
            self._reader = pickle.loads(state["blob"])

        def initialOffset(self):
            return self._reader.initialOffset()

        def latestOffset(self, start=None, limit=None):
            return self._reader.latestOffset(start, limit)

        def getDefaultReadLimit(self):
            return self._reader.getDefaultReadLimit()

        def reportLatestOffset(self):
            return self._reader.reportLatestOffset()

        def prepareForTriggerAvailableNow(self):
            return self._reader.prepareForTriggerAvailableNow()

        def partitions(self, start, end):
            return self._reader.partitions(start, end)

        def read(self, partition):
            return self._reader.read(partition)

        def commit(self, end):
            return self._reader.commit(end)

        def stop(self):
            return self._reader.stop()

    return KafkaRecConnectDataSource


def shipped_digests(shipping) -> list:
    """(file name, sha256) of every file shipped, kafkarec's archive first."""
    out = []
    for s in shipping or []:
        if s.shipped_as:
            out.append((os.path.basename(s.shipped_as), _shipping._file_digest(s.shipped_as)))
    return out
