"""The options of ``format("kafkarec")``: one table of every name it knows, and the Kafka
source's names translated.

:data:`OPTIONS` holds each name once - the Kafka source's, kafkarec's own (the typed ones too)
and Spark's generic reader options - with who reads it (``readers``: ``L`` local files read by
memory maps, ``R`` a listed layout - URIs, selection, ``view=latest``, ``cdc``, tiered storage -,
``S`` a stream, ``T`` typed reads only); every list of names the readers, the planner and the
backfill use is derived from it.

A job moving from ``format("kafka")`` to ``format("kafkarec")`` keeps its options:
:func:`normalize` maps the Kafka source's names (``subscribe``, ``subscribePattern``,
``assign``, ``kafka.isolation.level`` ...) to the names kafkarec's readers use, applies the
Kafka source's rules (one subscription strategy at most, the same error texts), drops what
has no meaning without a broker (``kafka.bootstrap.servers``, ``groupIdPrefix`` ...) and
returns the rest untouched for :func:`spark_udfs.read.spec.read_spec` to parse.
``docs/spark-options.md``'s two tables are :func:`markdown_table`'s (``python -m
spark_udfs.read.options kafka`` and ``... kafkarec`` print them; tests keep them equal).
"""
from __future__ import annotations

import logging
from typing import NamedTuple

from kafkarec._option_text import lower_keys, text_bool  # the one rule for names and booleans
from kafkarec.errors import UsageError

log = logging.getLogger("spark_udfs")

__all__ = ["Option", "OPTIONS", "KAFKA_OPTIONS", "OWN_OPTIONS", "READERS", "IGNORED", "BATCH_ONLY",
           "STREAM_ONLY", "TYPED_ONLY", "LOCAL_ONLY", "LISTS", "BACKFILL_SETS", "normalize", "markdown_table"]


class Option(NamedTuple):
    """One name ``format("kafkarec")`` knows (see :data:`OPTIONS`)."""
    name: str            # as documented (case-insensitive)
    readers: str         # who reads it: L local files, R a listed layout, S a stream, T typed reads;
                         # "" no reader (the Kafka source's: accepted and ignored; Spark's: refused)
    meaning: str = ""
    kind: str = "text"   # what it accepts: bool | bytes | count | offset | choice | text
    default: str = "(none)"
    table: str = "kafkarec"  # the table of docs/spark-options.md that documents it: "kafka" (the
                             # Kafka source's names), "kafkarec" (kafkarec's own), "" (Spark's generic)
    difference: str = ""     # "kafka" rows: how kafkarec's meaning differs from the Kafka source's
    reads_as: str = ""       # the name the readers take it under (normalize: subscribe -> topics)
    lists: bool = False      # given, a batch read is planned over a listed layout (kafkarec.log.layout)
    backfill_sets: bool = False  # the backfill sets it from its hand-off points and its contract

    @property
    def key(self) -> str:
        """The lower-case name the readers look it up by."""
        return (self.reads_as or self.name).lower()


def _kafka(name, readers, meaning, difference="", **kw) -> Option:
    return Option(name, readers, meaning, table="kafka", difference=difference, **kw)


def _own(name, kind, default, readers, meaning, **kw) -> Option:
    return Option(name, readers, meaning, kind=kind, default=default, **kw)


