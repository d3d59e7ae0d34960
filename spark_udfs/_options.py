"""The options of ``format("kafkarec")`` that Spark's Kafka source has too: one table, one
translation.

A job moving from ``format("kafka")`` to ``format("kafkarec")`` keeps its options:
:func:`normalize` maps the Kafka source's names (``subscribe``, ``subscribePattern``,
``assign``, ``kafka.isolation.level`` ...) to the names kafkarec's readers use, applies the
Kafka source's rules (one subscription strategy at most, the same error texts), drops what
has no meaning without a broker (``kafka.bootstrap.servers``, ``groupIdPrefix`` ...) and
returns the rest untouched for the reader to check.  :data:`KAFKA_OPTIONS` is the table
``docs/spark-options.md`` is generated from (``python -m spark_udfs._options`` prints it;
a test keeps the two equal).
"""
from __future__ import annotations

import logging
from typing import NamedTuple

log = logging.getLogger("spark_udfs")

__all__ = ["KafkaOption", "KAFKA_OPTIONS", "normalize", "markdown_table", "STRATEGY_KEYS", "lower_keys",
           "parse_bool"]


from kafkarec._option_text import lower_keys, text_bool  # noqa: E402  (the one rule for names and booleans)


class KafkaOption(NamedTuple):
    name: str          # the Kafka source's name (case-insensitive)
    reads: str         # "batch", "stream" or "both": where kafkarec uses it
    meaning: str       # what it means for kafkarec
    difference: str    # how that differs from the Kafka source ("" if it does not)


KAFKA_OPTIONS = (
    KafkaOption("subscribe", "both", "comma-separated topic names (alias: `topics`)", ""),
    KafkaOption("subscribePattern", "both",
                "a Java-style regular expression a whole topic name must match (alias: `topicPattern`)",
                "Python's `re` syntax (the same for usual patterns)"),
    KafkaOption("assign", "both", 'JSON `{"orders":[0,1]}`: just these topic-partitions; specific '
                "starting/ending offsets then name exactly the assigned partitions", ""),
    KafkaOption("startingOffsets", "both",
                '`earliest`, `latest` (streams only) or JSON `{"orders":{"0":23,"1":-2}}` '
                "(-2 earliest, -1 latest); naming every partition of each topic it names",
                "batch default `earliest`, stream default `latest`, as the Kafka source"),
    KafkaOption("endingOffsets", "batch", "`latest` (default) or JSON (-1 latest)", ""),
    KafkaOption("startingOffsetsByTimestamp", "both",
                'JSON `{"orders":{"0":1700000000000}}`: per partition, the first offset whose '
                "record timestamp is at or after it (Kafka's offsetsForTimes, from the time indexes)",
                ""),
    KafkaOption("endingOffsetsByTimestamp", "batch", "JSON, as above; no record reaching it means `latest`", ""),
    KafkaOption("startingTimestamp", "both", "ms since the epoch, for every partition", ""),
    KafkaOption("endingTimestamp", "batch", "ms since the epoch, for every partition", ""),
    KafkaOption("startingOffsetsByTimestampStrategy", "both",
                "`error` (default) or `latest`: what a starting timestamp no record reaches means", ""),
    KafkaOption("failOnDataLoss", "both",
                "`true` (default): a stream fails when offsets it still had to read are gone "
                "(segments deleted, a partition removed or truncated); `false`: it logs that and "
                "goes on from what is there",
                "a batch read reads what the log holds and never fails for missing offsets"),
    KafkaOption("maxOffsetsPerTrigger", "stream",
                "most offsets per micro-batch, shared among partitions by lag", ""),
    KafkaOption("minOffsetsPerTrigger", "stream",
                "fewest new offsets a micro-batch waits for, up to `maxTriggerDelay`", ""),
    KafkaOption("maxTriggerDelay", "stream",
                "longest wait for `minOffsetsPerTrigger` (default `15m`; `500ms`, `30s`, `2m`, `1h`)", ""),
    KafkaOption("minPartitions", "both", "aim for at least this many Spark tasks (batch default: "
                "the cluster's default parallelism; a stream without it: one task per "
                "topic-partition)",
                "a batch read cuts segments by bytes (Spark's file-source rule); a stream cuts "
                "offset ranges as the Kafka source does"),
    KafkaOption("includeHeaders", "both",
                "`true`: add the `headers` column (`array<struct<key:string,value:binary>>`, null "
                "when a record has none); default `false`: no `headers` column", ""),
    KafkaOption("kafka.isolation.level", "both",
                "`read_committed`: leave out aborted transactions and everything from the last "
                "stable offset on (alias: `readCommitted=true`); `read_uncommitted` (default): "
                "every data record", ""),
    KafkaOption("kafka.bootstrap.servers", "ignored", "accepted and ignored: the path is the log", 
                "not required"),
    KafkaOption("kafka.* (others)", "ignored", "accepted and ignored: consumer settings without a broker", 
                "`kafka.auto.offset.reset`, `kafka.key.deserializer`, `kafka.value.deserializer`, "
                "`kafka.enable.auto.commit` and `kafka.interceptor.classes` are refused, as the Kafka source does"),
    KafkaOption("groupIdPrefix", "ignored", "accepted and ignored (no consumer group)", ""),
    KafkaOption("kafkaConsumer.pollTimeoutMs", "ignored", "accepted and ignored (no polling)", ""),
    KafkaOption("fetchOffset.numRetries", "ignored", "accepted and ignored (offsets come from the files)", ""),
    KafkaOption("fetchOffset.retryIntervalMs", "ignored", "accepted and ignored", ""),
    KafkaOption("maxRecordsPerPartition", "ignored", "accepted and ignored",
                "tasks are cut by bytes (`maxPartitionBytes`), not records"),
)

