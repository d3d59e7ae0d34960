"""The options of ``format("kafkarec")``, parsed once into one frozen, typed read specification.

Where the data source takes its options (``spark.read`` / ``spark.readStream``, classic and
Spark Connect alike: :class:`spark_udfs.read.datasource.KafkaRecDataSource`), :func:`read_spec` turns
them into a :class:`ReadSpec`; every layer after it - the local and the listed batch readers,
the stream, the typed and table layers, tiered reads - reads that object and none looks at
option text again.  A value of the wrong type or outside the accepted ones is refused there,
naming the option and what it accepts; a name close to a known one is refused with a
did-you-mean.  Spark's generic reader options (``path``, ``pathGlobFilter`` ...) and the
Kafka source's names (``kafka.*``, ``failOnDataLoss``, ``maxOffsetsPerTrigger`` ...,
:mod:`spark_udfs.read.options`, which translates them) are known names.

What kafkarec's reader takes of the options (paths, parse mode, storage, file finding, CRC
checks ...) is parsed straight into its one :class:`kafkarec.scan.ScanConfig`
(:attr:`ReadSpec.config`, which checks it); the spec adds only what is Spark's own (the option
names given, the view, CDC, the planner's and the stream's limits, the typed options).

Which reader takes which option is the ``readers`` column of the one option table
(:data:`spark_udfs.read.options.OPTIONS`); the batch/stream split (:meth:`ReadSpec.for_batch`,
:meth:`ReadSpec.for_stream`) happens when Spark asks for a reader, as only then is it known.
"""
from __future__ import annotations

import dataclasses
import difflib
import logging
from typing import Optional

from kafkarec._option_text import INT_MAX, LONG_MAX, option_json, shown, text_bool, text_choice, text_whole, whole_number
from kafkarec.errors import UsageError
from kafkarec.scan import FileFinding, ScanConfig
from kafkarec.scan.config import MODES, PARTITIONERS
from spark_udfs.read import options as _options
from spark_udfs.read.planning import DEFAULT_MAX_PARTITION_BYTES, DEFAULT_OPEN_COST_BYTES
from spark_udfs.read.schema import DEFAULT_CORRUPT_COLUMN

__all__ = ["DEFAULT_MAX_RECORDS_PER_BATCH", "ReadSpec", "read_spec", "parse_bytes"]

# Rows per Arrow batch handed to Spark (option maxRecordsPerBatch).  Above Spark's 10,000
# for Arrow: the Python worker's per-batch costs (conforming, the IPC write, the hand-over
# to the JVM) fall with fewer batches.  On bench_spark's 1M rows the workers' CPU went from
# 0.50 to 0.43 s with 32,768 rows (two runs); 16,384 keeps an executor's peak RSS where
# 10,000 had it (tests/spark/test_planning.py's 256 MiB segment: +138 MiB; +160 at 32,768).
# The 64 MiB cap on a batch's key+value+header bytes holds either way.
DEFAULT_MAX_RECORDS_PER_BATCH = 16384

log = logging.getLogger("spark_udfs")

VALUE_FORMATS = ("registry", "avro", "protobuf", "json")


def _readers_of(name: str) -> str:
    """Which readers take option ``name`` (storage options: kafkarec.log.storage's names)."""
    from kafkarec.log import storage
    if name in _options.READERS:
        return _options.READERS[name]
    return "RS" if storage.storage_options({name: "x"}) else ""


def _display_names() -> dict:
    """{lower-case name: name as documented} of every known name (for did-you-mean)."""
    from kafkarec.avro.decoder import SPARK_OPTIONS as AVRO_OPTIONS
    from kafkarec.protobuf.options import SPARK_OPTIONS as PROTOBUF_OPTIONS
    names = [n for o in _options.OPTIONS if " " not in o.name for n in (o.name, o.reads_as) if n]
    names += list(AVRO_OPTIONS) + list(PROTOBUF_OPTIONS)
    return {n.lower(): n for n in names}


#: a byte size as Spark writes one (JavaUtils.byteStringAs: digits and a unit b, k, m, g, t, p,
#: with or without b/ib), kafkarec's fractions too (``1.5g``, whole bytes rounded down); at most
#: 40 characters, so no number's text is long enough to cost anything to read
_BYTE_SIZE = __import__("re").compile(r"([0-9]{1,30})(?:\.([0-9]{1,30}))?\s*([kmgtp]?)(?:i?b)?")


