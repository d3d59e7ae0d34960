"""The offset-order rule of a read: offsets only grow in a partition, and a segment holds only its
own offsets (:class:`OffsetOrder`, applied by :class:`kafkarec.scan._read.Read` to each piece's
decoded rows in log order)."""
from __future__ import annotations

import collections
import sys
from typing import NamedTuple, Optional

from kafkarec._extras import require
from kafkarec.errors import DecodeError, MalformedBatchError, OffsetOrderError

__all__ = ["OffsetOrder", "Seen"]

# Batch headers and records' offsets only, to find the batches whose offsets go back.
_FRAMING_FIELDS = dict(file_rules=True, verify_crc=False)


class Seen(NamedTuple):
    """What the rule needs of one decoded Arrow batch (:meth:`OffsetOrder.seen`): found where the
    batch was decoded, on a pool thread, so that the consumer's thread does no per-row work."""
    rows: int                   # the rows the rule judges (its data rows)
    first: Optional[int]        # their first offset, and their last (None: no rows)
    last: Optional[int]
    rising: bool                # their offsets strictly increase
    top: Optional[int]          # the largest offset of all the batch's rows, control rows included


def _int64_at(data, i: int) -> int:
    """The ``i``-th native int64 of a buffer."""
    return int.from_bytes(memoryview(data)[i * 8:i * 8 + 8], sys.byteorder, signed=True)


