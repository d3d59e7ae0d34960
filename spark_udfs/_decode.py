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

__all__ = ["MODES", "normalize_mode", "MalformedBatchError", "decode_range", "format_error"]

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


def _framing(kafkarec, view):
    """Where batch framing of ``view`` stops: ``(position, trailing, exc)``."""
    it = kafkarec.iter_batches(view, verify_crc=False)
    b = None
    try:
        for b in it:
            pass
        return it.position, it.trailing_bytes, None
    except kafkarec.DecodeError as exc:
        return exc.position, 0, exc
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
    """
    kw = {}
    if max_decompressed_bytes is not None:
        kw["max_decompressed_bytes"] = max_decompressed_bytes
    size = len(view)
    frame_end, trailing, frame_exc = _framing(kafkarec, view)
    if mode == "FAILFAST" and frame_exc is None and trailing:
        # Fail before decoding anything (nothing is half-written yet).
        raise MalformedBatchError(
            "Malformed Kafka record batch (mode FAILFAST): "
            + format_error(_truncated(base + frame_end, trailing), where))
    sink = [] if mode != "FAILFAST" else None
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
                yield from _drain(sink, base, size, frame_end, frame_exc, where)
    except kafkarec.DecodeError as exc:
        err = {"position": base + exc.position, "reason": exc.reason, "error": type(exc).__name__,
               "base_offset": None, "message": str(exc)}
        if frame_exc is not None and exc.position == frame_end:
            err["not_decoded"] = size - frame_end
        raise MalformedBatchError("Malformed Kafka record batch (mode FAILFAST): "
                                  + format_error(err, where)) from exc
    if sink:
        yield from _drain(sink, base, size, frame_end, frame_exc, where)
    if frame_exc is None and trailing:
        err = _truncated(base + frame_end, trailing)
        err["message"] = format_error(err, where)
        yield "error", err


def _truncated(position: int, trailing: int) -> dict:
    return {"position": position, "base_offset": None, "error": "TruncatedError",
            "reason": f"{trailing} bytes at the end do not hold a complete batch (cut-off segment "
                      f"or blob?)"}


def _drain(sink, base, size, frame_end, frame_exc, where):
    errors = list(sink)
    sink.clear()
    for e in errors:
        err = dict(e)
        err["position"] = base + e["position"]
        if frame_exc is not None and e["position"] == frame_end and e["base_offset"] is None:
            err["not_decoded"] = size - frame_end
        err["message"] = format_error(err, where)
        yield "error", err


def _shift_positions(rb, base: int):
    import pyarrow as pa
    import pyarrow.compute as pc
    i = rb.schema.get_field_index("batchPosition")
    cols = list(rb.columns)
    cols[i] = pc.add(cols[i], pa.scalar(base, pa.int64()))
    return pa.RecordBatch.from_arrays(cols, schema=rb.schema)
