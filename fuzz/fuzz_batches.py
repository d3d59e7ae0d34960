"""iter_batches in default and strict mode, every header and record field read; a piece read
with ``origin`` reports the positions the whole input reports (the core adds the origin, no
caller does)."""
from _harness import EXPECTED, run

import kafkarec


def read_all(data: bytes, strict: bool) -> None:
    it = kafkarec.iter_batches(data, strict=strict)
    for b in it:
        (b.base_offset, b.last_offset, b.next_offset, b.record_count, b.crc, b.crc_valid, b.attributes,
         b.compression, b.timestamp_type, b.is_transactional, b.is_control, b.delete_horizon_ms,
         b.producer_id, b.producer_epoch, b.base_sequence, b.last_sequence, b.max_timestamp,
         b.partition_leader_epoch, bytes(b.raw()), bytes(b.payload()))
        for r in b:
            (r.offset, r.timestamp, r.timestamp_type, r.key, r.value, r.headers, r.sequence,
             r.key_size, r.value_size)
            if b.magic >= 2 and b.is_control:
                try:
                    r.control_type, r.control_value
                except EXPECTED:
                    pass
        kafkarec.scan_records(b)
    it.trailing_bytes


def _err(e, origin):
    return (type(e).__name__, e.position - origin,
            None if e.batch_position is None else e.batch_position - origin, e.decompressed_position)


def walk(data, origin: int, less=None, **kw) -> list:
    """Every position iter_batches reports, less ``less`` (default ``origin``): batches, errors
    reading their records, framing errors (resumed where the core can), where and why framing
    stopped."""
    out = []
    it = kafkarec.iter_batches(data, origin=origin, **kw)
    origin = origin if less is None else less
    while True:
        try:
            for b in it:
                try:
                    out.append((b.position - origin, b.size_in_bytes, [r.offset for r in b]))
                except EXPECTED as e:
                    out.append((b.position - origin, b.size_in_bytes, _err(e, origin)))
        except EXPECTED as e:
            out.append(("stop", _err(e, origin), it.position - origin))
            if it.resumable:
                it.resume()
                continue
        break
    out.append((it.position - origin, it.stop_reason, it.trailing_bytes))
    return out


ORIGIN = 1 << 40


def spans_by_next(data: bytes, strict: bool) -> list:
    """``(position, size)`` of the batches next() yields, up to where it stops or raises or to a
    batch of magic outside 0..2: what BatchIterator.spans() (the planner's one-loop walk) must give."""
    out = []
    try:
        for b in kafkarec.iter_batches(data, strict=strict):
            if not 0 <= b.magic <= 2:
                break
            out.append((b.position, b.size_in_bytes))
    except EXPECTED:
        pass
    return out


def spans_in_steps(data: bytes, strict: bool) -> list:
    """spans() taken ``until`` one position after another, a few batches at a time (the planner's
    walk of a large file, kafkarec.log.local._walked_cuts): on while a step stopped for its
    ``until``, right after the last batch it gave; none of a step's batches starts at its ``until``
    or later."""
    it = kafkarec.iter_batches(data, strict=strict)
    step = 1 + len(data) // 5
    out, until = [], step
    while True:
        at = it.position
        got = it.spans(until)
        if any(pos >= until for pos, _ in got):
            raise AssertionError(f"spans({until}) gave a batch at or past it: {got!r:.200}")
        out += got
        if it.exhausted or it.position != (got[-1][0] + got[-1][1] if got else at) or it.position < until:
            return out
        until += step


def test_one_input(data: bytes) -> None:
    for strict in (False, True):
        try:
            read_all(data, strict)
        except EXPECTED:
            pass
    for strict in (False, True):
        spans = kafkarec.iter_batches(data, strict=strict).spans()
        if spans != spans_by_next(data, strict):
            raise AssertionError(f"spans() {spans!r:.200} differs from next()'s batches (strict={strict})")
        if spans_in_steps(data, strict) != spans:
            raise AssertionError(f"spans(until) in steps differs from spans() (strict={strict})")
        whole = walk(data, 0, strict=strict)
        if walk(data, ORIGIN, strict=strict) != whole:
            raise AssertionError(f"origin={ORIGIN} does not shift every position: {whole!r:.300}")
        # a piece from the second batch on, read with its origin, against the whole from there
        if len(whole) > 1 and whole[0][0] != "stop" and whole[0][0] + whole[0][1] < len(data):
            k = whole[0][0] + whole[0][1]
            if walk(data[k:], k, 0, strict=strict) != walk(data, 0, strict=strict, start=k):
                raise AssertionError(f"data[{k}:] with origin={k} differs from data from start={k}")


if __name__ == "__main__":
    run(test_one_input)
