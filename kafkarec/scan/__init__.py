"""The one Arrow stream reader of Kafka logs: :class:`LogScan`.

A :class:`LogScan` reads a log directory, a partition folder, segment files or a URI (object
stores, tiered objects and stitched histories, as :func:`kafkarec.log.layout.scan_history`)
into Arrow record batches in Spark's Kafka schema (``key``, ``value``, ``topic``,
``partition``, ``offset``, ``timestamp``, ``timestampType``, ``headers``), and exports them
through the Arrow PyCapsule stream interface (``__arrow_c_stream__``): any Arrow consumer
(pyarrow, Polars, DuckDB ...) takes it as is.  Every engine adapter, the Spark data source
included, reads through it; its pieces of work (:meth:`LogScan.pieces`) are what a
distributed engine hands to its workers.

    >>> from kafkarec.scan import Bounds, LogScan
    >>> scan = LogScan(log_dir, columns=["offset", "timestamp"],
    ...                bounds=Bounds(offsets=(10, 20)))                     # doctest: +SKIP
    >>> scan.to_table().num_rows                                            # doctest: +SKIP
    10

The keywords are read once into a frozen :class:`ScanConfig` (``scan.config``):
``LogScan(config)`` takes one as it is, :meth:`LogScan.of` and ``LogScan(source, **keywords)``
make it (:meth:`ScanConfig.of`), and :meth:`LogScan.narrow` makes a new scan of a new config.

What is pruned and what is filtered:

* topics and partitions (:class:`Bounds`, ``topics=``, ``partitions=``): partitions not
  selected are not opened;
* offsets ``[lo, hi)``: resolved through each segment's ``.index`` before any segment byte is
  read (whole segments skipped by their base offsets); the batches at the edges are read
  whole and their rows outside the range dropped;
* timestamps ``[lo, hi)`` (ms since the epoch): the lower bound is resolved as Kafka's
  ``offsetsForTimes`` (the ``.timeindex``, then a scan from its entry): every record before
  that offset has an earlier timestamp, so nothing before it is read.  The upper bound prunes
  nothing: CreateTime timestamps are not ordered and a batch header has no minimum
  timestamp, so a record past any point may still be early enough.  Both are applied row by
  row too: the rows are exact.  The Kafka source's meaning of an ending timestamp (stop at
  ``offsetsForTimes`` of it, whatever the later records' timestamps) is its option
  ``endingTimestamp`` of ``selection=`` (:func:`kafkarec.log.selection.parse_selection`);
* keys (``Bounds(keys=...)``): the core compares each record's key before it builds the
  record, so other keys' values, headers and rows are never built; with ``partitioner="murmur2"``
  (and ``num_partitions``) only the partitions Kafka's default partitioner names for the keys are
  opened;
* ``limit``: reading stops once that many rows are out;
* columns: the columns not asked for are dropped from each batch.

``isolation_level="read_committed"`` leaves out aborted transactions and everything from the
last stable offset on, judged over each partition's whole log (:mod:`kafkarec.log.committed`).
``mode``: Spark's parse modes (:mod:`kafkarec.scan.decode`): ``FAILFAST`` (default) raises
:class:`kafkarec.errors.MalformedBatchError` naming the file, byte and reason; ``PERMISSIVE``
adds a ``_corrupt_record`` column and one error row per batch that cannot be decoded;
``DROPMALFORMED`` logs and leaves such batches out.

Bytes read are counted through the storage layer (:func:`kafkarec.log.storage.count_read`):
:func:`kafkarec.log.storage.process_bytes_read` in this process, and with the environment
variable ``KAFKAREC_BYTES_READ_DIR`` naming a folder, every process's tallies there
(:func:`kafkarec.log.storage.bytes_read`); see ``docs/layout.md``.
"""
from __future__ import annotations

import logging
from typing import Callable, Iterator, List, NamedTuple, Optional, Sequence

from kafkarec._extras import require
from kafkarec.errors import UsageError
from kafkarec.scan import _plan, _read
from kafkarec.scan._files import FileWalk, partition_folders
from kafkarec.scan.typed import TypedRows
from kafkarec.scan._walk import ABORTED, CONTROL, DATA, CommittedView, LogFacts, PartitionWalk, Verdict
from kafkarec.scan.config import CORRUPT_COLUMN, ISOLATION_LEVELS, FileFinding, ScanConfig, TypedSettings, default_threads
from kafkarec.scan.bounds import Bounds
from kafkarec.scan.decode import Errors
# a read's rows counted from its batch headers where exact (the engines' count pushdown: kafkarec.engines.daft)
from kafkarec.scan._read import header_count