STRATEGY_KEYS = ("subscribe", "subscribepattern", "assign")
# kafkarec's earlier names, kept as aliases of the Kafka source's
_ALIASES = {"topics": "subscribe", "topicpattern": "subscribepattern"}
_IGNORED = {"groupidprefix", "kafkaconsumer.polltimeoutms", "fetchoffset.numretries",
            "fetchoffset.retryintervalms", "maxrecordsperpartition"}
_STREAM_ONLY = {"maxoffsetspertrigger", "minoffsetspertrigger", "maxtriggerdelay"}
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


def _bool_text(name, value) -> bool:
    return text_bool(name, value)


def parse_bool(options: dict, name: str, default: bool) -> bool:
    """A true/false option of the data source (lower-cased ``name``), or ``default`` when unset:
    every boolean option is read by this one rule."""
    v = options.get(name)
    if v is None or v == "":
        return default
    return _bool_text(name, v)


def normalize(options, *, streaming: bool) -> dict:
    """The options (lower-case keys) in the names kafkarec's readers use.

    ``subscribe`` -> ``topics``, ``subscribePattern`` -> ``topicpattern``, ``assign`` stays
    (:mod:`kafkarec.log.selection` reads it), ``kafka.isolation.level`` -> ``readcommitted``;
    options that mean nothing without a broker are dropped; options of the other kind of
    query are dropped with a warning (stream-only options of a batch read, as the Kafka
    source logs them) or refused (``endingOffsets`` on a stream)."""
    o = lower_keys(options)
    strategies = [k for k in o if k in STRATEGY_KEYS or k in _ALIASES]
    if len(strategies) > 1:
        raise ValueError("Only one of the following options can be specified for the kafkarec "
                         "source: subscribe, subscribepattern, assign (aliases: topics, "
                         f"topicPattern); got {sorted(strategies)}. See docs/spark-options.md.")
    out = {}
    for k, v in o.items():
        strategy = _ALIASES.get(k, k)
        if strategy == "subscribe":
            if not [t for t in str(v).split(",") if t.strip()]:
                raise ValueError(f"No topics to subscribe to as specified value for option "
                                 f"'{k}' is '{v}'")
            out["topics"] = v
        elif strategy == "subscribepattern":
            if not str(v).strip():
                raise ValueError(f"Pattern to subscribe is empty as specified value for option "
                                 f"'{k}' is '{v}'")
            out["topicpattern"] = str(v).strip()
        elif k == "assign":
            if not str(v).strip().startswith("{"):
                raise ValueError(f"No topicpartitions to assign as specified value for option "
                                 f"'assign' is '{v}'")
            out["assign"] = v
        elif k == "kafka.isolation.level":
            level = str(v).strip().lower()
            if level not in ("read_committed", "read_uncommitted"):
                raise ValueError(f"option kafka.isolation.level must be read_committed or "
                                 f"read_uncommitted, got {v!r}")
            committed = level == "read_committed"
            if "readcommitted" in o and _bool_text("readCommitted", o["readcommitted"]) != committed:
                raise ValueError(f"options kafka.isolation.level={v} and readCommitted="
                                 f"{o['readcommitted']} disagree")
            out["readcommitted"] = "true" if committed else "false"
        elif k in _REFUSED_KAFKA:
            raise ValueError(_REFUSED_KAFKA[k])
        elif k.startswith("kafka.") or k in _IGNORED:
            log.info("kafkarec: option %s ignored (no broker)", k)
        elif k in _STREAM_ONLY and not streaming:
            log.warning("kafkarec: %s option ignored in batch queries", k)
        elif k == "failondataloss" and not streaming:
            # a batch read reads what is there; stitched with tieredStorage a gap is data loss
            flag = _bool_text("failOnDataLoss", v)
            if "tieredstorage" in o:
                out[k] = "true" if flag else "false"
        elif k == "includeheaders":
            out[k] = "true" if _bool_text("includeHeaders", v) else "false"
        else:
            out.setdefault(k, v)
    if streaming:
        for k in ("endingoffsets", "endingoffsetsbytimestamp", "endingtimestamp"):
            if k in out:
                raise ValueError(f"option {k}: ending offsets and timestamps are not valid in "
                                 f"streaming queries")
    if "minpartitions" in out:
        try:
            ok = int(out["minpartitions"]) > 0
        except ValueError:
            ok = False
        if not ok:
            raise ValueError("minPartitions must be positive")
    if "minoffsetspertrigger" in out and "maxoffsetspertrigger" in out:
        lo, hi = int(out["minoffsetspertrigger"]), int(out["maxoffsetspertrigger"])
        if lo > hi:
            raise ValueError(f"The value of minOffsetPerTrigger({lo}) is higher than the "
                             f"maxOffsetsPerTrigger({hi}).")
    return out


