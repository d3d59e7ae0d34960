"""A read's one immutable configuration: :class:`ScanConfig`, what :class:`kafkarec.scan.LogScan`
takes and what every surface (the engines, the Spark data source and stream, the backfill, the
audit, ``view=latest``, the CLI's ranges) makes once, at its boundary.

As DataFusion's ``FileScanConfig``: one config every file source takes; narrowing a read
(bounds pushed down, a projection, a limit) makes a new config (``dataclasses.replace``), never
changes one that a plan or a task already holds.  Plain values only: it is pickled to Spark's
executors and Ray's workers before kafkarec's core is loaded there.

Every field is checked once, in ``__post_init__``, however the config is made (field by field,
:meth:`ScanConfig.of`, ``dataclasses.replace``): a value of the wrong type or out of range is a
one-line :class:`kafkarec.errors.UsageError` naming the field and the value, never an
OverflowError or TypeError at read time.  The types and ranges are msgspec's: each class's
checked fields are written once as msgspec types (``Annotated[int, Meta(ge=..., le=...)]``,
``Tuple[str, ...]``, ``bool`` ...) in :class:`_Fields`, and a config's values are converted into
them by one ``msgspec.convert`` (strict: no bool for an int, no float or text for either, no
``inf``).  Why not a ``msgspec.Struct`` for the config itself: it must stay a frozen dataclass
(``dataclasses.replace``, which every pushdown uses, must keep checking, and a Struct's
``structs.replace`` checks nothing), so msgspec checks the fields' values and the dataclass
keeps them.  One convert of all the fields costs about a microsecond; only when it refuses is
each field converted alone, to name the one refused with what it accepts.  Measured with
``timeit`` on ``ScanConfig.of(path, columns=..., topics=..., limit=..., max_rows_per_batch=...,
threads=...)`` and ``dataclasses.replace(config, limit=...)`` (a config is made per Spark task
and per pushdown): see CHANGELOG.md's entry for finding 50.  The few rules that are not one
field's type (the paths, a parse mode in any case, a key bound with key_format) stay written
here, and a whole number in a range given as a value or as option text is
:func:`kafkarec._option_text.whole_number` / ``text_whole``.
"""
from __future__ import annotations

import dataclasses
import operator
import os
from collections.abc import Mapping
from typing import Annotated, Any, Dict, Optional, Sequence, Tuple

import msgspec
from msgspec import Meta

from kafkarec._option_text import INT_MAX, LONG_MAX, shown
from kafkarec.errors import UsageError
from kafkarec.scan.bounds import Bounds

__all__ = ["ScanConfig", "FileFinding", "TypedSettings", "ROWS_PER_BATCH", "LEAN_ROWS_PER_BATCH",
           "LIMITED_ROWS_PER_BATCH", "CORRUPT_COLUMN",
           "ISOLATION_LEVELS", "MODES", "PARTITIONERS", "MAX_DEFAULT_THREADS", "default_threads",
           "normalize_mode"]

#: rows per Arrow batch unless a read says otherwise (Spark's maxRecordsPerBatch has its own).  An
#: engine pays for every batch it takes (below): DuckDB's whole rows over issue 80's one partition took
#: 0.188-0.193 CPU s at 131,072 rows a batch against 0.197-0.204 at 65,536 (Polars the same either
#: way); a bigger batch holds more while it is built only off the pool (on it a window's rows are
#: held whole anyway), and a batch's key, value and header bytes stop it at 64 MiB whatever its rows.
ROWS_PER_BATCH = 131072
#: rows per Arrow batch of a read that builds none of the records' bytes (the meta-only walk's
#: offsets, timestamps, partitions: 8 MiB a batch of offset and timestamp) and has no row limit,
#: unless it says otherwise.  An engine pays for every batch it takes, whatever its rows (Polars'
#: streaming pipeline wakes for each, DuckDB's scan threads pull each through the GIL): at 65,536
#: rows, handing over 3 M offsets and timestamps cost Polars and DuckDB more than taking them in
#: did (docs/performance.md, "Batches of offsets and timestamps").  On the decode pool a window's
#: rows are held whole anyway.
LEAN_ROWS_PER_BATCH = 1 << 19
#: rows per Arrow batch of a read with a row limit, unless it says otherwise: the core builds a
#: whole batch before the limit can stop the read, so a ``LIMIT 10`` (Polars' ``head``) builds no
#: more than this
LIMITED_ROWS_PER_BATCH = 65536
CORRUPT_COLUMN = "_corrupt_record"
ISOLATION_LEVELS = ("read_uncommitted", "read_committed")
#: Spark's parse modes (:mod:`kafkarec.scan.decode` applies them)
MODES = ("PERMISSIVE", "DROPMALFORMED", "FAILFAST")
#: partitioners a keyed read may prune by: Kafka's default, ``murmur2(key) & 0x7fffffff % N``
PARTITIONERS = ("murmur2",)
#: a :class:`ScanConfig`'s ``threads`` is at most this unless given: each thread maps a window
#: (:data:`kafkarec.log.local.READ_WINDOW_BYTES`), so more threads hold more memory
MAX_DEFAULT_THREADS = 4


