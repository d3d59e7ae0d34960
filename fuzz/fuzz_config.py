"""A read's options as users give them: the Spark data source's option maps
(spark_udfs.read.spec.read_spec, the one parser of ``format("kafkarec")``'s options, then the batch
split that parses the Kafka source's selection) and :meth:`kafkarec.scan.ScanConfig.of`'s keywords
(with :class:`kafkarec.scan.Bounds`), on values built from fuzzed shapes: whole numbers at and past
the ends of a long and an int, ``inf``, ``nan``, fractions, exponents, bools, text, lists, dicts.
Oracles: only kafkarec's errors come out (a UsageError, a SelectionError), never an
OverflowError or TypeError (finding 50 of issue 78); a config that is made holds typed values in
their ranges (rows, bytes and offsets in a long, partitions in an int, bools as bools) and is made
again the same by ``dataclasses.replace``; a byte size Spark writes (digits and a unit) is read to
exactly its bytes."""
import dataclasses
import logging
import re

import atheris

from _harness import EXPECTED, run

with atheris.instrument_imports(include=["spark_udfs"]):
    from spark_udfs.read.spec import parse_bytes, read_spec  # noqa: E402

from kafkarec.scan import Bounds, ScanConfig  # noqa: E402

LONG_MAX, INT_MAX = (1 << 63) - 1, (1 << 31) - 1
logging.getLogger("spark_udfs").setLevel(logging.ERROR)      # "option ignored in batch queries", each run
#: the options whose values are numbers, sizes or durations, and some whose values are names
NUMBERS = ("maxRecordsPerBatch", "maxDecompressedBytes", "maxPartitionBytes", "openCostInBytes",
           "dedupeBufferSize", "minPartitions", "maxOffsetsPerTrigger", "minOffsetsPerTrigger",
           "maxTriggerDelay", "registryAsOfOffset")
NAMES = ("mode", "verifyCrc", "strict", "partitioner", "view", "includeControl", "batchColumns",
         "readCommitted", "recursiveFileLookup", "pathGlobFilter", "startingOffsets", "endingOffsets",
         "subscribe", "assign", "startingTimestamp", "valueFormat")
EDGES = ("inf", "-inf", "nan", "NaN", "Infinity", "1e30", "1e3", "1.5", "0.5k", "-1", "0", "+7", "007",
         str(LONG_MAX), str(LONG_MAX + 1), str(INT_MAX), str(INT_MAX + 1), "8191p", "8192p", "1_000",
         "9" * 30, "15m", "500ms", "true", "FALSE", "murmur2", "latest", "earliest", " 4 k ", "1 g", "",
         '{"t":{"0":1e400}}', '{"t":[0.5]}')
KEYWORDS = ("columns", "topics", "partitions", "limit", "max_rows_per_batch", "threads", "verify_crc",
            "batch_columns", "include_control", "fail_on_data_loss", "num_partitions", "partitioner",
            "mode", "isolation_level", "tiered_storage", "bad_records_path", "storage_options",
            "include_deleted_records", "selection", "typed_options", "value_format", "bounds", "files")
_SPARK_SIZE = re.compile(r"([0-9]{1,25})([kmgtp]?)")


def text(fdp) -> str:
    k = fdp.ConsumeIntInRange(0, 3)
    if k == 0:
        return EDGES[fdp.ConsumeIntInRange(0, len(EDGES) - 1)]
    if k == 1:
        return str(fdp.ConsumeIntInRange(-(1 << 64), 1 << 64))
    if k == 2:
        return "".join("0123456789.-+eEkmgtpbi nafINms"[b % 30] for b in fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 12)))
    return fdp.ConsumeUnicodeNoSurrogates(fdp.ConsumeIntInRange(0, 12))


def value(fdp, depth: int = 0):
    k = fdp.ConsumeIntInRange(0, 11 if depth < 2 else 7)
    if k == 0:
        return None
    if k == 1:
        return fdp.ConsumeBool()
    if k == 2:
        return fdp.ConsumeIntInRange(-3, 70)
    if k == 3:
        return [-(1 << 63) - 1, -(1 << 63), -1, 0, INT_MAX, INT_MAX + 1, LONG_MAX, LONG_MAX + 1, 1 << 80][
            fdp.ConsumeIntInRange(0, 8)]
    if k == 4:
        return [float("inf"), float("-inf"), float("nan"), 1.5, 0.0, 5.0, -0.0, 1e300][fdp.ConsumeIntInRange(0, 7)]
    if k == 5:
        return fdp.ConsumeInt(fdp.ConsumeIntInRange(1, 12))
    if k in (6, 7):
        return text(fdp)
    if k == 8:
        return [value(fdp, depth + 1) for _ in range(fdp.ConsumeIntInRange(0, 3))]
    if k == 9:
        return tuple(value(fdp, depth + 1) for _ in range(fdp.ConsumeIntInRange(0, 3)))
    if k == 10:
        return {text(fdp) if fdp.ConsumeBool() else fdp.ConsumeIntInRange(-1, 9): value(fdp, depth + 1)
                for _ in range(fdp.ConsumeIntInRange(0, 2))}
    return fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 4))


