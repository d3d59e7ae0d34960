"""Backfill a topic's history into the lakehouse table a live writer continues, and hand off.

* :func:`hand_off_points` - per partition, [log start, H): H is the last stable offset at the
  chosen end, where the live writer resumes (:mod:`kafkarec.lakehouse.handoff`);
* :func:`backfill` - the committed data records of [start, H) written into a Delta or Iceberg
  table in one commit, re-runnable (:mod:`kafkarec.lakehouse.backfill`);
* :func:`layout`, :func:`to_layout` - the rows of each live writer (the Iceberg Kafka Connect sink,
  kafka-delta-ingest, Redpanda, AutoMQ; :mod:`kafkarec.lakehouse.layouts`);
* :mod:`kafkarec.lakehouse.tables` - table IO: :class:`DeltaTarget`, :class:`IcebergTarget`,
  ``read_positions``.

Needs ``pip install 'kafkarec[lakehouse]'`` (pyarrow, pyiceberg, deltalake).
"""
from kafkarec.lakehouse.backfill import PartitionSummary, backfill, backfill_batches
from kafkarec.lakehouse.handoff import HandOff, hand_off_points
from kafkarec.lakehouse.layouts import LAYOUTS, Layout, layout, positions, to_layout
from kafkarec.lakehouse.tables import DeltaTarget, IcebergTarget, read_positions

__all__ = ["HandOff", "hand_off_points", "backfill", "backfill_batches", "PartitionSummary", "LAYOUTS",
           "Layout", "layout", "to_layout", "positions", "DeltaTarget", "IcebergTarget", "read_positions"]