# Every option name, once: the Kafka source's (its docs table), kafkarec's own (the second docs
# table) and Spark's generic reader options.  Every list of names below and in
# spark_udfs.read.spec, .pushdown and spark_udfs.lakehouse is derived from it.
OPTIONS = (
    _kafka("subscribe", "RS", "comma-separated topic names (alias: `topics`)", reads_as="topics",
           backfill_sets=True),
    _kafka("subscribePattern", "RS",
           "a Java-style regular expression a whole topic name must match (alias: `topicPattern`)",
           "Python's `re` syntax (the same for usual patterns)", reads_as="topicPattern", backfill_sets=True),
    _kafka("assign", "RS", 'JSON `{"orders":[0,1]}`: just these topic-partitions; specific '
           "starting/ending offsets then name exactly the assigned partitions", backfill_sets=True),
    _kafka("startingOffsets", "RS",
           '`earliest`, `latest` (streams only) or JSON `{"orders":{"0":23,"1":-2}}` '
           "(-2 earliest, -1 latest); naming every partition of each topic it names",
           "batch default `earliest`, stream default `latest`, as the Kafka source", backfill_sets=True),
    _kafka("endingOffsets", "R", "`latest` (default) or JSON (-1 latest)", backfill_sets=True),
    _kafka("startingOffsetsByTimestamp", "RS",
           'JSON `{"orders":{"0":1700000000000}}`: per partition, the first offset whose '
           "record timestamp is at or after it (Kafka's offsetsForTimes, from the time indexes)",
           backfill_sets=True),
    _kafka("endingOffsetsByTimestamp", "R", "JSON, as above; no record reaching it means `latest`",
           backfill_sets=True),
    _kafka("startingTimestamp", "RS", "ms since the epoch, for every partition", backfill_sets=True),
    _kafka("endingTimestamp", "R", "ms since the epoch, for every partition", backfill_sets=True),
    _kafka("startingOffsetsByTimestampStrategy", "RS",
           "`error` (default) or `latest`: what a starting timestamp no record reaches means",
           backfill_sets=True),
    _kafka("failOnDataLoss", "LRS",
           "`true` (default): a stream fails when offsets it still had to read are gone "
           "(segments deleted, a partition removed or truncated); `false`: it logs that and "
           "goes on from what is there",
           "a batch read reads what the log holds and never fails for missing offsets"),
    _kafka("maxOffsetsPerTrigger", "S", "most offsets per micro-batch, shared among partitions by lag"),
    _kafka("minOffsetsPerTrigger", "S", "fewest new offsets a micro-batch waits for, up to `maxTriggerDelay`"),
    _kafka("maxTriggerDelay", "S",
           "longest wait for `minOffsetsPerTrigger` (default `15m`; `500ms`, `30s`, `2m`, `1h`)"),
    _kafka("minPartitions", "LRS", "aim for at least this many Spark tasks (batch default: "
           "the cluster's default parallelism; a stream without it: one task per "
           "topic-partition)",
           "a batch read cuts segments by bytes (Spark's file-source rule); a stream cuts "
           "offset ranges as the Kafka source does"),
    _kafka("includeHeaders", "LRS",
           "`true`: add the `headers` column (`array<struct<key:string,value:binary>>`, null "
           "when a record has none); default `false`: no `headers` column", backfill_sets=True),
    _kafka("kafka.isolation.level", "LRS",
           "`read_committed`: leave out aborted transactions and everything from the last "
           "stable offset on (alias: `readCommitted=true`); `read_uncommitted` (default): "
           "every data record", reads_as="readCommitted", backfill_sets=True),
    _kafka("kafka.bootstrap.servers", "", "accepted and ignored: the path is the log", "not required"),
    _kafka("kafka.* (others)", "", "accepted and ignored: consumer settings without a broker",
           "`kafka.auto.offset.reset`, `kafka.key.deserializer`, `kafka.value.deserializer`, "
           "`kafka.enable.auto.commit` and `kafka.interceptor.classes` are refused, as the Kafka source does"),
    _kafka("groupIdPrefix", "", "accepted and ignored (no consumer group)"),
    _kafka("kafkaConsumer.pollTimeoutMs", "", "accepted and ignored (no polling)"),
    _kafka("fetchOffset.numRetries", "", "accepted and ignored (offsets come from the files)"),
    _kafka("fetchOffset.retryIntervalMs", "", "accepted and ignored"),
    _kafka("maxRecordsPerPartition", "", "accepted and ignored",
           "tasks are cut by bytes (`maxPartitionBytes`), not records"),

    _own("mode", "choice", "PERMISSIVE", "LR", "PERMISSIVE / DROPMALFORMED / FAILFAST: what a batch that "
         "cannot be decoded does (an error row / left out / the query fails)", backfill_sets=True),
    _own("columnNameOfCorruptRecord", "text", "_corrupt_record", "LRS", "PERMISSIVE's error column"),
    _own("batchColumns", "bool", "false", "LRS", "add producerId ... magic, batchSize, deleteHorizonMs (batch-level columns)",
         backfill_sets=True),
    _own("includeControl", "bool", "false", "LRS", "keep control records (transaction markers)",
         backfill_sets=True),
    _own("readCommitted", "bool", "false", "LRS", "what a read_committed consumer sees (alias of "
         "`kafka.isolation.level=read_committed`)", backfill_sets=True),
    _own("maxPartitionBytes", "bytes", "128m", "LR", "most bytes per task (files are cut at batches)"),
    _own("openCostInBytes", "bytes", "4m", "LR", "cost of a file when packing small files in a task"),
    _own("pathGlobFilter", "text", "*.log", "L", "which files are segments"),
    # (the default is kafkarec.scan.FileFinding's, where it is explained)
    _own("recursiveFileLookup", "bool", "true", "L", "descend into sub-folders"),
    _own("allowDuplicatePartitions", "bool", "false", "L", "allow one topic-partition in several folders"),
    _own("verifyCrc", "bool", "true", "LRS", "check batch CRCs"),
    _own("strict", "bool", "false", "LRS", "reject what Kafka's Java reader lets through"),
    _own("maxDecompressedBytes", "bytes", "64m", "LRS", "most bytes one compressed batch may inflate to"),
    _own("maxRecordsPerBatch", "count", "16384", "LRS", "rows per Arrow batch handed to Spark"),
    _own("decode", "text", "(none)", "L", "an internal topic's typed columns (`consumer_offsets` ...)",
         backfill_sets=True),
    _own("badRecordsPath", "text", "(none)", "LRS", "copy each batch that cannot be decoded there, byte "
         "for byte (typed reads: failed records too)"),
    _own("view", "choice", "log", "LRS", "`log`: every record; `latest`: each topic-partition's keyed state",
         backfill_sets=True),
    _own("cdc", "choice", "(none)", "RS", "`debezium`: values are Debezium change events", backfill_sets=True),
    _own("dedupeBufferSize", "bytes", "128m", "R", "view=latest: the key map's size per task"),
    _own("partitioner", "choice", "(none)", "LR", "`murmur2`: a pushed key filter (`key = x`, `key IN (...)`) "
         "opens only the partitions Kafka's default partitioner names for those keys (right only if "
         "every producer used it: `kafkarec census` tells)"),
    _own("tieredStorage", "text", "(none)", "R", "a tiered-storage root stitched with the log dirs",
         lists=True),
    _own("tieredStorageConfig", "text", "(none)", "RS", "the tiered-storage plugin's properties", lists=True),
    _own("remoteLogMetadata", "text", "(none)", "RS", "a log dir holding `__remote_log_metadata`"),
    _own("includeDeletedRecords", "bool", "false", "RS", "also the records below each partition's log "
         "start offset (`deleteRecords` leaves them in the files): read from its first segment",
         backfill_sets=True),
    _own("valueFormat", "choice", "(binary)", "T", "registry / avro / protobuf / json: typed values"),
    _own("keyFormat", "choice", "(binary)", "T", "registry / avro / protobuf / json: typed keys"),
    _own("registry", "text", "(none)", "T", "a log dir holding _schemas-0, a schema folder or a URL"),
    _own("valueSubject", "text", "<topic>-value", "T", "the values' subject"),
    _own("keySubject", "text", "<topic>-key", "T", "the keys' subject"),
    _own("subjectNameStrategy", "text", "topic", "T", "topic / record / topic_record"),
    _own("recordName", "text", "(none)", "T", "the record's full name (record strategies)"),
    _own("valueSchemaVersion", "text", "latest", "T", "the values' reader version"),
    _own("keySchemaVersion", "text", "latest", "T", "the keys' reader version"),
    _own("valueReaderSchema", "text", "(none)", "T", "the values' reader schema text"),
    _own("keyReaderSchema", "text", "(none)", "T", "the keys' reader schema text"),
    _own("valueMessage", "text", "(none)", "T", "the Protobuf message typing the values"),
    _own("keyMessage", "text", "(none)", "T", "the Protobuf message typing the keys"),
    _own("registryAsOfOffset", "offset", "(none)", "T", "_schemas only: the registry once that offset "
         "was applied"),
    _own("registryIdFormat", "text", "confluent", "T", "confluent / apicurio (8-byte ids)"),
    _own("registryBearerToken", "text", "(none)", "T", "a registry URL's bearer token"),
    _own("timeZone", "text", "UTC", "T", "the session time zone of typed timestamps"),

    # Spark's generic reader options: known names; a reader that does not use one refuses it by name
    Option("path", "LRS", table="", backfill_sets=True),
    Option("paths", "LRS", table="", backfill_sets=True),
    *(Option(name, "", table="") for name in ("modifiedBefore", "modifiedAfter", "ignoreCorruptFiles",
                                              "ignoreMissingFiles", "basePath")),
)

