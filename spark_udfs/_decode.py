"""Decoding byte ranges into Arrow batches, with Spark's parse modes.  No pyspark here.

Modes (as Spark's file sources):

* ``PERMISSIVE`` - a batch that cannot be decoded is left out whole and
  reported (an error row / an error string); the other batches are kept.
* ``DROPMALFORMED`` - such a batch is left out; it is only logged.
* ``FAILFAST`` - the first one raises :class:`MalformedBatchError`.

Bytes that cannot be framed into batches are reported too: after a framing
error the rest of the range (its size is given), and a cut-off batch at the
end (which kafkarec, like Kafka's fetch path, otherwise ends on quietly).
"""
from __future__ import annotations

import logging

__all__ = ["MODES", "normalize_mode", "MalformedBatchError", "decode_range", "format_error",
           "framing_stop", "FramingStop"]

MODES = ("PERMISSIVE", "DROPMALFORMED", "FAILFAST")
log = logging.getLogger("spark_udfs")


class MalformedBatchError(ValueError):
    """A Kafka record batch that cannot be decoded, in mode FAILFAST."""


def normalize_mode(mode, *, allowed=MODES) -> str:
    m = (mode or "PERMISSIVE").strip().upper()
    if m not in allowed:
        raise ValueError(f"mode must be one of {', '.join(allowed)}, not {mode!r}")
    return m


def format_error(err: dict, where: str = "") -> str:
    """``<where>: byte 123 (batch base offset 45): ChecksumError: <reason>``."""
    text = f"byte {err['position']}"
    if err.get("base_offset") is not None:
        text += f" (batch base offset {err['base_offset']})"
    text += f": {err['error']}: {err['reason']}"
    if err.get("not_decoded"):
        end = err["position"] + err["not_decoded"]
        text += (f" [the {err['not_decoded']} bytes from byte {err['position']} to byte {end} "
                 f"could not be framed into batches and were not decoded]")
    return f"{where}: {text}" if where else text


class FramingStop:
    """Where framing of a buffer stopped and why: ``valid_bytes`` (the end of the
    last whole batch), ``trailing_bytes`` (a cut-off batch after it, which Kafka's
    readers end on quietly) and ``error`` (the DecodeError that stopped framing:
    the rest of the buffer cannot be framed), as kafkarec's own iterators will
    report them (``valid_bytes``, ``trailing_bytes``, ``stop_reason``)."""

    __slots__ = ("valid_bytes", "trailing_bytes", "error")

    def __init__(self, valid_bytes, trailing_bytes, error):
        self.valid_bytes, self.trailing_bytes, self.error = valid_bytes, trailing_bytes, error


def framing_stop(kafkarec, view) -> FramingStop:
    """Where framing of ``view`` stops (batch headers only, no CRC or record).
    The one place spark_udfs asks this: it moves onto the decoding iterator's
    own report once kafkarec's iterators give it."""
    it = kafkarec.iter_batches(view, verify_crc=False)
    b = None
    try:
        for b in it:
            pass
        return FramingStop(it.position, it.trailing_bytes, None)
    except kafkarec.DecodeError as exc:
        return FramingStop(exc.position, 0, exc)
    finally:
        del b, it


def decode_range(kafkarec, view, *, base: int = 0, topic=None, partition=None,
                 include_control=False, batch_columns=False, verify_crc=True, strict=False,
                 max_decompressed_bytes=None, max_rows=65536, max_bytes=64 << 20,
                 mode="PERMISSIVE", where=""):
    """Decode the batches in ``view`` (a buffer; byte 0 of it is byte ``base`` of
    its file/blob), yielding ``("batch", pyarrow.RecordBatch)`` and, except in
    FAILFAST (which raises), ``("error", dict)`` with ``position`` (relative to
    the file/blob), ``base_offset``, ``error``, ``reason``, ``message``.

    ``batchPosition`` (with ``batch_columns``) is relative to the file/blob too.
    Errors of whole batches are yielded as they come; what ends framing (bytes
    that cannot be framed, a cut-off batch) once decoding is done.
    """
    kw = {}
    if max_decompressed_bytes is not None:
        kw["max_decompressed_bytes"] = max_decompressed_bytes
    size = len(view)
    sink = [] if mode != "FAILFAST" else None
    held = []   # errors without a batch (framing): reported with the framing stop
    try:
        for rb in kafkarec.iter_arrow(
                view, topic=topic, partition=partition, include_control=include_control,
                batch_columns=batch_columns, verify_crc=verify_crc, strict=strict,
                max_rows=max_rows, max_bytes=max_bytes,
                errors="skip" if sink is not None else "raise", error_sink=sink, **kw):
            if rb.num_rows:
                if batch_columns and base:
                    rb = _shift_positions(rb, base)
                yield "batch", rb
            if sink:
                yield from _drain(sink, held, base, where)
    except kafkarec.DecodeError as exc:
        err = {"position": base + exc.position, "reason": exc.reason, "error": type(exc).__name__,
               "base_offset": None, "message": str(exc)}
        stop = framing_stop(kafkarec, view)
        if stop.error is not None and exc.position == stop.valid_bytes:
            err["not_decoded"] = size - stop.valid_bytes
        raise MalformedBatchError("Malformed Kafka record batch (mode FAILFAST): "
                                  + format_error(err, where)) from exc
    if sink:
        yield from _drain(sink, held, base, where)
    stop = framing_stop(kafkarec, view)
    for e in held:
        err = dict(e)
        if stop.error is not None and e["position"] == stop.valid_bytes:
            err["not_decoded"] = size - stop.valid_bytes
        err["position"] = base + e["position"]
        err["message"] = format_error(err, where)
        yield "error", err
    if stop.error is None and stop.trailing_bytes:
        err = _truncated(base + stop.valid_bytes, stop.trailing_bytes)
        err["message"] = format_error(err, where)
        if mode == "FAILFAST":
            raise MalformedBatchError("Malformed Kafka record batch (mode FAILFAST): "
                                      + err["message"])
        yield "error", err


def _truncated(position: int, trailing: int) -> dict:
    return {"position": position, "base_offset": None, "error": "TruncatedError",
            "reason": f"{trailing} bytes at the end do not hold a complete batch (cut-off segment "
                      f"or blob?)"}


def _drain(sink, held, base, where):
    errors = list(sink)
    sink.clear()
    for e in errors:
        if e["base_offset"] is None:
            held.append(e)
            continue
        err = dict(e)
        err["position"] = base + e["position"]
        err["message"] = format_error(err, where)
        yield "error", err


def _shift_positions(rb, base: int):
    import pyarrow as pa
    import pyarrow.compute as pc
    i = rb.schema.get_field_index("batchPosition")
    cols = list(rb.columns)
    cols[i] = pc.add(cols[i], pa.scalar(base, pa.int64()))
    return pa.RecordBatch.from_arrays(cols, schema=rb.schema)
