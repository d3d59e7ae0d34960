"""What the data source's readers take of a :class:`spark_udfs.read.spec.ReadSpec` (no pyspark
here); decoding with the parse modes is the reader's (:mod:`kafkarec.scan._decode`)."""
from __future__ import annotations

__all__ = ["ReadSettings", "ReadConfig", "DEFAULT_MAX_RECORDS_PER_BATCH"]

# Rows per Arrow batch handed to Spark (option maxRecordsPerBatch).  Above Spark's 10,000
# for Arrow: the Python worker's per-batch costs (conforming, the IPC write, the hand-over
# to the JVM) fall with fewer batches.  On bench_spark's 1M rows the workers' CPU went from
# 0.50 to 0.43 s with 32,768 rows (two runs); 16,384 keeps an executor's peak RSS where
# 10,000 had it (tests/spark/test_planning.py's 256 MiB segment: +138 MiB; +160 at 32,768).
# The 64 MiB cap on a batch's key+value+header bytes holds either way.
DEFAULT_MAX_RECORDS_PER_BATCH = 16384


class ReadSettings:
    """How bytes are read (``verifyCrc``, ``strict``, ``maxDecompressedBytes`` of a
    :class:`spark_udfs.read.spec.ReadSpec`) as the fields of :class:`kafkarec.ReadOptions`, under
    the core's names and meanings.  Plain values, because the planner pickles them to executors
    before kafkarec is loaded there; :meth:`options` makes the core's object where decoding
    happens."""

    __slots__ = ("fields", "_options")

    def __init__(self, spec):
        self.fields = {"verify_crc": spec.verify_crc, "strict": spec.strict}
        if spec.limits.max_decompressed_bytes is not None:
            self.fields["max_decompressed_bytes"] = spec.limits.max_decompressed_bytes
        self._options = None

    def __getstate__(self):
        return self.fields

    def __setstate__(self, fields):
        self.fields, self._options = fields, None

    @property
    def verify_crc(self) -> bool:
        return self.fields["verify_crc"]

    @property
    def strict(self) -> bool:
        return self.fields["strict"]

    def options(self, kafkarec):
        """The :class:`kafkarec.ReadOptions` (``kafkarec``: the module, loaded by ``ensure``)."""
        if self._options is None:
            self._options = kafkarec.ReadOptions(**self.fields)
        return self._options


class ReadConfig:
    """What every reader's tasks need of a :class:`spark_udfs.read.spec.ReadSpec` (pickled to
    executors; the local, listed and stream readers add their own)."""

    def __init__(self, spec):
        self.paths = list(spec.paths)
        self.mode = spec.errors.mode
        self.corrupt_column = spec.errors.corrupt_column
        # badRecordsPath: batches that cannot be decoded are copied there whole (kafkarec.log.quarantine)
        self.bad_records_path = spec.errors.bad_records_path
        self.include_control = spec.columns.include_control
        self.batch_columns = spec.columns.batch_columns
        # read_committed: aborted transactions and everything from the LSO on are left out
        self.read_committed = spec.read_committed
        self.read = ReadSettings(spec)
        self.max_rows = spec.limits.max_rows
        self.max_partition_bytes = spec.limits.max_partition_bytes
        self.open_cost = spec.limits.open_cost_bytes
        self.min_partitions = spec.limits.min_partitions
        self.storage_options = spec.storage.options
        self.fail_on_data_loss = spec.storage.fail_on_data_loss
        self.selection = spec.parsed_selection     # kafkarec.log.selection.Selection
        self.cdc = spec.cdc                         # debezium: change-event columns