__all__ = ["LogScan", "error_rows", "ScanConfig", "FileFinding", "TypedSettings", "Bounds", "ScanPiece", "CORRUPT_COLUMN",
           "ISOLATION_LEVELS", "PartitionWalk", "Verdict", "CommittedView", "LogFacts",
           "DATA", "CONTROL", "ABORTED", "default_threads", "listings", "partition_folders", "FileWalk", "header_count"]

log = logging.getLogger("kafkarec")


class ScanPiece(NamedTuple):
    """One piece of work (picklable): a byte range of one segment of one topic-partition, read
    by :meth:`LogScan.read_piece`.  ``bytes``: its size, what a distributed planner weighs;
    ``key``: its topic-partition (and log dir), pieces of one key are in log order."""
    topic: Optional[str]
    partition: Optional[int]
    bytes: int
    key: tuple
    item: object        # a kafkarec.scan._plan.SegmentPiece: a local Slice or a ListedRange

    @property
    def file(self) -> str:
        """The segment file this piece reads (its path as its storage names it): with a batch
        position, where a batch is (positions repeat from one segment to the next)."""
        return self.item.path

    @property
    def storage(self):
        """The storage holding its segment (:class:`kafkarec.log.storage.Storage`; a local slice's:
        the local file system's)."""
        return self.item.storage

    @property
    def range(self):
        """Its segment range (:class:`kafkarec.log.selection.SegmentRange`: the segment, its bytes,
        the offsets kept), whichever kind of piece it is."""
        return self.item.range

    @property
    def share(self) -> int:
        """Which of the config's ``offset_ranges`` it reads (0 without them)."""
        return self.item.share

    @property
    def topic_key(self) -> tuple:
        """Its topic's key (whichever log dir holds the partition; a folder whose name has no topic
        is a topic of its own): what a read that groups pieces by topic groups them by."""
        return _plan.topic_key(self.key)

    @property
    def where(self) -> str:
        """What its errors name: a local path, or its storage's URI."""
        return self.item.where

    @property
    def skip(self) -> tuple:
        """``(position, size)`` of the batches of its segment its read leaves out (a
        read_committed read's: aborted transactions, and from the last stable offset on)."""
        return self.item.skip


