"""The one place the census, the what-if and the search make their :class:`kafkarec.scan.LogScan`
(so a change to how a scan is constructed is one change here)."""
from __future__ import annotations

from typing import Any, NamedTuple, Optional, Sequence

__all__ = ["ReadSettings", "open_scan", "topic_partition_counts"]


class ReadSettings(NamedTuple):
    """What a census or a search reads: ``source`` (a path, URI or list, as :class:`LogScan`),
    ``bounds`` (:class:`kafkarec.scan.Bounds`: topics, partitions, offsets, times),
    ``selection`` (the Kafka source's options, :mod:`kafkarec.log.selection`),
    ``storage_options``, ``tiered_storage``, ``verify_crc``."""
    source: Any
    bounds: Any = None
    selection: Any = None
    storage_options: Optional[dict] = None
    tiered_storage: Optional[str] = None
    verify_crc: bool = True


def open_scan(settings: ReadSettings, *, read_committed: bool, columns: Sequence[str],
              include_control: bool = False, bounds=None):
    """A PERMISSIVE scan (damaged batches become error rows, counted by the caller) of the
    batch columns ``columns``; ``bounds`` intersected with the settings'."""
    from kafkarec.scan import LogScan
    b = bounds if settings.bounds is None else settings.bounds.intersect(bounds)
    return LogScan(settings.source, columns=list(columns) + ["_corrupt_record"], bounds=b,
                   isolation_level="read_committed" if read_committed else "read_uncommitted",
                   storage_options=settings.storage_options, tiered_storage=settings.tiered_storage,
                   selection=settings.selection, mode="PERMISSIVE", batch_columns=True,
                   include_control=include_control, verify_crc=settings.verify_crc)


def topic_partition_counts(settings: ReadSettings) -> dict:
    """``{topic: partitions}`` as the listing of ``settings.source`` names them (the highest
    partition number found plus one; no segment byte read): the ``N`` of Kafka's default
    partitioner when the caller does not give it."""
    from kafkarec.log import layout
    from kafkarec.log.storage import open_storage
    out: dict = {}
    sources = settings.source if isinstance(settings.source, (list, tuple)) else [settings.source]
    for src in sources:
        storage, root = open_storage(str(src), settings.storage_options)
        for part in layout.scan(storage, root).partitions:
            if part.topic is not None and part.partition is not None:
                out[part.topic] = max(out.get(part.topic, 0), part.partition + 1)
    return out