# derived from OPTIONS
KAFKA_OPTIONS = tuple(o for o in OPTIONS if o.table == "kafka")
OWN_OPTIONS = tuple(o for o in OPTIONS if o.table == "kafkarec")
# {lower-case name: readers} of every name some reader takes (the Kafka source's under their
# translated names; a name in two rows, as readCommitted, has one set of readers in both)
READERS = {o.key: o.readers for o in OPTIONS if o.readers and " " not in o.name}
# the Kafka source's names besides kafka.* that mean nothing without a broker: dropped
IGNORED = frozenset(o.name.lower() for o in KAFKA_OPTIONS if not o.readers and not o.name.startswith("kafka."))
# kafkarec's earlier names, kept as aliases of the Kafka source's
_ALIASES = {o.reads_as.lower(): o.name.lower() for o in KAFKA_OPTIONS
            if o.reads_as and not o.name.startswith("kafka.")}
# the Kafka source's names a stream does not take: its ending offsets and timestamps
BATCH_ONLY = frozenset(o.key for o in KAFKA_OPTIONS if o.readers == "R")
STREAM_ONLY = frozenset(o.key for o in OPTIONS if o.readers == "S")
TYPED_ONLY = frozenset(o.key for o in OPTIONS if o.readers == "T")
# names only the local reader takes: a read giving one is not planned over a listing
LOCAL_ONLY = frozenset(k for k, r in READERS.items() if "L" in r and "R" not in r)
LISTS = frozenset(o.key for o in OPTIONS if o.lists)
# as a caller may give them (the Kafka source's names and the names the readers take)
BACKFILL_SETS = frozenset(n for o in OPTIONS if o.backfill_sets for n in (o.name.lower(), o.key))


