"""The options of ``format("kafkarec")`` that Spark's Kafka source has too: one table, one
translation.

A job moving from ``format("kafka")`` to ``format("kafkarec")`` keeps its options:
:func:`normalize` maps the Kafka source's names (``subscribe``, ``subscribePattern``,
``assign``, ``kafka.isolation.level`` ...) to the names kafkarec's readers use, applies the
Kafka source's rules (one subscription strategy at most, the same error texts), drops what
has no meaning without a broker (``kafka.bootstrap.servers``, ``groupIdPrefix`` ...) and
returns the rest untouched for :func:`spark_udfs.read.spec.read_spec` to parse.  :data:`KAFKA_OPTIONS` is the table
``docs/spark-options.md`` is generated from (``python -m spark_udfs.read.options`` prints it;
a test keeps the two equal).
"""
from __future__ import annotations

import logging
from typing import NamedTuple

log = logging.getLogger("spark_udfs")

__all__ = ["KafkaOption", "KAFKA_OPTIONS", "IGNORED", "normalize", "markdown_table"]


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

_STRATEGIES = ("subscribe", "subscribepattern", "assign")
# kafkarec's earlier names, kept as aliases of the Kafka source's
_ALIASES = {"topics": "subscribe", "topicpattern": "subscribepattern"}
IGNORED = frozenset(("groupidprefix", "kafkaconsumer.polltimeoutms", "fetchoffset.numretries",
                     "fetchoffset.retryintervalms", "maxrecordsperpartition"))
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
            if "readcommitted" in o and text_bool("readCommitted", o["readcommitted"]) != committed:
                raise ValueError(f"options kafka.isolation.level={v} and readCommitted="
                                 f"{o['readcommitted']} disagree")
            out["readcommitted"] = "true" if committed else "false"
        elif k in _REFUSED_KAFKA:
            raise ValueError(_REFUSED_KAFKA[k])
        elif k.startswith("kafka.") or k in IGNORED:
            log.info("kafkarec: option %s ignored (no broker)", k)
        else:
            out.setdefault(k, v)
    return out


def markdown_table() -> str:
    """The options table of docs/spark-options.md."""
    where = {"both": "batch, stream", "batch": "batch", "stream": "stream", "ignored": "ignored"}
    rows = ["| Kafka-source option | reads | kafkarec meaning | difference from the Kafka source |",
            "|---|---|---|---|"]
    for opt in KAFKA_OPTIONS:
        rows.append(f"| `{opt.name}` | {where[opt.reads]} | {opt.meaning} | {opt.difference or '-'} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":   # python -m spark_udfs.read.options > the table in docs/spark-options.md
    print(markdown_table(), end="")