def usable_cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def default_threads(engine_threads: Optional[int] = None) -> int:
    """The threads a :class:`kafkarec.scan.LogScan` decodes local windows on unless told: the
    CPUs this process may run on, at most :data:`MAX_DEFAULT_THREADS`; for an engine's source,
    ``engine_threads`` (the threads the engine runs its own work on: DuckDB's ``threads``
    setting, Polars' pool) at most the CPUs, so the engine's parallelism is the read's."""
    cap = MAX_DEFAULT_THREADS if engine_threads is None else engine_threads
    return max(1, min(usable_cpus(), cap))


def normalize_mode(mode, *, allowed=MODES) -> str:
    """A parse mode as given (any case; None: PERMISSIVE), checked."""
    from kafkarec._option_text import text_choice
    return text_choice("mode", mode, allowed, default="PERMISSIVE", upper=True)


def _whole(lo: int, hi: int):
    return Annotated[int, Meta(ge=lo, le=hi)]


_PARTITION = _whole(0, INT_MAX)
_LONG = _whole(-LONG_MAX - 1, LONG_MAX)


class _Fields:
    """One class's checked fields: ``{field: (msgspec type, what it accepts)}``, converted by
    one ``msgspec.convert`` into a Struct made of those types (see the module docstring)."""

    def __init__(self, owner: str, rules: dict, texts: Optional[dict] = None):
        self.names = tuple(rules)
        self.accepts = {name: accepts for name, (_, accepts) in rules.items()}
        # every field defaults to None, so a field is converted alone when the whole is refused
        self.struct = msgspec.defstruct(f"_{owner}Fields", [(name, kind, None) for name, (kind, _) in rules.items()])
        self.texts = texts or ()        # fields that may be a path (os.PathLike): held as its text
        self.get = operator.attrgetter(*self.names)     # (one C call for every field: a config is made per task)

    def settle(self, obj) -> None:
        """Convert ``obj``'s checked fields, setting those msgspec gives back changed (a list of
        names as a tuple), or refuse the first that does not convert."""
        given = self.get(obj)
        values = dict(zip(self.names, given))
        for name in self.texts:
            value = values[name]
            if value is not None and type(value) is not str and isinstance(value, os.PathLike):
                values[name] = os.fspath(value)
        try:
            checked = msgspec.convert(values, self.struct)
        except msgspec.ValidationError:
            checked = msgspec.convert(self._indexed(values), self.struct)   # the failure path only
        for name, before, after in zip(self.names, given, self.get(checked)):
            if after is not before:
                object.__setattr__(obj, name, after)

    def _indexed(self, values: dict) -> dict:
        """Each field converted alone, integers as ``__index__`` gives them (NumPy's): the first
        refused is a UsageError naming it; none refused, the values to convert again."""
        out = {}
        for name, value in values.items():
            if not isinstance(value, (int, float, str, bytes)) and hasattr(value, "__index__"):
                value = operator.index(value)
            try:
                msgspec.convert({name: value}, self.struct)
            except msgspec.ValidationError:
                raise UsageError(f"{name} {shown(values[name])}: {self.accepts[name]}") from None
            out[name] = value
        return out


_FILE_FINDING = _Fields("FileFinding", {
    "glob_filter": (str, "a glob of file names, such as *.log"),
    "recursive": (bool, "True or False"),
    "allow_duplicates": (bool, "True or False"),
})