class LogScan:
    """An Arrow stream of the records of Kafka logs (see the module docstring).

    ``LogScan(source, **keywords)`` (or :meth:`LogScan.of`) reads the keywords into one
    :class:`ScanConfig` (:meth:`ScanConfig.of`; the config checks them); ``LogScan(config)``
    takes one already made.  The keywords: ``source``: a path or URI, or a list of them;
    ``columns``: the columns to return (default
    all; ``batchPosition``, ``batchBaseOffset`` ... with ``batch_columns=True``); ``topics``,
    ``partitions`` and ``bounds`` (:class:`Bounds`) bound the read, intersected; ``limit``: at
    most that many rows; ``storage_options``: :func:`kafkarec.log.storage.resolve`'s;
    ``tiered_storage``: a remote root whose copies are stitched with the log dirs' segments;
    ``include_deleted_records``: records below a partition's log start offset too.
    ``selection``: a :class:`kafkarec.log.selection.Selection` or a dict of the Kafka source's
    options (``startingOffsets``, ``endingTimestamp`` ..., in their meaning); ``files``: a
    :class:`FileFinding` for local paths (globs, recursion);
    ``value_format`` / ``key_format`` with ``registry`` (and ``typed_options``, the names of
    :func:`kafkarec.registry.typed.decode_table`): typed values, as the Spark source's options;
    ``partitioner`` (``"murmur2"``) and ``num_partitions`` (``{topic: N}``): with keys in the
    bounds, only the partitions that partitioner names for them are opened; ``threads``: how
    many windows of local files are decoded at once, ahead of the consumer (typed values typed there
    too, settled in the consumer's thread), handed on in log order (default
    :func:`kafkarec.scan.config.default_threads`: the CPUs, at most 4; 1: in the consumer's thread);
    ``value_layout``: ``"copy"`` (default: ``key`` and ``value`` as ``binary``) or ``"view"``
    (``binary_view``: a local window's long keys and values copied into the batch's own bytes and
    viewed there, never into a map; docs/engines.md, "The view layout"); ``map_cache_bytes``: at most this
    many bytes of local windows' maps kept open from one read of the scan (and of its
    :meth:`narrow` ed scans) to the next (default 0: none; DuckDB's and Polars' sources keep 1 GiB:
    docs/engines.md, "Windows kept mapped"), closed by :meth:`close` or when the scan is collected.
    ``buffer_cache_bytes``: at most this many bytes of column buffers the engines let go of kept
    for the next chunks' columns, from one read of the scan (and of its narrowed scans) to the next
    (default 0: none; DuckDB's and Polars' sources keep 256 MiB: docs/engines.md, "Column buffers
    kept"), let go by :meth:`close` or when the scan is collected.
    ``window_maps`` and ``spare_buffers`` (not config keywords): the
    :class:`kafkarec.log.window_maps.WindowMaps` to read through and the
    :class:`kafkarec._core.SpareBuffers` to build columns in, instead of making them (:meth:`narrow`
    hands a scan's to the scans it makes).
    """

    def __init__(self, source, *, window_maps=None, spare_buffers=None, **keywords):
        if isinstance(source, ScanConfig):
            if keywords:
                raise UsageError("LogScan: a ScanConfig or keywords, not both (ScanConfig.narrow "
                                 "or dataclasses.replace change a config)")
            config = source
        else:
            config = ScanConfig.of(source, **keywords)
        self.config = config
        # The maps kept open between reads: a resource of this process, so the scan holds it, not
        # the config (a config is plain values, compared and pickled to workers; its
        # map_cache_bytes is the budget only).  Made here for the scan its owner made (a registered
        # source's), handed to each narrow()ed scan (each query's: ``window_maps``), dropped when
        # pickled (a worker maps as it reads).
        self.window_maps = window_maps
        if window_maps is None and config.map_cache_bytes > 0:
            from kafkarec.log.window_maps import WindowMaps
            self.window_maps = WindowMaps(config.map_cache_bytes)
        # The column buffers kept between reads (buffer_cache_bytes), held the same way.
        self.spare_buffers = spare_buffers
        if spare_buffers is None and config.buffer_cache_bytes > 0:
            from kafkarec._core import SpareBuffers
            self.spare_buffers = SpareBuffers(config.buffer_cache_bytes)
        self._typed = None if config.typed is None else TypedRows(config.typed, config.bounds.topics)
        full = self._full_schema()
        if config.columns is None:
            self.columns = full.names
        else:
            self.columns = list(config.columns)
            unknown = [c for c in self.columns if c not in full.names]
            if unknown:
                raise UsageError(f"LogScan: column(s) {unknown} are not read; available: {full.names}")
        self._found = None

    @classmethod
    def of(cls, source, **keywords) -> "LogScan":
        """The scan of ``source`` with :meth:`ScanConfig.of`'s keywords."""
        return cls(ScanConfig.of(source, **keywords))

    @property
    def bounds(self) -> Bounds:
        return self.config.bounds

    @property
    def limit(self) -> Optional[int]:
        return self.config.limit

    @property
    def selection(self):
        return self.config.selection

    @property
    def batch_columns(self) -> bool:
        return self.config.batch_columns

    # --- what is read ------------------------------------------------------------------
    def _full_schema(self):
        pa = require("pyarrow")
        from kafkarec import arrow_schema
        base = arrow_schema(batch_columns=self.config.batch_columns,
                            value_layout="view" if self.config.views else "copy")
        if self._typed is not None:
            base = self._typed.schema(base)
        corrupt = self.config.corrupt_column
        if self.config.mode == "PERMISSIVE" and corrupt not in base.names:   # typed: already there
            base = base.append(pa.field(corrupt, pa.string()))
        return base

    @property
    def schema(self):
        """The pyarrow.Schema of the batches: the projected columns."""
        full = self._full_schema()
        pa = require("pyarrow")
        return pa.schema([full.field(c) for c in self.columns])

    def decoded_columns(self) -> Optional[list]:
        """The columns decoding must give (None: all): those asked for, and those the bounds
        and the typed values need; the offset always (the offset bounds apply to it)."""
        from kafkarec import arrow_schema
        need = set(self.columns) | {"offset"}
        if self.bounds.timestamps != (None, None):
            need.add("timestamp")
        if self._typed is not None:
            need |= self._typed.needs
        if self.config.include_control:     # the offset-order rule passes over control rows
            need.add("isControl")
        names = arrow_schema(batch_columns=self.config.batch_columns or self.config.include_control).names
        return None if need.issuperset(names) else [n for n in names if n in need]

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_found"] = None          # the plan's caches stay where it was made
        state["window_maps"] = None     # and the maps kept open (this process's)
        state["spare_buffers"] = None   # and the column buffers kept
        return state

    def narrow(self, *, bounds: Optional[Bounds] = None, columns: Optional[Sequence[str]] = None,
               limit: Optional[int] = None) -> "LogScan":
        """This scan with bounds intersected, other columns, a smaller limit (a new scan of
        :meth:`ScanConfig.narrow`), reading through this scan's kept maps (``map_cache_bytes``)."""
        return LogScan(self.config.narrow(bounds=bounds, columns=columns, limit=limit), window_maps=self.window_maps,
                       spare_buffers=self.spare_buffers)

    def close(self) -> None:
        """The local windows' maps this scan kept open (``map_cache_bytes``) closed, and the column
        buffers it kept (``buffer_cache_bytes``) let go: its narrowed scans' too, which share them
        (a read after it maps its windows as it goes, and keeps no buffer)."""
        if self.window_maps is not None:
            self.window_maps.close()
        if self.spare_buffers is not None:
            self.spare_buffers.close()

    # --- pieces of work ------------------------------------------------------------------
    def found(self, report=None, listed=None) -> "_plan.Found":
        """What :mod:`kafkarec.log` found (listed once per scan object); ``report``: what a
        listing met, as :func:`kafkarec.scan._plan.found_listed` takes it (default: logged);
        ``listed``: the config's paths listed already (:func:`listings`' items, of a config with
        the same paths and storage), planned over instead of listing them again (a listed read)."""
        if self._found is None:
            config = self.config
            if config.empty:
                self._found = _plan.Found([], None, None, list)
            elif config.listed:
                self._found = _plan.found_listed(config, report, None if listed is None else list(listed))
            else:
                self._found = _plan.found_local(config)
        return self._found

    def _piece(self, item) -> ScanPiece:
        found = self.found()
        key = found.group(item)
        return ScanPiece(item.topic, item.partition, item.size, tuple(key), item)

    def pieces(self, report=None, listed=None) -> List[ScanPiece]:
        """The pieces of work, in log order within each topic-partition (``report`` and
        ``listed``: see :meth:`found`)."""
        return [self._piece(item) for item in self.found(report, listed).pieces]

    def split(self, piece: ScanPiece, max_bytes: int) -> List[ScanPiece]:
        """``piece`` cut at batch starts into pieces of about ``max_bytes``."""
        return [self._piece(item) for item in self.found().split(piece.item, max_bytes)]

    def as_read(self, pieces: Sequence[ScanPiece]) -> List[ScanPiece]:
        """Pieces as a task reads them (local slices in windows it maps one at a time)."""
        return [self._piece(item) for item in self.found().as_read([p.item for p in pieces])]

    def listing(self) -> "_plan.Listing":
        """The read's one path listed (:func:`kafkarec.scan._plan.listings`; nothing reported): its
        layout, the gaps of its stitched history, a resolver of its storage."""
        if len(self.config.paths) != 1:
            raise UsageError(f"LogScan.listing: one path, not {len(self.config.paths)}")
        return next(_plan.listings(self.config))

    def partition_walks(self, listed: Optional[Sequence["_plan.Listing"]] = None) -> Iterator[PartitionWalk]:
        """Each topic-partition of the read, to walk batch by batch over its whole log
        (:class:`PartitionWalk`: control and aborted batches too, each judged by the transaction
        rule), for the readers of the log's own facts (the lakehouse audit, the hand-off point).
        Listed as the read's pieces of work are (:func:`kafkarec.scan._plan.listings`: the paths,
        storage and tiered options; nothing reported; ``listed``: listings already made, of
        :meth:`listing`), selected by the config's selection (its topics) and bounds (topics
        and partitions); offsets are the caller's to bound."""
        from kafkarec.log import selection
        config = self.config
        for listed in (_plan.listings(config) if listed is None else listed):
            parts = (listed.layout.partitions if config.selection is None
                     else selection.select_partitions(listed.layout, config.selection))
            for part in parts:
                if config.bounds.admits(part.topic, part.partition):
                    yield PartitionWalk(listed.layout.storage, part, _plan._lost(listed, part), listed.resolver,
                                        listed.walked)

    # --- reading -----------------------------------------------------------------------
    def read_items(self, pieces: Sequence[ScanPiece], *, batch_columns: Optional[bool] = None,
                   hint: str = "(LogScan mode=FAILFAST; use PERMISSIVE or DROPMALFORMED)", columns=None,
                   windows: bool = False, typed: bool = False, finish: Optional[Callable] = None,
                   timestamp_unit: str = "ms"):
        """``(where, item)`` for the pieces: Arrow batches of ``columns`` (None: all; offset
        bounds applied) and :class:`Errors`, for callers that render errors
        their own way (the Spark data source); :meth:`read_piece` is the plain stream.
        ``windows``: listed pieces are cut about a window apart (at offset-index positions), and so
        decode on the pool when the config has threads, whatever their size (a task's pieces are
        its planner's to size: a Spark task reads them as they are, in its one thread).  ``typed``:
        the batches decoded on the pool are typed there too (the config's typed settings), not yet
        settled (:meth:`TypedRows.convert` settles them, and types the others).  ``finish(batch)``:
        run on each batch the pool decodes, after the typing (the batches decoded in the consumer's
        thread are handed on as they are).  ``timestamp_unit``: the unit the core writes ``timestamp``
        in (:func:`kafkarec.iter_arrow`'s; a time bound or typing reads milliseconds: the caller's to
        leave it ``"ms"`` then)."""
        # a local slice larger than a window is mapped one window at a time (cut by _read.Read)
        items = [p.item for p in pieces]
        options = self.config.read_options()
        need = (self.config.batch_columns if batch_columns is None else batch_columns) or (
            self.config.include_control and columns is not None and "isControl" in columns)
        split = None
        if windows and self.config.listed:      # (pieces planned elsewhere: not planned again here)
            split = self._found.split if self._found is not None else _plan.splitter()
        on_pool = self._typed.typed_batch if typed and self._typed is not None else None
        if finish is not None:
            on_pool = finish if on_pool is None else _then(on_pool, finish)
        read = _read.Read(self.config, options, need, hint, columns, split=split, typed=on_pool,
                          timestamp_unit=timestamp_unit, maps=self.window_maps, spare=self.spare_buffers)
        yield from read.items(items)

    def framed(self, piece: ScanPiece, options=None) -> Iterator:
        """The batches of one piece (of either kind) framed, not decoded (``kafkarec.RecordBatch`` es:
        control batches too, each holding an offset of the piece), then, if framing failed,
        the :class:`kafkarec.DecodeError` that stopped it: what the command line's ``dump``
        and ``stats`` print.  ``options``: a :class:`kafkarec.ReadOptions` (default the
        config's)."""
        yield from _read.framed(options or self.config.read_options(), piece.item)

    def read_piece(self, piece: ScanPiece) -> Iterator:
        """The record batches of one piece (pyarrow.RecordBatch in :attr:`schema`)."""
        yield from self._batches([piece])

    def read_pieces(self, pieces: Sequence[ScanPiece]) -> Iterator:
        """The record batches of ``pieces`` in order, the limit applied: the stream of a read
        planned over a listing it was given (``scan.read_pieces(scan.pieces(listed=...))``)."""
        yield from self._batches(pieces)

    def count(self, pieces: Optional[Sequence[ScanPiece]] = None) -> int:
        """How many rows a read of ``pieces`` (default all) gives, as ``sum(rb.num_rows for rb in
        scan.read_pieces(pieces))`` (a ``count(*)``): each log's pieces counted from their batch
        headers, no record built, where that is exact (:func:`kafkarec.scan._read.header_count`:
        a read_uncommitted read of clean v2 batches, its offset bounds cutting at batch
        boundaries), otherwise by reading its rows (their offsets only)."""
        pieces = self.pieces() if pieces is None else list(pieces)
        config = self.config
        if config.limit is not None:
            return sum(rb.num_rows for rb in self.narrow(columns=["offset"]).read_pieces(pieces))
        # what the headers cannot answer: a row per batch the transaction rule, a time or key bound
        # or typing may leave out, control rows kept, what a quarantine keeps
        whole = (not config.read_committed and not config.include_control and config.typed is None
                 and config.bounds.timestamps == (None, None) and config.bounds.keys is None
                 and config.bad_records_path is None)
        options = config.read_options()
        logs: dict = {}
        for piece in pieces:        # one log's pieces in log order: the offset-order rule is per log
            logs.setdefault(piece.key, []).append(piece)
        counted = 0
        for group in logs.values():
            n = header_count(options, [p.item for p in group]) if whole else None
            if n is None:
                n = sum(rb.num_rows for rb in self.narrow(columns=["offset"])._batches(group))
            counted += n
        return counted

    def batches_in(self, schema, pieces: Optional[Sequence[ScanPiece]] = None) -> Iterator:
        """The batches of :meth:`read_pieces` (default: every piece) in ``schema``: :attr:`schema`
        with an engine's own types for some columns (``timestamp`` in another unit: DuckDB's
        microseconds; ``key``, ``value`` as ``binary_view``: Polars' own layout).  Where no typed
        value or time bound reads the timestamps afterwards, the core writes them in the unit asked
        for as it decodes (:func:`kafkarec.iter_arrow`'s ``timestamp_unit``: no cast), and a read of
        ``value_layout="view"`` decodes ``key`` and ``value`` as ``binary_view`` already (no cast);
        the other types are cast by Arrow on the decode pool's threads, next to the decode, with the
        same condition, otherwise (and for a batch the consumer's thread decoded) in the consumer's
        thread, as the batch is settled.  The rows, and the errors of a timestamp the unit cannot
        hold (pyarrow's cast's), are the read's in milliseconds cast."""
        if list(schema.names) != list(self.schema.names):
            raise ValueError(f"batches_in: the columns {schema.names} are not the read's {self.schema.names}")
        return self._batches(self.pieces() if pieces is None else pieces, schema)

    def _batches(self, pieces: Sequence[ScanPiece], target=None) -> Iterator:
        schema = self.schema if target is None else target
        left = self.limit
        if left == 0:
            return
        finish, unit = None, "ms"
        if target is not None and self._typed is None and self.bounds.timestamps == (None, None):
            # (a time bound compares the timestamps in milliseconds, and typing reads the value, on
            # the consumer's thread: there the casts wait for them, in _rows)
            unit = _core_unit(target)
            # (the timestamps, in the core's unit already, cast only in a chunk it left in ms)
            finish = _caster(target)
        reads = self.read_items(pieces, columns=self.decoded_columns(), windows=True, typed=True, finish=finish,
                                timestamp_unit=unit)
        try:
            for where, item in reads:
                if isinstance(item, Errors):
                    out = error_rows(item, schema, self.config.mode, corrupt_column=self.config.corrupt_column,
                                     always=True)
                else:
                    out = self._rows(item, schema)
                if out is None or not out.num_rows:
                    continue
                if left is not None:
                    if out.num_rows >= left:
                        yield out.slice(0, left)
                        return
                    left -= out.num_rows
                yield out
        finally:
            reads.close()        # stops reading (a limit reached, a consumer gone)

    def _rows(self, rb, schema):
        pa = require("pyarrow")
        from kafkarec.log.selection import filter_range
        rb = filter_range(rb, "timestamp", *self.bounds.timestamps)
        if not rb.num_rows:
            return None
        if self._typed is not None:
            rb = self._typed.convert(rb)        # (typed on the pool already, or here)
            if rb is None:
                return None
        cols = []
        for field in schema:
            i = rb.schema.get_field_index(field.name)
            if i < 0:
                cols.append(pa.nulls(rb.num_rows, field.type))
                continue
            col = rb.column(i)
            cols.append(col if col.type == field.type else col.cast(field.type))   # (batches_in's)
        return pa.RecordBatch.from_arrays(cols, schema=schema)

    def __iter__(self) -> Iterator:
        return self._batches(self.pieces())

    def to_reader(self):
        """A pyarrow.RecordBatchReader over every piece in order (limit applied)."""
        pa = require("pyarrow")
        return pa.RecordBatchReader.from_batches(self.schema, iter(self))

    def __arrow_c_stream__(self, requested_schema=None):
        """The Arrow PyCapsule stream interface: the batches of :meth:`to_reader`."""
        return self.to_reader().__arrow_c_stream__(requested_schema)

    def to_table(self):
        """Every batch in one pyarrow.Table."""
        pa = require("pyarrow")
        return pa.Table.from_batches(list(self), schema=self.schema)

    def __repr__(self):
        return f"LogScan({self.config.paths!r}, columns={self.columns!r}, bounds={self.bounds!r}, limit={self.limit!r})"


