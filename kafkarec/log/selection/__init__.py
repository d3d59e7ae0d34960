"""Selecting records by topic, offset and time, with the options of Spark's Kafka source, and
planning the segment ranges that hold them (no reader of its own: :mod:`kafkarec.scan` reads them).

* :mod:`~kafkarec.log.selection.options` -- the selection's typed spec (:class:`Selection`,
  :class:`OffsetSpec`) parsed from the Kafka source's options or the command line's flags;
* :mod:`~kafkarec.log.selection.resolver` -- offsets for specs through the side files, checked
  against the log (:class:`Resolver`: log start, log end, offsetsForTimes);
* :mod:`~kafkarec.log.selection.planning` -- segment ranges of a selection over a layout
  (:func:`plan`), cut for tasks (:func:`split_ranges`), and one range's pieces to decode
  (:func:`iter_range_pieces`);
* :mod:`~kafkarec.log.selection.filters` -- Arrow filters on an offset or timestamp range.

What other rooms use is named here; the rest stays in its module.
"""
from kafkarec.log.selection.filters import filter_offsets, filter_range, filter_rows
from kafkarec.log.selection.options import (SELECTION_OPTIONS, OffsetSpec, Selection, SelectionError, cli_selection,
                                            json_offsets, parse_selection, parse_time)
from kafkarec.log.selection.planning import (SegmentRange, iter_range_pieces, partition_start, plan, select_partitions,
                                             spec_offset, split_ranges)
from kafkarec.log.selection.resolver import Resolver, log_start_offset

__all__ = ["Selection", "OffsetSpec", "SelectionError", "SELECTION_OPTIONS", "parse_selection", "parse_time",
           "cli_selection", "Resolver", "log_start_offset", "SegmentRange", "plan", "select_partitions",
           "partition_start", "split_ranges", "iter_range_pieces", "filter_offsets", "filter_range", "filter_rows",
           # the stream's offsets JSON and its start offset, read as the options are (spark_udfs/read/streaming.py)
           "json_offsets", "spec_offset"]