_TYPED_SETTINGS = _Fields("TypedSettings", {
    "value_format": (Optional[str], "a format's name (registry, avro, protobuf, json) or None"),
    "key_format": (Optional[str], "a format's name (registry, avro, protobuf, json) or None"),
    "options": (Dict[str, Any], "a dict of option names to values"),
})


@dataclasses.dataclass(frozen=True)
class FileFinding:
    """How a local read finds segment files (Spark's file-source options ``pathGlobFilter``,
    ``recursiveFileLookup``, ``allowDuplicatePartitions``): the one default of each, which the
    Spark data source's options take too."""
    glob_filter: str = "*.log"
    # Sub-folders walked, as Spark's file sources list a folder's files at every depth: their
    # recursiveFileLookup (false by default) only turns off partition inference from key=value
    # folders, which a Kafka log has none of (a folder's name is its topic-partition), so reading
    # what Spark's reader reads is true here.  A listed read of the same path
    # (kafkarec.log.layout.scan_history) finds segments at any depth too: with or without bounds,
    # a read finds the same files.
    recursive: bool = True
    allow_duplicates: bool = False

    def __post_init__(self):
        _FILE_FINDING.settle(self)


@dataclasses.dataclass(frozen=True)
class TypedSettings:
    """Typed keys and values: the formats, the registry (a :class:`kafkarec.registry.Registry`
    or where to load one from) and :func:`kafkarec.registry.typed.decode_table`'s keywords."""
    value_format: Optional[str] = None
    key_format: Optional[str] = None
    registry: Any = None
    options: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        _TYPED_SETTINGS.settle(self)


