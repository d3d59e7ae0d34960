"""Kafka's log files.  The record format itself is the core's (:mod:`kafkarec._core`);
this layer finds files, frames them and asks the core about every batch.

* :mod:`kafkarec.log.names` -- every file- and folder-name rule (broker, tiered, KRaft);
* :mod:`kafkarec.log.directory` -- the one walk of local log directories (and of the paths
  and globs a read of local files names);
* :mod:`kafkarec.log.local` -- local files read in slices cut at batch starts, memory-mapped;
* :mod:`kafkarec.log.segment` -- a segment read as Kafka's FileRecords reads it
  (:meth:`~kafkarec.log.segment.SegmentBatchIterator.skipping`: batches and what was skipped);
* :mod:`kafkarec.log.sidefiles` -- indexes, snapshots, checkpoints, partition.metadata parsed;
* :mod:`kafkarec.log.checks` -- a partition verified (batches, records, side files) in one scan;
* :mod:`kafkarec.log.storage`, :mod:`kafkarec.log.layout`, :mod:`kafkarec.log.selection` --
  the same logs in object stores and tiered storage, and Spark-style selection.
"""
