"""The one place the census, the what-if and the search make their :class:`kafkarec.scan.LogScan`
(so a change to how a scan is constructed is one change here)."""
from __future__ import annotations

from typing import Any, Optional, Sequence

__all__ = ["base_config", "open_scan", "census_listings", "topic_partition_counts"]


def base_config(source: Any, *, bounds=None, selection=None, storage_options: Optional[dict] = None,
                tiered_storage: Optional[str] = None, verify_crc: bool = True,
                partitioner: Optional[str] = None, num_partitions: Optional[dict] = None, listing: bool = False):
    """What a census or a search reads, as the reader's one config (:class:`kafkarec.scan.ScanConfig`):
    ``source`` (a path, URI or list, as :class:`kafkarec.scan.LogScan`), ``bounds`` (topics,
    partitions, offsets, times), ``selection`` (the Kafka source's options), storage and tiered
    options, ``partitioner`` and ``num_partitions`` (a keyed read's pruning, as
    :class:`kafkarec.scan.ScanConfig`); PERMISSIVE (damaged batches become error rows, counted by
    the caller), batch columns on; ``listing``: planned over a listing even for local paths (the
    census's several scans share one: :func:`census_listings`)."""
    import dataclasses

    from kafkarec.scan import ScanConfig
    config = ScanConfig.of(source, bounds=bounds, selection=selection, storage_options=storage_options,
                           tiered_storage=tiered_storage, verify_crc=verify_crc, mode="PERMISSIVE",
                           batch_columns=True, partitioner=partitioner, num_partitions=num_partitions)
    return dataclasses.replace(config, listing=True) if listing else config


def open_scan(config, *, read_committed: bool, columns: Sequence[str], include_control: bool = False,
              bounds=None):
    """A scan of ``config`` (from :func:`base_config`) with the columns ``columns`` (and the error
    column), in ``read_committed`` or ``read_uncommitted`` terms, ``bounds`` intersected."""
    import dataclasses

    from kafkarec.scan import LogScan
    narrowed = config.narrow(bounds=bounds, columns=list(columns) + [config.corrupt_column])
    return LogScan(dataclasses.replace(narrowed, read_committed=read_committed,
                                       include_control=include_control))


def census_listings(config) -> list:
    """Each of ``config.paths`` listed once (:func:`kafkarec.scan.listings`; what it met is
    reported by each scan planned over it, as each scan's own listing was), for every scan of one
    census to plan over."""
    from kafkarec.scan import listings
    return list(listings(config))


def topic_partition_counts(config, listed=None) -> dict:
    """``{topic: partitions}`` as the read's own listing of ``config.paths`` names them
    (:func:`kafkarec.scan.listings`, the listing its pieces are planned over; the highest
    partition number found plus one; no segment byte read): the ``N`` of Kafka's default
    partitioner when the caller does not give it."""
    from kafkarec.log.layout import partition_counts
    from kafkarec.scan import listings
    return partition_counts([part for one in (listings(config) if listed is None else listed)
                             for part in one.layout.partitions])