@dataclasses.dataclass(frozen=True)
class ScanConfig:
    """One read, settled (see the module docstring).

    ``paths``: the sources (paths or URIs); ``columns``: the columns returned (None: all);
    ``bounds``: what the read is bounded to; ``limit``: at most that many rows;
    ``selection``: a :class:`kafkarec.log.selection.Selection` (the Kafka source's options), None
    when none was given; ``offset_ranges``: ``((topic, partition, start, end), ...)`` read
    exactly (a stream's micro-batch), instead of the selection; ``files``: how local paths are
    found; ``read_committed``: Kafka's ``read_committed`` (judged over each partition's whole
    log); ``mode``: Spark's parse mode; ``every_record``: nothing left out for a partition's log
    start (records ``deleteRecords`` left in the files), as ``kafka-dump-log`` prints a file
    (:meth:`kafkarec.scan.LogScan.framed` gives control batches too); ``verify_crc``, ``strict``,
    ``max_decompressed_bytes``: :class:`kafkarec.ReadOptions`' fields; ``max_rows``: rows per
    Arrow batch (None: :meth:`rows_per_batch` chooses by the read); ``listing``: plan over a
    listing even for local paths (a keyed state needs its partitions whole); ``partitioner``: with
    keys in the bounds, open only the partitions this partitioner (one of :data:`PARTITIONERS`)
    names for them, right only if every producer of the topic used it (``kafkarec census``
    tells); ``num_partitions``: ``{topic: N}``, the N it divides by (default: the highest
    partition number the listing holds, plus one, where it holds every partition below it; else
    no partition is left out); ``threads``: how many windows of local files are decoded at once,
    ahead of the consumer and handed on in log order (None: :func:`default_threads`; 1: one after
    the other, in the consumer's thread; a read with a row limit decodes its first window in the
    consumer's thread, the rest on the pool; ``bad_records_path``'s batches are written by the
    consumer's thread, in log order, whichever thread decoded them); ``value_layout``: ``key`` and
    ``value`` as Arrow ``binary`` with their bytes copied ("copy") or as ``binary_view`` ("view":
    a local window's long keys and values copied into the batch's own bytes, never a view into a
    map; a listed range's viewed where it was read; :func:`kafkarec.iter_arrow`'s
    ``value_layout``; a typed read decodes "copy", :attr:`views`);
    ``map_cache_bytes``: at most this many bytes of local windows' maps kept open from one read of
    the scan made of this config to the next (:class:`kafkarec.log.window_maps.WindowMaps`, which
    that scan holds and its narrowed scans share: a registered DuckDB table's or a Polars
    LazyFrame's queries; 0, the default: each map closed once decoded); ``buffer_cache_bytes``: at most this many bytes of column buffers that the
    engines let go of kept from one read of that scan to the next, for the next chunks' columns
    (:class:`kafkarec._core.SpareBuffers`: memory already faulted in; 0, the default: none kept,
    each buffer back to Arrow's memory pool, which hands it to the kernel after a few ms).  :meth:`__post_init__` checks the fields and settles
    their defaults, however the config is made: :meth:`of` only translates keywords into fields."""
    paths: Tuple[str, ...]
    columns: Optional[Tuple[str, ...]] = None
    bounds: Bounds = Bounds()
    limit: Optional[int] = None
    selection: Any = None
    offset_ranges: Optional[Tuple[Tuple[Optional[str], Optional[int], int, Optional[int]], ...]] = None
    files: FileFinding = FileFinding()
    tiered_storage: Optional[str] = None
    storage_options: Optional[Mapping[str, Any]] = None
    fail_on_data_loss: bool = True
    read_committed: bool = False
    mode: str = "FAILFAST"
    corrupt_column: str = CORRUPT_COLUMN
    bad_records_path: Optional[str] = None
    include_control: bool = False
    batch_columns: bool = False
    typed: Optional[TypedSettings] = None
    verify_crc: bool = True
    strict: Optional[bool] = None
    max_decompressed_bytes: Optional[int] = None
    max_rows: Optional[int] = None
    listing: bool = False
    core_errors: bool = False
    every_record: bool = False
    partitioner: Optional[str] = None
    num_partitions: Optional[Mapping[str, int]] = None
    threads: Optional[int] = None
    value_layout: str = "copy"
    map_cache_bytes: int = 0
    buffer_cache_bytes: int = 0

    def __post_init__(self):
        """The one place a config's fields are checked and their defaults settled, however it is
        made (:meth:`of`, field by field, ``dataclasses.replace``): a bad value is a UsageError
        naming the field."""
        def settle(name, value):        # (frozen: set once, here)
            object.__setattr__(self, name, value)
        settle("paths", _paths(self.paths))
        if not self.paths:
            raise UsageError("LogScan: no source given")
        if isinstance(self.columns, str):       # one column's name, as Spark's select("key")
            settle("columns", (self.columns,))
        _SCAN_CONFIG.settle(self)
        for name, kind in (("bounds", Bounds), ("files", FileFinding), ("typed", TypedSettings)):
            value = getattr(self, name)
            if not isinstance(value, kind) and not (value is None and name == "typed"):
                raise UsageError(f"{name} {shown(value)}: a {kind.__name__}" + (" or None" if name == "typed" else ""))
        if self.selection is not None:
            from kafkarec.log.selection import Selection
            if not isinstance(self.selection, Selection):
                raise UsageError(f"selection {shown(self.selection)}: a kafkarec.log.selection.Selection "
                                 "(ScanConfig.of parses the Kafka source's options into one)")
        settle("mode", normalize_mode(self.mode))
        if self.value_layout not in VALUE_LAYOUTS:
            raise UsageError(f"value_layout {shown(self.value_layout)}: one of {', '.join(VALUE_LAYOUTS)}")
        _check_partitioner(self.partitioner, self.num_partitions)
        if self.num_partitions is not None:
            settle("num_partitions", dict(self.num_partitions))
        if self.threads is None:
            settle("threads", default_threads())
        if self.typed is not None and self.typed.key_format is not None and self.bounds.keys is not None:
            raise UsageError("LogScan: bounds' keys are the records' key bytes, which key_format decodes: "
                             "filter the decoded keys instead")

    @classmethod
    def of(cls, source, *, columns: Optional[Sequence[str]] = None, topics=None, partitions=None,
           bounds: Optional[Bounds] = None, limit: Optional[int] = None,
           isolation_level: str = "read_uncommitted", storage_options: Optional[dict] = None,
           tiered_storage: Optional[str] = None, include_deleted_records: bool = False,
           mode: str = "FAILFAST", value_format: Optional[str] = None, key_format: Optional[str] = None,
           registry=None, typed_options: Optional[dict] = None, selection=None,
           files: Optional[FileFinding] = None, batch_columns: bool = False,
           include_control: bool = False, bad_records_path=None, verify_crc: bool = True,
           max_rows_per_batch: Optional[int] = None, fail_on_data_loss: bool = True,
           partitioner: Optional[str] = None, num_partitions: Optional[Mapping[str, int]] = None,
           threads: Optional[int] = None, value_layout: str = "copy",
           map_cache_bytes: int = 0, buffer_cache_bytes: int = 0) -> "ScanConfig":
        """The config of :class:`kafkarec.scan.LogScan`'s keywords (see its docstring): the
        keywords translated into fields (``source`` into ``paths``, ``isolation_level`` into
        ``read_committed``, ``topics`` and ``partitions`` into ``bounds``, the selection's options
        parsed, the typed keywords into :class:`TypedSettings`); the fields are checked, and their
        defaults settled, by the dataclass itself (``threads`` None: :func:`default_threads`)."""
        from kafkarec.log import selection as sel_mod
        if not isinstance(isolation_level, str) or isolation_level not in ISOLATION_LEVELS:
            raise UsageError(f"isolation_level {shown(isolation_level)}: one of {', '.join(ISOLATION_LEVELS)}")
        if not isinstance(include_deleted_records, bool):
            raise UsageError(f"include_deleted_records {shown(include_deleted_records)}: True or False")
        if bounds is not None and not isinstance(bounds, Bounds):
            raise UsageError(f"bounds {shown(bounds)}: a Bounds or None")
        if typed_options is not None and not isinstance(typed_options, Mapping):
            raise UsageError(f"typed_options {shown(typed_options)}: a dict of option names to values")
        sel = None
        if selection is not None or include_deleted_records:
            if selection is not None and not isinstance(selection, (sel_mod.Selection, Mapping)):
                raise UsageError(f"selection {shown(selection)}: the Kafka source's options (a dict) or a Selection")
            sel = selection if isinstance(selection, sel_mod.Selection) else sel_mod.parse_selection(selection or {})
            if include_deleted_records:
                sel = sel._replace(include_deleted_records=True)
        if value_format is None and key_format is None:
            if registry is not None or typed_options:
                raise UsageError("LogScan: registry and typed_options type values given value_format or key_format")
            typed = None
        else:
            typed = TypedSettings(value_format, key_format, registry, dict(typed_options or {}))
        return cls(source, columns=columns,
                   bounds=Bounds.of(topics=topics, partitions=partitions).intersect(bounds),
                   limit=limit, selection=sel, files=FileFinding() if files is None else files,
                   tiered_storage=tiered_storage,
                   storage_options=storage_options, fail_on_data_loss=fail_on_data_loss,
                   read_committed=isolation_level == "read_committed", mode=mode,
                   bad_records_path=bad_records_path, include_control=include_control,
                   batch_columns=batch_columns, typed=typed, verify_crc=verify_crc,
                   max_rows=max_rows_per_batch, partitioner=partitioner, num_partitions=num_partitions,
                   threads=threads, value_layout=value_layout, map_cache_bytes=map_cache_bytes,
                   buffer_cache_bytes=buffer_cache_bytes)

    def key_partitions(self, topic, counts: Mapping[str, int]):
        """The partitions of ``topic`` the partitioner names for the bounds' keys (None: every
        partition, no partitioner or no keys or no N known); ``counts``: ``{topic: N}`` a listing
        holds, :attr:`num_partitions` first."""
        keys = self.bounds.keys
        n = (self.num_partitions or {}).get(topic) or counts.get(topic)
        if self.partitioner is None or keys is None or topic is None or not n:
            return None
        from kafkarec._core import partition_for_key
        return frozenset(partition_for_key(k, n) for k in keys)

    @property
    def listed(self) -> bool:
        """Whether the read is planned over a listing (:mod:`kafkarec.log.layout`: URIs, tiered
        storage, a selection, bounds, offset ranges) or as local files found and cut at batch
        starts (:mod:`kafkarec.log.local`); the one place this is decided."""
        from kafkarec.log.storage import is_uri
        return (self.listing or self.tiered_storage is not None or self.selection is not None
                or self.offset_ranges is not None or not self.bounds.unbounded
                or any(is_uri(p) for p in self.paths))

    @property
    def empty(self) -> bool:
        """Whether the bounds admit no offset at all (nothing to list)."""
        lo, hi = self.bounds.offsets
        return hi is not None and (lo or 0) >= hi

    @property
    def raw_keys(self) -> bool:
        """Whether the ``key`` column holds the records' key bytes, which key bounds name (a read
        with ``key_format`` holds decoded keys there)."""
        return self.typed is None or self.typed.key_format is None

    @property
    def error_rows(self) -> bool:
        """Whether the read can give error rows, whose null offset, timestamp and key no bound
        keeps out: what an engine or the Spark data source asks before it takes a filter as
        applied (:meth:`applies_exactly`); the one place this is decided.  PERMISSIVE gives one
        per batch that cannot be decoded; DROPMALFORMED none; FAILFAST raises at such a batch,
        and its one error row, a local file that shrank after the read was planned, is a read of
        local files' (not :attr:`listed`), which a read with bounds pushed into it is not (the
        bounds plan it over a listing)."""
        return self.mode == "PERMISSIVE"

    def applies_exactly(self, term) -> bool:
        """Whether this read applies a predicate's ``term`` (:class:`kafkarec.scan.predicate.Term`)
        exactly, so the engine need not filter its rows again (:func:`kafkarec.scan.predicate.exact`)."""
        from kafkarec.scan import predicate
        return predicate.exact(term, error_rows=self.error_rows, raw_keys=self.raw_keys)

    def rows_per_batch(self, lean: bool) -> int:
        """Rows per Arrow batch: :attr:`max_rows` when the read sets it, else
        :data:`LEAN_ROWS_PER_BATCH` for a read that builds none of the records' bytes (``lean``:
        ``kafkarec._core.meta_walk`` of its columns) and has no row limit, :data:`ROWS_PER_BATCH`
        for any other without a limit, :data:`LIMITED_ROWS_PER_BATCH` for one with (the core builds
        a whole batch before a limit can stop the read)."""
        if self.max_rows is not None:
            return self.max_rows
        if self.limit is not None:
            return LIMITED_ROWS_PER_BATCH
        return LEAN_ROWS_PER_BATCH if lean else ROWS_PER_BATCH

    @property
    def views(self) -> bool:
        """Whether ``key`` and ``value`` are decoded as ``binary_view`` (:attr:`value_layout`
        "view"; a typed read's key and value columns are the typed decoder's, so its raw bytes are
        read as "copy")."""
        return self.value_layout == "view" and self.typed is None

    def narrow(self, *, bounds: Optional[Bounds] = None, columns: Optional[Sequence[str]] = None,
               limit: Optional[int] = None, value_layout: Optional[str] = None) -> "ScanConfig":
        """This config with ``bounds`` intersected, other ``columns``, a smaller ``limit``, another
        ``value_layout``.  A read
        whose ``key`` column holds decoded keys (:attr:`raw_keys` false) keeps no key bound pushed
        into it: those keys name key bytes, and the engine filters the decoded keys itself."""
        if bounds is not None and bounds.keys is not None and not self.raw_keys:
            bounds = bounds._replace(keys=None)
        changes: dict = {"bounds": self.bounds.intersect(bounds)}
        if columns is not None:
            changes["columns"] = tuple(columns)
        if limit is not None:
            changes["limit"] = int(limit) if self.limit is None else min(self.limit, int(limit))
        if value_layout is not None:
            changes["value_layout"] = value_layout
        return dataclasses.replace(self, **changes)

    def read_fields(self) -> dict:
        """:class:`kafkarec.ReadOptions`' fields this read sets."""
        fields: dict = {"verify_crc": self.verify_crc}
        if self.strict is not None:
            fields["strict"] = self.strict
        if self.max_decompressed_bytes is not None:
            fields["max_decompressed_bytes"] = self.max_decompressed_bytes
        return fields

    def read_options(self):
        """The core's :class:`kafkarec.ReadOptions` (made where decoding happens)."""
        from kafkarec._core import ReadOptions
        return ReadOptions(**self.read_fields())


