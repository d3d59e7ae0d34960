"""The data source class ``spark_udfs.register`` gives a Spark Connect session
(:func:`data_source_class`): pickled by value, so that Spark's streaming source runner, which
does not get the session's artifacts, can find the shipped files itself.  How files travel to a
Connect session and how its check job runs are :mod:`spark_udfs.ship.shipping`'s
(``ConnectTransport``).
"""
from __future__ import annotations

__all__ = ["data_source_class"]


def data_source_class(expected: str, parallelism: int, shipped: list, wheelhouse: str | None = None):
    """The class ``register`` gives ``spark.dataSource.register`` on a Connect session.

    Spark's streaming source runner (``python_streaming_source_runner``) unpickles the
    registered class in a Python process whose ``sys.path`` does not hold the session's
    artifacts: it is given ``<SparkFiles root>/streaming_job/<name>`` for each py-file,
    while a Connect session's files are in ``<SparkFiles root>/<session folder>/``.  (On a
    classic session :func:`spark_udfs.ship.shipping.link_streaming_runner_files` links the
    folder on the driver; a Connect client cannot reach the server's disk.)  So this class
    is pickled by value and refers to nothing of spark_udfs: where ``spark_udfs`` is not
    importable, it first looks for the shipped files (``shipped``: (name, sha256) pairs,
    kafkarec's archive first) in the folders next to its SparkFiles root, takes the folder
    whose kafkarec archive has the shipped digest, and puts those files first on
    ``sys.path``.  Every call then goes to the registered
    :class:`spark_udfs.read.datasource.KafkaRecDataSource` subclass."""
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
                # kafkarec._boot.files.file_sha256's reading, written out here: this function is
                # pickled by value and runs before anything of kafkarec can be imported
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
        from spark_udfs.read import datasource as _datasource
        return type("RegisteredKafkaRecDataSource", (_datasource.KafkaRecDataSource,), {
            "__module__": _datasource.__name__,
            "__qualname__": "RegisteredKafkaRecDataSource",
            "expected_fingerprint": expected,
            "default_min_partitions": parallelism,
            "wheelhouse": wheelhouse,
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
