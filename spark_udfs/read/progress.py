"""The Kafka source's lag figures for a kafkarec stream, from a query's progress.

Spark's Kafka source publishes ``minOffsetsBehindLatest``, ``maxOffsetsBehindLatest`` and
``avgOffsetsBehindLatest`` in ``StreamingQueryProgress.sources[].metrics`` (SPARK-34854)
through the JVM interface ``ReportsSourceMetrics``.  A Python data source has no such
hook in PySpark 4.3: ``DataSourceStreamReader`` offers ``reportLatestOffset`` (the
source's ``latestOffset`` in the progress) but nothing that fills ``metrics``, and the
streaming source runner (``pyspark/sql/streaming/python_streaming_source_runner.py``)
has no call for it.  The kafkarec stream reports the log's end per partition as
``latestOffset``; its ``endOffset`` is what the micro-batch read up to, so the figures
are the difference, per partition, as the Kafka source computes them.

No pyspark here: it reads a progress (an object, a dict or its JSON).
"""
from __future__ import annotations

import json
from typing import Dict, Optional

__all__ = ["offsets_behind_latest"]


def _as_dict(progress) -> dict:
    if progress is None:
        return {}
    if isinstance(progress, (str, bytes)):
        return json.loads(progress)
    if isinstance(progress, dict):
        return progress
    text = getattr(progress, "json", None)     # StreamingQueryProgress (classic and Connect)
    if isinstance(text, str):
        return json.loads(text)
    raise TypeError(f"not a streaming query progress: {type(progress).__name__}")


def _offsets(value) -> Dict[str, Dict[str, int]]:
    if value in (None, "", "null"):
        return {}
    if isinstance(value, str):
        value = json.loads(value)
    if not isinstance(value, dict):
        return {}
    out: Dict[str, Dict[str, int]] = {}
    for topic, parts in value.items():
        if isinstance(parts, dict):
            out[str(topic)] = {str(p): int(o) for p, o in parts.items()}
    return out


def offsets_behind_latest(progress, source: int = 0) -> Optional[dict]:
    """The Kafka source's lag figures for source ``source`` of a progress
    (``query.lastProgress``, an item of ``query.recentProgress``, a dict or its JSON):

    ``{"minOffsetsBehindLatest": int, "maxOffsetsBehindLatest": int,
    "avgOffsetsBehindLatest": float, "offsetsBehindLatest": {topic: {partition: n}}}``

    where ``n`` is the log's end (the progress's ``latestOffset``) minus the next offset
    the query reads (its ``endOffset``) for every partition the micro-batch read up to.
    None when the progress has no such source, or no ``latestOffset`` / ``endOffset``
    (no micro-batch yet)."""
    d = _as_dict(progress)
    sources = d.get("sources") or []
    if not 0 <= source < len(sources):
        return None
    s = sources[source]
    latest, end = _offsets(s.get("latestOffset")), _offsets(s.get("endOffset"))
    behind: Dict[str, Dict[str, int]] = {}
    for topic, parts in end.items():
        for p, consumed in parts.items():
            if p in latest.get(topic, {}):
                behind.setdefault(topic, {})[p] = max(0, latest[topic][p] - consumed)
    values = [n for parts in behind.values() for n in parts.values()]
    if not values:
        return None
    return {"minOffsetsBehindLatest": min(values), "maxOffsetsBehindLatest": max(values),
            "avgOffsetsBehindLatest": sum(values) / len(values), "offsetsBehindLatest": behind}