def parse_bytes(value, default: int, name: str = "") -> int:
    """``"128m"``, ``"4k"``, ``"1g"``, ``"1048576"``, ``"64MiB"``, ``"1.5g"`` -> bytes (``default``
    when unset): 1 to 2^63-1 (Spark's sizes are Java longs); anything else (``inf``, ``nan``, a
    negative size, an exponent, a size past a long) is a UsageError naming the option."""
    if value is None or value == "":
        return default
    if isinstance(value, int) and not isinstance(value, bool):
        return whole_number(f"option {name}", value, 1, LONG_MAX)
    m = _BYTE_SIZE.fullmatch(str(value).strip().lower())
    if m is None:
        raise UsageError(f"option {name}: expected a byte size like 128m, 4k or 1048576, "
                         f"got {shown(value)}")
    whole, fraction, unit = m.groups()
    mult = 1024 ** ("kmgtp".index(unit) + 1) if unit else 1
    n = int(whole) * mult + (int(fraction) * mult // 10 ** len(fraction) if fraction else 0)
    if not 1 <= n <= LONG_MAX:
        raise UsageError(f"option {name}: expected a positive byte size, at most 2^63-1 (8191p), got {shown(value)}")
    return n


def parse_duration_ms(text) -> int:
    """``maxTriggerDelay`` as the Kafka source takes it (Spark's time strings: ``15m``,
    ``500ms``, ``30s``, ``2h``, ``1d``; a bare number is ms), at most 2^63-1 ms (a Java long)."""
    import re
    s = str(text).strip().lower()
    m = re.fullmatch(r"(\d{1,30})\s*(ms|s|m|min|h|d)?", s)
    n = None if m is None else int(m.group(1)) * {None: 1, "ms": 1, "s": 1000, "m": 60_000, "min": 60_000,
                                                    "h": 3_600_000, "d": 86_400_000}[m.group(2)]
    if n is None or n > LONG_MAX:
        raise UsageError(f"option maxTriggerDelay: not a duration like 15m or 500ms (at most 2^63-1 ms): {shown(text)}")
    return n


def _count(o: dict, key: str, message: str, hi: int = LONG_MAX) -> Optional[int]:
    """A whole number from 1 to ``hi`` (``message`` when it is not one), or None when unset."""
    v = o.get(key)
    if v in (None, ""):
        return None
    try:
        return text_whole(key, v, 1, hi)
    except UsageError:
        raise UsageError(f"{message} (a whole number from 1 to {hi}), got {shown(v)}") from None


def _offset(name: str, value) -> int:
    return text_whole(name, value, 0, LONG_MAX,
                      error=lambda _: UsageError(f"option {name} must be an offset (a whole number, "
                                                 f"0 to 2^63-1), got {shown(value)}"))


def _bool(o: dict, key: str, default: bool, name: Optional[str] = None) -> bool:
    v = o.get(key)
    return default if v is None or v == "" else text_bool(name or key, v)


# --- the specification --------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Columns:
    """Spark's own columns (the batch and control columns are the config's)."""
    include_headers: bool
    decode: Optional[str]              # an internal topic's typed columns (kafkarec.internal.columns)


@dataclasses.dataclass(frozen=True)
class Limits:
    """The planner's and the stream's limits (rows per batch and inflation are the config's)."""
    max_partition_bytes: int
    open_cost_bytes: int
    min_partitions: Optional[int]      # None: the cluster's parallelism (batch), a task per partition (stream)
    dedupe_buffer_bytes: int           # view=latest's key map
    max_offsets: Optional[int]         # streams: maxOffsetsPerTrigger
    min_offsets: Optional[int]         # streams: minOffsetsPerTrigger
    max_trigger_delay_ms: int


@dataclasses.dataclass(frozen=True)
class TypedOptions:
    """``valueFormat`` / ``keyFormat`` and what types them (spark_udfs.read.typed)."""
    formats: dict                      # {"value" | "key": format}
    registry: Optional[str]
    subjects: dict                     # {side: subject}
    versions: dict                     # {side: version text}
    reader_schemas: dict               # {side: schema text}
    messages: dict                     # {side: Protobuf message}
    strategy: str
    record_name: Optional[str]
    as_of_offset: Optional[int]
    id_format: str
    bearer_token: Optional[str]
    time_zone: str
    format_options: dict               # from_avro's / from_protobuf's options, lower-case names


@dataclasses.dataclass(frozen=True)
class ReadSpec:
    """One read's options, parsed (see the module docstring): kafkarec's reader's one
    :class:`kafkarec.scan.ScanConfig` and what is Spark's own."""
    config: ScanConfig                 # what kafkarec reads (its selection once streaming is known)
    given: frozenset                   # the option names given (lower case, Kafka names translated)
    selection: dict                    # kafkarec.log.selection's option names -> text
    view: str                          # log | latest
    cdc: Optional[str]                 # None | debezium
    columns: Columns
    limits: Limits
    typed: Optional[TypedOptions]
    streaming: Optional[bool] = None   # None until Spark asks for a batch or a stream reader
    parsed_selection: object = None    # kafkarec.log.selection.Selection, once streaming is known

    def _replanned(self, **changes) -> "ReadSpec":
        """This spec with ``changes``, its config told again whether Spark's options plan it over a
        listing (:func:`_lists`)."""
        spec = dataclasses.replace(self, **changes)
        return dataclasses.replace(spec, config=dataclasses.replace(spec.config, listing=_lists(spec)))

    def binary(self) -> "ReadSpec":
        """This read with binary keys and values: no typed options, no ``cdc`` (under a typed
        read Debezium's envelopes are typed values: spark_udfs.read.typed applies their rules)."""
        typed_names = _options.TYPED_ONLY | _format_option_names()
        return self._replanned(typed=None, cdc=None, given=frozenset(self.given - typed_names - {"cdc"}))

    def plain(self, *, streaming: bool = False) -> "ReadSpec":
        """The binary read under a typed one: headers always (header schema ids), and for a
        stream no ``mode`` (the typed layer applies it; a stream has no other per-row error)."""
        binary = self.binary()
        return dataclasses.replace(
            binary, columns=dataclasses.replace(self.columns, include_headers=True),
            config=dataclasses.replace(binary.config, mode="PERMISSIVE") if streaming else binary.config,
            given=binary.given - {"mode"} if streaming else binary.given)

    def for_batch(self, reader: str) -> "ReadSpec":
        """The spec of a batch read by ``reader`` (``"L"`` local files, ``"R"`` listed): names
        that reader does not take refused with its message, the selection parsed."""
        from kafkarec.log import selection
        stream_only = self.given & _options.STREAM_ONLY
        for k in sorted(stream_only):     # as the Kafka source logs them
            log.warning("kafkarec: %s option ignored in batch queries", k)
        self._check_names(reader, self.given - stream_only)
        parsed = selection.parse_selection(self.selection)
        # the Kafka source's selection options given: the config reads by them
        return dataclasses.replace(self, streaming=False, parsed_selection=parsed,
                                   config=dataclasses.replace(self.config, selection=parsed if self.selection else None))

    def for_stream(self) -> "ReadSpec":
        from kafkarec.log import selection
        for k in sorted(_options.BATCH_ONLY):
            if k in self.given:
                raise UsageError(f"option {k}: ending offsets and timestamps are not valid in "
                                 f"streaming queries")
        if self.view != "log":
            raise UsageError("kafkarec stream: option view=latest is for batch reads (a stream's "
                             "micro-batches are records; read the state with spark.read)")
        self._check_names("S", self.given)
        wanted = {"startingoffsets": "latest", **self.selection}
        # the config plans by no selection nor listing: a stream reads by its own offset ranges
        return dataclasses.replace(self, streaming=True, config=dataclasses.replace(self.config, listing=False),
                                   parsed_selection=selection.parse_selection(wanted, streaming=True))

    def _check_names(self, reader: str, given) -> None:
        unknown = sorted(k for k in given if reader not in _readers_of(k) and not k.startswith("spark."))
        if not unknown:
            return
        known = sorted(k for k, r in _options.READERS.items() if reader in r)
        if reader == "L":
            raise UsageError(f"kafkarec data source: unknown option(s) {unknown}; known: {known}")
        if reader == "R":
            raise UsageError(
                f"kafkarec data source: option(s) {unknown} are not used when reading URIs or with "
                f"selection options; known here: {known}"
                f" and the storage options of kafkarec.log.storage (endpoint, region, accessKey, ...)")
        raise UsageError(f"kafkarec stream: unknown option(s) {unknown}; known: the Kafka "
                         f"source's (docs/spark-options.md), {known} and the "
                         f"storage options of kafkarec.log.storage (endpoint, region, accessKey, ...)")


def _format_option_names() -> set:
    from kafkarec.avro.decoder import SPARK_OPTIONS as AVRO_OPTIONS
    from kafkarec.protobuf.options import SPARK_OPTIONS as PROTOBUF_OPTIONS
    return {name.lower() for name in AVRO_OPTIONS + PROTOBUF_OPTIONS}


def _did_you_mean(o: dict) -> None:
    """Refuse a name close to a known one (``startingOffset``) with what was meant."""
    from kafkarec.log import storage
    known = _display_names()
    for k in o:
        if k in known or k.startswith(("spark.", "kafka.")) or storage.storage_options({k: "x"}):
            continue
        close = difflib.get_close_matches(k, list(known), n=1, cutoff=0.8)
        if close:
            raise UsageError(f"kafkarec data source: unknown option {k!r}; did you mean "
                             f"{known[close[0]]!r}?")


def _typed(o: dict) -> Optional[TypedOptions]:
    formats = {}
    for side in ("key", "value"):
        fmt = text_choice(f"option {side}Format", o.get(f"{side}format"), VALUE_FORMATS,
                          template="{name}: one of {accepted}, not {value!r}")
        if fmt is not None:
            formats[side] = fmt
    if not formats:
        return None

    def sides(suffix):
        return {s: o[f"{s}{suffix}"] for s in ("key", "value") if o.get(f"{s}{suffix}") not in (None, "")}
    as_of = o.get("registryasofoffset")
    return TypedOptions(formats=formats, registry=o.get("registry") or None, subjects=sides("subject"),
                 versions=sides("schemaversion"), reader_schemas=sides("readerschema"),
                 messages=sides("message"), strategy=o.get("subjectnamestrategy") or "topic",
                 record_name=o.get("recordname") or None,
                 as_of_offset=None if as_of in (None, "") else _offset("registryAsOfOffset", as_of),
                 id_format=o.get("registryidformat") or "confluent",
                 bearer_token=o.get("registrybearertoken") or None,
                 time_zone=o.get("timezone") or "UTC",
                 format_options={k: v for k, v in o.items() if k in _format_option_names()})


def read_spec(options) -> ReadSpec:
    """The :class:`ReadSpec` of a read's options (Spark's, case-insensitive names)."""
    from kafkarec import cdc, table
    from kafkarec.log import selection, storage
    o = {k: v for k, v in _options.normalize(options).items() if v is not None}
    _did_you_mean(o)
    paths = tuple(_paths(o))
    if not paths:
        raise UsageError("kafkarec data source: no path; use spark.read.format('kafkarec').load(path)")
    max_offsets = _count(o, "maxoffsetspertrigger", "option maxOffsetsPerTrigger must be positive")
    min_offsets = _count(o, "minoffsetspertrigger", "option minOffsetsPerTrigger must be positive")
    if max_offsets is not None and min_offsets is not None and min_offsets > max_offsets:
        raise UsageError(f"The value of minOffsetPerTrigger({min_offsets}) is higher than the "
                         f"maxOffsetsPerTrigger({max_offsets}).")
    dedupe = parse_bytes(o.get("dedupebuffersize"), table.DEFAULT_BUFFER_BYTES, "dedupeBufferSize")
    if "dedupebuffersize" in o:
        from kafkarec._core import KEY_MAP_MIN_BYTES
        if dedupe < KEY_MAP_MIN_BYTES:
            raise UsageError(f"option dedupeBufferSize must be at least {KEY_MAP_MIN_BYTES} bytes, "
                             f"not {o.get('dedupebuffersize')!r}")
    view = table.parse_view(o.get("view"))
    include_control = _bool(o, "includecontrol", False)
    if view == "latest" and include_control:
        raise UsageError("kafkarec data source: includeControl=true cannot be used with view=latest "
                         "(control records are never part of a topic's keyed state)")
    max_decompressed = o.get("maxdecompressedbytes")
    selected = {k: v for k, v in o.items() if k in selection.SELECTION_OPTIONS and v != ""}
    parsed_cdc = cdc.parse_cdc(o.get("cdc"))
    read_committed = _bool(o, "readcommitted", False)
    mode = text_choice("mode", o.get("mode"), MODES, default="PERMISSIVE", upper=True)
    columns = Columns(include_headers=_bool(o, "includeheaders", False, "includeHeaders"), decode=o.get("decode") or None)
    batch_columns = _bool(o, "batchcolumns", False)
    max_rows = _count(o, "maxrecordsperbatch", "option maxRecordsPerBatch must be positive") or DEFAULT_MAX_RECORDS_PER_BATCH
    limits = Limits(
        max_partition_bytes=parse_bytes(o.get("maxpartitionbytes"), DEFAULT_MAX_PARTITION_BYTES, "maxPartitionBytes"),
        open_cost_bytes=parse_bytes(o.get("opencostinbytes"), DEFAULT_OPEN_COST_BYTES, "openCostInBytes"),
        min_partitions=_count(o, "minpartitions", "minPartitions must be positive", INT_MAX),
        dedupe_buffer_bytes=dedupe, max_offsets=max_offsets, min_offsets=min_offsets,
        max_trigger_delay_ms=parse_duration_ms(o.get("maxtriggerdelay") or "15m"))
    max_decompressed = None if max_decompressed in (None, "") else parse_bytes(max_decompressed, 0, "maxDecompressedBytes")
    files = FileFinding(glob_filter=o.get("pathglobfilter") or FileFinding.glob_filter,
                        recursive=_bool(o, "recursivefilelookup", FileFinding.recursive),
                        allow_duplicates=_bool(o, "allowduplicatepartitions", FileFinding.allow_duplicates))
    config = ScanConfig(
        paths, files=files, tiered_storage=o.get("tieredstorage") or None,
        storage_options=storage.storage_options(o), fail_on_data_loss=_bool(o, "failondataloss", True),
        # read_committed: aborted transactions and everything from the LSO on are left out
        read_committed=read_committed, mode=mode,
        corrupt_column=o.get("columnnameofcorruptrecord") or DEFAULT_CORRUPT_COLUMN,
        # badRecordsPath: batches that cannot be decoded are copied there whole (kafkarec.log.quarantine)
        bad_records_path=o.get("badrecordspath") or None, include_control=include_control,
        batch_columns=batch_columns, verify_crc=_bool(o, "verifycrc", True), strict=_bool(o, "strict", False),
        max_decompressed_bytes=max_decompressed, max_rows=max_rows,
        partitioner=text_choice("option partitioner", o.get("partitioner"), PARTITIONERS),
        # one thread: a Spark task is one Python worker on one of the executor's cores (Spark's
        # parallelism is its tasks)
        threads=1)
    spec = ReadSpec(config=config, given=frozenset(o), selection=selected, view=view, cdc=parsed_cdc,
                    columns=columns, limits=limits, typed=_typed(o))
    return dataclasses.replace(spec, config=dataclasses.replace(config, listing=_lists(spec)))


def _lists(spec: ReadSpec) -> bool:
    """Whether Spark's options plan a batch read over a listing (kafkarec.log.layout) whatever its
    paths: a selection option, one the option table marks (tiered storage ...), ``view=latest``
    (whole partitions) or ``cdc``; the config adds its own reasons (URIs, bounds pushed down:
    :attr:`kafkarec.scan.ScanConfig.listed`, the one place a read is told listed or local)."""
    return (bool(spec.selection) or bool(spec.given & _options.LISTS) or spec.view == "latest"
            or spec.cdc is not None)


def _paths(options: dict) -> list:
    """The paths of a load(): option ``path`` (one), or ``paths`` (a JSON list, as Spark passes
    ``load([a, b])``)."""
    out = []
    raw = options.get("paths")
    if raw:
        try:
            loaded = option_json("option paths", raw, '["/a", "/b"]', UsageError)
        except UsageError:      # not a JSON list: one path
            loaded = [raw]
        out += [p for p in (loaded if isinstance(loaded, list) else [loaded]) if p]
    if options.get("path"):
        out.append(options["path"])
    return out