class OffsetOrder:
    """Offsets only grow in a partition (Kafka's log recovery and ``kafkarec verify`` refuse a
    batch that goes back), and a segment holds only its own offsets; a batch's base offset is
    outside its CRC, so a damaged one still reads as a valid batch.  Kept per log while a read
    goes through its pieces in log order: the last offset read (before any bound is applied,
    so that every read of the same bytes judges a batch alike).

    Checked on the decoded rows (one vectorized comparison per Arrow batch); only when a row
    breaks the rule is its piece framed batch by batch to find the batches that do, which
    are reported (FAILFAST: :class:`kafkarec.errors.OffsetOrderError`; otherwise an error
    per batch, ``OffsetOrderError``) and left out: the piece is decoded again without them."""

    def __init__(self, options, control_rows_judged: bool, mode: str):
        self.options = options
        # a control batch takes no part in the rule (the consumer skips it, and the timestamp
        # lookup passes over it), unless its rows cannot be told apart from the data rows (a
        # read of control rows without their isControl column)
        self.control_rows_judged = control_rows_judged
        self.failfast = mode == "FAILFAST"
        self.last: dict = {}        # log -> the last offset read

    def seen(self, item) -> Seen:
        """:class:`Seen` of an Arrow batch: one vectorized pass over its offsets (thread-safe: a
        pool's threads call it on the batches they decode, :class:`kafkarec.scan._read.Read`)."""
        pc = require("pyarrow.compute")
        off = self._data_offsets(pc, item)
        n = len(off)
        if n == 0:
            return Seen(0, None, None, True, _top(pc, item))
        # over the column's data buffer (the core's offset column has no nulls), in one pass of the
        # core's, no array made (numpy's comparison made one of its answers: 2% of issue 80's
        # query; Array.to_numpy imports pandas, ~0.5 CPU-s in each of Spark's Python workers)
        from kafkarec._core import offsets_rise
        data = off.buffers()[1]
        first, last = _int64_at(data, off.offset), _int64_at(data, off.offset + n - 1)
        rising = offsets_rise(data, off.offset, n)
        # the data rows' offsets rising, the last is the largest unless control rows were set aside
        top = last if rising and len(off) == item.num_rows else _top(pc, item)
        return Seen(n, first, last, rising, top)

    def check(self, items, piece, held, log_key, where, topic, partition, redecode):
        """``items`` (``decode_range``'s, of ``piece``) with the batches breaking the rule left
        out and reported; ``redecode(piece)`` decodes a part of the piece again.  A batch item may
        come with its :class:`Seen` (``("batch", batch, seen)``: found on the thread that decoded
        it); without, it is found here."""
        pc = require("pyarrow.compute")
        start_last = self.last.get(log_key)     # what the piece's first batch must follow
        yielded = set()     # error positions already handed on
        done = None         # the largest offset handed on from this piece
        try:
            for kind, item, *found in items:
                if kind != "batch":
                    yielded.add((item.get("position"), item.get("error")))
                    yield kind, item
                    continue
                seen = found[0] if found else self.seen(item)
                if self._fits(seen, held, self.last.get(log_key)):
                    self._advance(pc, seen, item, held, log_key)
                    if seen.top is not None:    # rows handed on, whatever the rule judges of them
                        done = seen.top if done is None else max(done, seen.top)
                    yield kind, item
                    continue
                items.close()
                yield from self._slow(piece, held, log_key, where, topic, partition, redecode, start_last,
                                      done, yielded)
                return
        except (DecodeError, MalformedBatchError) as exc:
            # FAILFAST: decoding raised at a byte past a batch whose offsets go back, whose rows it
            # held in a chunk not yet handed on: the earlier batch fails the read, as it does when
            # its chunk is handed on first (a smaller window)
            at = exc.position if isinstance(exc, DecodeError) else getattr(exc.__cause__, "position", None)
            if self.failfast and at is not None and not isinstance(exc, OffsetOrderError):
                _bad, errors = self._violations(piece, held, where, topic, partition, start_last)
                earlier = [e for e in errors if e["position"] < at]
                if earlier:
                    raise OffsetOrderError("Malformed Kafka record batch (mode FAILFAST): "
                                           + earlier[0]["message"]) from None
            raise

    def _data_offsets(self, pc, item):
        """The offsets of ``item``'s rows the rule judges: its data rows'."""
        off = item.column("offset")
        i = item.schema.get_field_index("isControl")
        if i < 0 or self.control_rows_judged:
            return off
        control = item.column(i)
        return off if not pc.any(control).as_py() else pc.filter(off, pc.invert(control))

    @staticmethod
    def _fits(seen: Seen, held, last) -> bool:
        if seen.rows == 0:
            return True
        if last is not None and seen.first <= last:
            return False
        if not seen.rising:
            return False
        return held is None or held.problem(seen.first, seen.last) is None

    def _advance(self, pc, seen: Seen, item, held, log_key):
        if seen.rows:
            last = seen.last
            # offsets an overlapping copy's next segment holds are left to it
            if held is not None and held.end is not None and last >= held.end:
                off = self._data_offsets(pc, item)
                kept = pc.filter(off, pc.less(off, held.end))
                last = kept[len(kept) - 1].as_py() if len(kept) else None
            if last is not None:
                self.last[log_key] = last
        return self.last.get(log_key)

    def _slow(self, piece, held, log_key, where, topic, partition, redecode, start_last, done, yielded):
        """The piece framed batch by batch from its start: the batches breaking the rule
        reported, the rest decoded again (rows up to ``done`` were handed on already)."""
        from kafkarec.log.selection import filter_rows
        from kafkarec.log.storage import without_spans
        pc = require("pyarrow.compute")
        bad, errors = self._violations(piece, held, where, topic, partition, start_last)
        if not bad:     # rows broke the rule where no whole batch does: refuse rather than guess
            raise OffsetOrderError(f"Malformed Kafka record batch: {where}: offsets go back in "
                                   f"{topic}-{partition} from byte {piece.position}")
        pending = collections.deque(errors)        # in log order, each before the rows after it
        for part in without_spans(piece, sorted(bad)):
            if self.failfast and part.position >= errors[0]["position"]:
                break
            while pending and pending[0]["position"] < part.position:
                yield "error", pending.popleft()
            for kind, item in redecode(part):
                if kind != "batch":
                    if (item.get("position"), item.get("error")) not in yielded:
                        yield kind, item
                    continue
                off = item.column("offset")
                if done is not None:
                    item = filter_rows(item, pc.greater(off, done))
                if item.num_rows:
                    self._advance(pc, self.seen(item), item, held, log_key)
                    yield kind, item
        if self.failfast:
            # the rows of the batches before the first one breaking the rule are handed on first
            # (above), as the core hands on the rows before a batch that fails to decode: the same
            # rows before the error wherever the read's windows and chunks end
            raise OffsetOrderError("Malformed Kafka record batch (mode FAILFAST): " + errors[0]["message"])
        while pending:
            yield "error", pending.popleft()

    def _violations(self, piece, held, where, topic, partition, start_last):
        """``(spans, errors)`` of the piece's batches breaking the rule, framed batch by batch
        from its start after ``start_last`` (up to where framing stops: decode_range reports that)."""
        from kafkarec.log.segment import order_problem
        from kafkarec.log.storage import BatchWalk
        from kafkarec._core import ReadOptions
        from kafkarec.scan.decode import format_error
        verify = self.options is None or self.options.verify_crc
        bad, errors = [], []
        running = start_last
        try:
            for b in BatchWalk([piece], ReadOptions(**_FRAMING_FIELDS)):
                if (b.is_control and not self.control_rows_judged) or (verify and not b.crc_valid):
                    continue            # no rows of it (a bad CRC is decode_range's to report)
                try:
                    offs = [r.offset for r in b]
                except DecodeError:
                    continue            # decode_range's to report
                if not offs:
                    continue
                why = order_problem(offs, running, held)
                if why is None:
                    mine = [o for o in offs if held is None or held.end is None or o < held.end]
                    if mine:
                        running = mine[-1]
                    continue
                size = b.size_in_bytes
                bad.append((b.position, size))
                reason = (f"{topic}-{partition}: the batch at byte {b.position} (offsets "
                          f"{b.base_offset}..{b.last_offset}): {why}")
                errors.append({"position": b.position, "base_offset": b.base_offset,
                               "error": "OffsetOrderError", "reason": reason,
                               "batch_position": b.position, "batch_size": size})
        except DecodeError:
            pass                        # framing stops here: decode_range reports it
        for e in errors:
            e["message"] = format_error(e, where)
        return bad, errors


def _top(pc, item) -> Optional[int]:
    """The largest offset of an Arrow batch's rows (None: no rows)."""
    return pc.max(item.column("offset")).as_py() if item.num_rows else None
