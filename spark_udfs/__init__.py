"""Spark functions over Kafka record batches, built on kafkarec.

pyspark is imported only when a function here is called.

    import spark_udfs
    spark_udfs.register(spark)          # ship kafkarec to executors, register everything

    spark.read.format("kafkarec").load("/var/lib/kafka/data")      # log dirs / segments
    spark.sql("SELECT inline(kafkarec_decode(value).records) FROM t")
    spark.sql("SELECT t.id, r.* FROM t, LATERAL kafkarec_explode(t.value) r")
    spark_udfs.explode_records(df, "value", keep=["topic", "partition"])
    df.select(spark_udfs.decode_records("value").alias("d"))
    spark_udfs.backfill_iceberg(spark, "/var/lib/kafka/data", "lake.db.orders",
                                layout="iceberg-kafka-connect", topics=["orders"])
    spark_udfs.census(spark, "s3://bucket/kafka-backup")      # kafkarec.census over executors
    spark_udfs.restore(spark, "s3://bucket/kafka-backup", "target:9092")   # kafkarec.restore, a task a partition

``register(spark)`` makes ``spark-submit --py-files kafkarec-*.whl`` work on
a driver and executors that have only pyspark, pyarrow and pandas: Spark does
not put ``.whl`` py-files on executors' paths, so it re-ships the wheel as a
``.zip`` and ships the dependency wheels found next to it (``wheelhouse=``), or
made from the driver's installed distributions when there is no wheelhouse;
kafkarec's loader unpacks each once per machine into its cache.  Then one job
checks that every executor can load them and runs the driver's kafkarec
build; every problem is one :class:`ShippingError`.

Spark settings that matter (see :data:`RECOMMENDED_CONF`): ``SPARK_LOCAL_IP``
for loopback-only machines, ``spark.driver.memory`` of 4g or more in local
mode, ``PYSPARK_PYTHON`` / ``spark.pyspark.python`` pointing at an interpreter
with pyarrow.
"""
from __future__ import annotations

import sys as _sys
from types import ModuleType as _ModuleType
from typing import NamedTuple

__all__ = [
    "register", "ship", "verify_executors", "Registration",
    "decode_records", "explode_records", "explode_udtf", "make_decode_udf",
    "KafkaRecDataSource", "kafka_schema", "record_struct", "decode_result_type",
    "MalformedBatchError", "KafkarecMismatchError", "ShippingError", "RECOMMENDED_CONF",
    "session_builder", "from_registry", "offsets_behind_latest",
    "backfill_frame", "backfill_iceberg", "backfill_spec", "BackfillSpec", "census", "restore", "SparkRestore",
]

# Settings the project uses for local runs (tests, the job, benchmarks).
RECOMMENDED_CONF = {
    "spark.driver.memory": "4g",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "8",
    # Blob columns of whole record batches: keep Arrow batches to Python small.
    "spark.sql.execution.arrow.maxRecordsPerBatch": "1000",
    # PySpark warns on every Arrow/UDF path under pandas >= 3.
    "spark.executorEnv.PYTHONWARNINGS": "ignore:PySpark does not yet fully support pandas:FutureWarning",
}

_LAZY = {
    "ship": ("spark_udfs.ship.shipping", "ship"),
    "verify_executors": ("spark_udfs.ship.shipping", "verify_executors"),
    "decode_records": ("spark_udfs.functions", "decode_records"),
    "explode_records": ("spark_udfs.functions", "explode_records"),
    "explode_udtf": ("spark_udfs.functions", "explode_udtf"),
    "make_decode_udf": ("spark_udfs.functions", "make_decode_udf"),
    "decode_result_type": ("spark_udfs.functions", "decode_result_type"),
    "from_registry": ("spark_udfs.read.typed", "from_registry"),
    "offsets_behind_latest": ("spark_udfs.read.progress", "offsets_behind_latest"),
    "KafkaRecDataSource": ("spark_udfs.read.datasource", "KafkaRecDataSource"),
    "kafka_schema": ("spark_udfs.read.schema", "kafka_schema"),
    "record_struct": ("spark_udfs.read.schema", "record_struct"),
    "MalformedBatchError": ("kafkarec.errors", "MalformedBatchError"),
    "KafkarecMismatchError": ("spark_udfs.ship.runtime", "KafkarecMismatchError"),
    "ShippingError": ("spark_udfs.ship.runtime", "ShippingError"),
    "backfill_frame": ("spark_udfs.lakehouse", "backfill_frame"),
    "backfill_iceberg": ("spark_udfs.lakehouse", "backfill_iceberg"),
    "backfill_spec": ("spark_udfs.lakehouse", "backfill_spec"),
    "BackfillSpec": ("spark_udfs.lakehouse", "BackfillSpec"),
    "census": ("spark_udfs._census", "census"),
    "restore": ("spark_udfs._restore", "restore"),
    "SparkRestore": ("spark_udfs._restore", "SparkRestore"),
}