# the Kafka source's subscription strategies: one at most
_STRATEGIES = ("subscribe", "subscribepattern", "assign")
_REFUSED_KAFKA = {
    "kafka.auto.offset.reset": "Kafka option 'auto.offset.reset' is not supported. Instead set "
                               "the source option 'startingOffsets' to 'earliest' or 'latest'",
    "kafka.key.deserializer": "Kafka option 'key.deserializer' is not supported as keys are "
                              "binary; use DataFrame operations to deserialize the keys",
    "kafka.value.deserializer": "Kafka option 'value.deserializer' is not supported as values "
                                "are binary; use DataFrame operations to deserialize the values",
    "kafka.enable.auto.commit": "Kafka option 'enable.auto.commit' is not supported",
    "kafka.interceptor.classes": "Kafka option 'interceptor.classes' is not supported",
}


def normalize(options) -> dict:
    """The options (lower-case keys) in the names kafkarec's readers use.

    ``subscribe`` -> ``topics``, ``subscribePattern`` -> ``topicpattern``, ``assign`` stays
    (:mod:`kafkarec.log.selection` reads it), ``kafka.isolation.level`` -> ``readcommitted``;
    options that mean nothing without a broker are dropped.  What depends on the kind of
    query (stream-only options in a batch read, ending offsets in a stream) is
    :mod:`spark_udfs.read.spec`'s."""
    o = lower_keys(options)
    strategies = [k for k in o if k in _STRATEGIES or k in _ALIASES]
    if len(strategies) > 1:
        raise UsageError("Only one of the following options can be specified for the kafkarec "
                         "source: subscribe, subscribepattern, assign (aliases: topics, "
                         f"topicPattern); got {sorted(strategies)}. See docs/spark-options.md.")
    out = {}
    for k, v in o.items():
        strategy = _ALIASES.get(k, k)
        if strategy == "subscribe":
            if not [t for t in str(v).split(",") if t.strip()]:
                raise UsageError(f"No topics to subscribe to as specified value for option "
                                 f"'{k}' is '{v}'")
            out["topics"] = v
        elif strategy == "subscribepattern":
            if not str(v).strip():
                raise UsageError(f"Pattern to subscribe is empty as specified value for option "
                                 f"'{k}' is '{v}'")
            out["topicpattern"] = str(v).strip()
        elif k == "assign":
            if not str(v).strip().startswith("{"):
                raise UsageError(f"No topicpartitions to assign as specified value for option "
                                 f"'assign' is '{v}'")
            out["assign"] = v
        elif k == "kafka.isolation.level":
            level = str(v).strip().lower()
            if level not in ("read_committed", "read_uncommitted"):
                raise UsageError(f"option kafka.isolation.level must be read_committed or "
                                 f"read_uncommitted, got {v!r}")
            committed = level == "read_committed"
            if "readcommitted" in o and text_bool("readCommitted", o["readcommitted"]) != committed:
                raise UsageError(f"options kafka.isolation.level={v} and readCommitted="
                                 f"{o['readcommitted']} disagree")
            out["readcommitted"] = "true" if committed else "false"
        elif k in _REFUSED_KAFKA:
            raise UsageError(_REFUSED_KAFKA[k])
        elif k.startswith("kafka.") or k in IGNORED:
            log.info("kafkarec: option %s ignored (no broker)", k)
        else:
            out.setdefault(k, v)
    return out