def _then(first, second):
    """``second(first(batch))``: two steps the pool runs on each batch it decodes."""
    return lambda batch: second(first(batch))


def _core_unit(target) -> str:
    """The unit the core writes ``timestamp`` in for ``target`` (a schema): its unit where the core
    writes it (a timestamp without a time zone), else milliseconds (cast by Arrow)."""
    pa = require("pyarrow")
    i = target.get_field_index("timestamp")
    t = target.field(i).type if i >= 0 else None
    if t is not None and pa.types.is_timestamp(t) and t.tz is None and t.unit in ("ms", "us", "ns"):
        return t.unit
    return "ms"


def _caster(target):
    """A batch's columns cast to their types in ``target`` (those it holds: the decoded columns),
    the other columns as they are (:meth:`LogScan.batches_in`'s casts on the pool)."""
    def cast(rb):
        for field in target:
            i = rb.schema.get_field_index(field.name)
            if i >= 0 and rb.schema.field(i).type != field.type:
                rb = rb.set_column(i, field.name, rb.column(i).cast(field.type))
        return rb
    return cast


def listings(config: ScanConfig, report=None) -> Iterator["_plan.Listing"]:
    """Each of ``config.paths`` listed once, in order, as a read of ``config`` lists them to plan
    its pieces of work (:func:`kafkarec.scan._plan.listings`: its storage and tiered options; with
    a partitioner and a key bound, the partitions it names for none of the keys left out; each a
    ``Listing``: ``layout``, ``gaps``, ``resolver``): what a caller that needs the log's partitions
    (the census's partition counts, a stream's offsets per trigger, a typed read's ``_schemas``)
    reads instead of listing the log itself.  ``report``: as :meth:`LogScan.found`'s."""
    return _plan.listings(config, report)