def __getattr__(name):
    if name in _LAZY:
        import importlib
        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(module), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'spark_udfs' has no attribute {name!r}")


class _Package(_ModuleType):
    """spark_udfs' module object.  The import system binds a subpackage onto its package on the
    subpackage's first import: the room ``spark_udfs.ship`` (``import spark_udfs.ship.connect``)
    would replace the public function ``spark_udfs.ship``, so a room named as a public name is
    bound as that name's value instead (the room's own attribute of that name), whichever comes
    first.  (Attribute chains through the room, ``spark_udfs.ship.connect``, therefore reach the
    function: import the room's modules by name, ``from spark_udfs.ship import connect``.)"""

    def __setattr__(self, name: str, value) -> None:
        if name in _LAZY and isinstance(value, _ModuleType):
            value = getattr(value, name)
        super().__setattr__(name, value)


# The module's class, as the language reference's "Customizing module attribute access" sets it.
_sys.modules[__name__].__class__ = _Package


class Registration(NamedTuple):
    fingerprint: str          # the driver's kafkarec build: "<version>+<core sha256[:16]>"
    shipped: list             # spark_udfs.ship.shipping.Shipped entries: kafkarec's archive first
    executors: list           # what verify_executors saw (empty when not verified)
    data_source: type | None  # the registered DataSource class


def register(spark, *, wheels=None, wheelhouse: str | None = None, ship: bool = True,
             verify: bool = True, functions: bool = True, data_source: bool = True,
             extras=()) -> Registration:
    """Ship kafkarec and its dependencies to executors, check them, and register
    ``kafkarec_decode`` / ``kafkarec_explode`` (SQL) and ``format("kafkarec")``.

    kafkarec's wheel is the one in ``wheels`` or ``spark.submit.pyFiles``
    (``--py-files``), else the one the driver imported; its dependency wheels
    are taken from the same folder, or ``wheelhouse``, or (kafkarec installed on
    the driver, no wheelhouse) made from the driver's installed distributions,
    which serve executors of the driver's Python and platform.  Classic and
    Spark Connect sessions get the same files (``spark_udfs.ship.shipping``).  Only kafkarec's
    runtime dependencies go, and the wheels of the ``extras`` named: ``"tiered"`` (cryptography,
    for encrypted tiered objects), ``"registry"`` (the Protobuf schema compiler, for a Connect
    server that cannot see the driver's wheelhouse), ``"restore"`` (confluent-kafka); a read
    that needs one the session did not ship fails where it is planned, naming it, and calling
    ``register`` again with it ships only what is new.  ``ship=False`` skips
    shipping (kafkarec installed in every executor's Python), as a Connect server that takes no
    artifacts (Sail) makes it, with a one-line warning; ``verify=False``
    skips the check job (each task still checks the build before decoding).
    Anything missing or built for another Python or machine, on the driver or
    an executor, raises one :class:`ShippingError` listing all of it.
    """
    from spark_udfs import functions as _functions
    from spark_udfs.ship import shipping as _shipping
    from spark_udfs.ship.runtime import ShippingError
    transport = _shipping.transport(spark)
    try:
        shipping = _shipping.ship(spark, wheels, wheelhouse=wheelhouse, extras=extras) if ship else None
    except _shipping.ArtifactsUnsupported as exc:
        # a Connect server without AddArtifacts (Sail): its own Python must have kafkarec; the
        # check job below says so where it has not (verify=False: the first task does)
        import logging
        logging.getLogger("spark_udfs").warning(
            "spark_udfs.register: the Connect server does not take artifacts (%s); registering with "
            "the kafkarec its Python has (ship=False)", exc)
        shipping, ship = None, False
    if ship:
        transport.after_ship()
    if shipping is not None and shipping.problems and not verify:
        raise ShippingError(f"kafkarec cannot run on the driver ({shipping.driver}):\n  - "
                            + "\n  - ".join(shipping.problems))
    parallelism = transport.parallelism()
    executors = []
    if verify:
        executors = _shipping.verify_executors(
            spark, None if shipping and shipping.problems else _shipping.expected_fingerprint(),
            shipping=shipping, tasks=parallelism)
    fp = _shipping.expected_fingerprint()
    ds_cls = None
    if functions:
        spark.udf.register("kafkarec_decode", _functions.make_decode_udf(expected=fp))
        spark.udtf.register("kafkarec_explode", _functions.explode_udtf(expected=fp))
    if data_source:
        ds_cls = transport.data_source_class(fp, parallelism, shipping)
        spark.dataSource.register(ds_cls)
    return Registration(fp, list(shipping or []), executors, ds_cls)


def session_builder(app_name: str = "kafkarec", master: str | None = "local[2]", conf=None):
    """A SparkSession builder with :data:`RECOMMENDED_CONF` (and ``conf``) applied,
    and ``PYSPARK_PYTHON`` defaulting to this interpreter."""
    import os
    import sys
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    for k, v in {**RECOMMENDED_CONF, **(conf or {})}.items():
        builder = builder.config(k, v)
    return builder