def include_headers(options) -> bool:
    """``includeHeaders`` (default false, as the Kafka source)."""
    o = lower_keys(options)
    return _bool_text("includeHeaders", o["includeheaders"]) if "includeheaders" in o else False


def parse_duration_ms(text) -> int:
    """``maxTriggerDelay`` as the Kafka source takes it (Spark's time strings: ``15m``,
    ``500ms``, ``30s``, ``2h``, ``1d``; a bare number is ms)."""
    import re
    s = str(text).strip().lower()
    m = re.fullmatch(r"(\d+)\s*(ms|s|m|min|h|d)?", s)
    if not m:
        raise ValueError(f"option maxTriggerDelay: not a duration like 15m or 500ms: {text!r}")
    n = int(m.group(1))
    return n * {None: 1, "ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000,
                "d": 86_400_000}[m.group(2)]


def markdown_table() -> str:
    """The options table of docs/spark-options.md."""
    where = {"both": "batch, stream", "batch": "batch", "stream": "stream", "ignored": "ignored"}
    rows = ["| Kafka-source option | reads | kafkarec meaning | difference from the Kafka source |",
            "|---|---|---|---|"]
    for opt in KAFKA_OPTIONS:
        rows.append(f"| `{opt.name}` | {where[opt.reads]} | {opt.meaning} | {opt.difference or '-'} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":   # python -m spark_udfs._options > the table in docs/spark-options.md
    print(markdown_table(), end="")