def markdown_table(table: str = "kafka") -> str:
    """A table of docs/spark-options.md: ``"kafka"`` the Kafka source's names, ``"kafkarec"``
    kafkarec's own options."""
    if table == "kafka":
        rows = ["| Kafka-source option | reads | kafkarec meaning | difference from the Kafka source |",
                "|---|---|---|---|"]
        for opt in KAFKA_OPTIONS:
            rows.append(f"| `{opt.name}` | {_batch_or_stream(opt.readers)} | {opt.meaning} "
                        f"| {opt.difference or '-'} |")
        return "\n".join(rows) + "\n"
    where = {"L": "local", "R": "listed", "S": "stream", "T": "typed"}
    accepts = {"bool": "`true` / `false`", "bytes": "a size: `4k`, `128m`, `1g`, bytes",
               "count": "a positive whole number", "offset": "an offset", "text": "text",
               "choice": "a name the meaning lists (any case)"}
    rows = ["| option | accepts | default | reads | meaning |", "|---|---|---|---|---|"]
    for opt in OWN_OPTIONS:
        reads = ", ".join(where[c] for c in opt.readers)
        rows.append(f"| `{opt.name}` | {accepts[opt.kind]} | {opt.default} | {reads} | {opt.meaning} |")
    return "\n".join(rows) + "\n"


def _batch_or_stream(readers: str) -> str:
    """The Kafka source's words for who reads a name: batch queries (L, R), streams (S)."""
    kinds = (["batch"] if set(readers) & set("LR") else []) + (["stream"] if "S" in readers else [])
    return ", ".join(kinds) or "ignored"


if __name__ == "__main__":   # python -m spark_udfs.read.options [kafka|kafkarec] > a table in docs/spark-options.md
    import sys
    print(markdown_table(*sys.argv[1:2]), end="")