#: the layouts of ``key`` and ``value`` (ScanConfig.value_layout)
VALUE_LAYOUTS = ("copy", "view")
_BOOL = (bool, "True or False")
_PATH = (Optional[str], "a path or URI, or None")
#: ScanConfig's fields checked by type and range (mode, paths, bounds, files, typed, selection,
#: partitioner, num_partitions: by their own rules in __post_init__)
_SCAN_CONFIG = _Fields("ScanConfig", {
    "columns": (Optional[Tuple[str, ...]], "column names (a list of them, or one name), or None"),
    "limit": (Optional[_whole(0, LONG_MAX)], "not negative: a whole number of rows from 0 to 2^63-1, or None"),
    "offset_ranges": (Optional[Tuple[Tuple[Optional[str], Optional[_PARTITION], _LONG, Optional[_LONG]], ...]],
                      "((topic, partition, start, end), ...): a partition 0 to 2^31-1, offsets Java longs"),
    "tiered_storage": _PATH,
    "storage_options": (Optional[Dict[str, Any]], "a dict of storage option names to values, or None"),
    "fail_on_data_loss": _BOOL, "read_committed": _BOOL, "include_control": _BOOL, "batch_columns": _BOOL,
    "verify_crc": _BOOL, "listing": _BOOL, "core_errors": _BOOL, "every_record": _BOOL,
    "corrupt_column": (str, "a column name"),
    "bad_records_path": _PATH,
    "strict": (Optional[bool], "True, False or None"),
    # the core's budget is a Py_ssize_t: 2^63-1 on a 64-bit build
    "max_decompressed_bytes": (Optional[_whole(0, LONG_MAX)], "a whole number of bytes from 0 to 2^63-1, or None"),
    "max_rows": (Optional[_whole(1, LONG_MAX)],
                 "rows per Arrow batch (LogScan's max_rows_per_batch): a whole number from 1 to 2^63-1, or None"),
    "threads": (Optional[_whole(1, 256)], "a whole number from 1 to 256"),
    "map_cache_bytes": (_whole(0, LONG_MAX), "a whole number of bytes from 0 (no maps kept) to 2^63-1"),
    "buffer_cache_bytes": (_whole(0, LONG_MAX), "a whole number of bytes from 0 (no buffers kept) to 2^63-1"),
}, texts=("tiered_storage", "bad_records_path"))