def check_config(config: ScanConfig) -> None:
    """What a made config holds: typed values in their ranges, made again the same."""
    assert all(type(p) is str for p in config.paths), config.paths
    assert config.columns is None or all(type(c) is str for c in config.columns), config.columns
    assert config.limit is None or (type(config.limit) is int and 0 <= config.limit <= LONG_MAX), config.limit
    assert config.max_rows is None or (type(config.max_rows) is int and 1 <= config.max_rows <= LONG_MAX)
    assert config.max_decompressed_bytes is None or 0 <= config.max_decompressed_bytes <= LONG_MAX
    assert type(config.threads) is int and 1 <= config.threads <= 256
    for name in ("verify_crc", "batch_columns", "include_control", "fail_on_data_loss", "read_committed"):
        assert type(getattr(config, name)) is bool, (name, getattr(config, name))
    b = config.bounds
    assert b.topics is None or all(type(t) is str for t in b.topics), b.topics
    assert b.partitions is None or all(0 <= lo < hi <= INT_MAX + 1 for lo, hi in b.partitions.spans)
    for pair in (b.offsets, b.timestamps):
        assert all(x is None or (type(x) is int and -(1 << 63) <= x <= LONG_MAX) for x in pair), pair
    for n in (config.num_partitions or {}).values():
        assert type(n) is int and 1 <= n <= INT_MAX
    assert dataclasses.replace(config) == config


def spark_options(fdp) -> None:
    options = {"path": "/logs"}
    for _ in range(fdp.ConsumeIntInRange(1, 4)):
        pool = NUMBERS if fdp.ConsumeIntInRange(0, 3) else NAMES
        name = pool[fdp.ConsumeIntInRange(0, len(pool) - 1)]
        options[name] = text(fdp) if fdp.ConsumeIntInRange(0, 7) else value(fdp)
    if "registryAsOfOffset" in options:
        options["valueFormat"] = "avro"
    try:
        spec = read_spec(options)
        check_config(spec.config)
        limits = spec.limits
        for n in (limits.max_partition_bytes, limits.open_cost_bytes, limits.dedupe_buffer_bytes,
                  limits.max_trigger_delay_ms):
            assert type(n) is int and 0 <= n <= LONG_MAX, limits
        for n in (limits.min_partitions, limits.max_offsets, limits.min_offsets):
            assert n is None or (type(n) is int and 1 <= n <= LONG_MAX), limits
        assert limits.min_partitions is None or limits.min_partitions <= INT_MAX
        spec.for_batch("R" if spec.config.listed else "L")
    except EXPECTED:
        pass


def size_text(fdp) -> None:
    """parse_bytes on a size as Spark writes it: exactly its bytes, or refused past a long."""
    s = text(fdp)
    try:
        n = parse_bytes(s, None, "maxPartitionBytes")       # None: unset ("")
    except EXPECTED:
        n = None
    m = _SPARK_SIZE.fullmatch(s.strip().lower())
    if m is not None:
        want = int(m.group(1)) * 1024 ** ("kmgtp".index(m.group(2)) + 1 if m.group(2) else 0)
        assert n == (want if 1 <= want <= LONG_MAX else None), (s, n, want)
    assert n is None or (type(n) is int and 1 <= n <= LONG_MAX), (s, n)


def scan_keywords(fdp) -> None:
    keywords = {}
    for _ in range(fdp.ConsumeIntInRange(1, 4)):
        keywords[KEYWORDS[fdp.ConsumeIntInRange(0, len(KEYWORDS) - 1)]] = value(fdp)
    if fdp.ConsumeBool():               # bounds made from fuzzed pairs too
        pair = (value(fdp), value(fdp))
        try:
            keywords["bounds"] = Bounds.of(offsets=pair) if fdp.ConsumeBool() else Bounds(timestamps=pair)
        except EXPECTED:
            return
    try:
        config = ScanConfig.of("/logs", **keywords)
    except EXPECTED:
        return
    check_config(config)


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    kind = fdp.ConsumeIntInRange(0, 2)
    if kind == 0:
        spark_options(fdp)
    elif kind == 1:
        size_text(fdp)
    else:
        scan_keywords(fdp)


if __name__ == "__main__":
    run(test_one_input)