def error_rows(errs: Errors, schema, mode: str, *, corrupt_column: Optional[str] = CORRUPT_COLUMN,
               always: bool = False):
    """The error rows of :class:`Errors` in ``schema`` (a pyarrow.Schema): one
    per error, ``topic`` and ``partition`` set (``batchPosition`` and ``batchBaseOffset`` too),
    the message in ``corrupt_column``, every other column null.  None, the errors logged, when
    ``mode`` leaves them out (DROPMALFORMED), or when ``schema`` has no ``corrupt_column`` unless
    ``always`` (a local read gives a file that shrank as rows whatever the columns).  The one
    builder of error rows: :class:`LogScan` and the Spark data source use it."""
    pa = require("pyarrow")
    if mode == "DROPMALFORMED" or (not always and (corrupt_column is None or corrupt_column not in schema.names)):
        for e in errs.errors:
            log.warning("kafkarec: %s left out: %s", mode, e["message"])
        return None
    fixed = {"topic": errs.topic, "partition": errs.partition,
             "batchPosition": [e["position"] for e in errs.errors],
             "batchBaseOffset": [e.get("base_offset") for e in errs.errors]}
    if corrupt_column is not None:
        fixed[corrupt_column] = [e["message"] for e in errs.errors]
    n = len(errs.errors)
    cols = []
    for field in schema:
        v = fixed.get(field.name)
        if isinstance(v, list):
            cols.append(pa.array(v, field.type))
        elif v is not None:
            cols.append(pa.array([v] * n, field.type))
        else:
            cols.append(pa.nulls(n, field.type))
    return pa.RecordBatch.from_arrays(cols, schema=schema)