def _paths(paths) -> Tuple[str, ...]:
    """The sources as text: one path (str, bytes, os.PathLike) or any iterable of them."""
    if type(paths) is tuple and all(type(p) is str for p in paths):
        return paths                    # a config's own (dataclasses.replace): already text
    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    elif isinstance(paths, Mapping) or not hasattr(paths, "__iter__"):
        raise UsageError(f"paths {shown(paths)}: a path or URI, or a list of them")
    out = []
    for p in paths:
        if not isinstance(p, (str, bytes, os.PathLike)):
            raise UsageError(f"paths: {shown(p)} is no path or URI (a str, bytes or os.PathLike)")
        p = os.fspath(p)
        out.append(os.fsdecode(p) if isinstance(p, bytes) else p)
    return tuple(out)


def _check_partitioner(partitioner, num_partitions) -> None:
    if partitioner is not None and (not isinstance(partitioner, str) or partitioner not in PARTITIONERS):
        raise UsageError(f"partitioner {shown(partitioner)}: one of {', '.join(PARTITIONERS)}")
    check_partition_counts(num_partitions)


def check_partition_counts(num_partitions: Optional[Mapping[str, int]]) -> None:
    """``{topic: N}`` as Kafka's default partitioner takes it, or a UsageError: a topic's
    partition count is a Java int, 1 to 2^31-1 (the one rule of ``find`` and the census)."""
    if num_partitions is not None and not isinstance(num_partitions, Mapping):
        raise UsageError(f"num_partitions {shown(num_partitions)}: {{topic: partition count}} (1 to 2^31-1)")
    for topic, n in (num_partitions or {}).items():
        if not isinstance(topic, str):
            raise UsageError(f"num_partitions: {shown(topic)} is no topic name")
        if not isinstance(n, int) or isinstance(n, bool) or not 0 < n < 1 << 31:
            raise UsageError(f"num_partitions of {topic!r}: {shown(n)} is no partition count (1 to 2^31-1)")
