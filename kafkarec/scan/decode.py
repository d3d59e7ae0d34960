"""Decoding byte ranges into Arrow batches, with Spark's parse modes (the reader's, :mod:`kafkarec.scan`).

Modes (as Spark's file sources):

* ``PERMISSIVE`` - a batch that cannot be decoded is left out whole and
  reported (an error row / an error string); the other batches are kept.
* ``DROPMALFORMED`` - such a batch is left out; it is only logged.
* ``FAILFAST`` - the first one raises :class:`kafkarec.errors.MalformedBatchError`.

Bytes that cannot be framed into batches are reported too: after a framing
error the rest of the range (its size is given), and a cut-off batch at the
end (which kafkarec, like Kafka's fetch path, otherwise ends on quietly).
"""
from __future__ import annotations

from typing import NamedTuple

from kafkarec.errors import DecodeError, MalformedBatchError
from kafkarec.scan.config import MODES, ROWS_PER_BATCH, normalize_mode

__all__ = ["MODES", "normalize_mode", "decode_range", "format_error", "Errors"]


class Errors(NamedTuple):
    """Batches of one piece that could not be decoded (:func:`decode_range`'s error dicts): an item
    of :meth:`kafkarec.scan.LogScan.read_items` beside its Arrow batches (PERMISSIVE makes error
    rows of them, DROPMALFORMED logs them)."""
    errors: list
    topic: object
    partition: object


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


def decode_range(view, options=None, *, base: int = 0, topic=None, partition=None,
                 include_control=False, batch_columns=False, max_rows=ROWS_PER_BATCH, max_bytes=64 << 20,
                 mode="PERMISSIVE", where="", quarantine=None, columns=None, core_errors=False,
                 keys=None, timestamp_unit="ms", value_layout="copy", spare=None):
    """Decode the batches in ``view`` (a buffer; byte 0 of it is byte ``base`` of
    its file/blob, the core's ``origin``) with ``options`` (a :class:`kafkarec.ReadOptions`),
    yielding ``("batch", pyarrow.RecordBatch)`` and, except in FAILFAST (which raises),
    ``("error", dict)`` with ``position``, ``base_offset``, ``error``, ``reason``,
    ``message``.  Positions, ``batchPosition`` (with ``batch_columns``) too, are the
    core's: file/blob positions.

    Errors of whole batches are yielded as they come; what ends framing (bytes
    that cannot be framed, a cut-off batch) once decoding is done, from the
    decoding iterator's own report of where and why framing stopped.

    ``quarantine`` (a :class:`kafkarec.log.quarantine.Quarantine`, option badRecordsPath):
    each batch that cannot be decoded, and the bytes from where framing stopped, are
    copied there byte for byte with their position and reason (a cut-off batch at the
    end, which a growing segment has, is only reported).

    ``columns``: the columns of the batches (:func:`kafkarec.iter_arrow`'s projection; None: all);
    ``keys``: only the records with one of these keys (:func:`kafkarec.iter_arrow`'s; None: all);
    ``timestamp_unit``: :func:`kafkarec.iter_arrow`'s (the core writes the unit);
    ``value_layout``: :func:`kafkarec.iter_arrow`'s ("view": the batches hold ``view``);
    ``spare``: :func:`kafkarec.iter_arrow`'s (a :class:`kafkarec._core.SpareBuffers`, or None).
    ``core_errors`` (FAILFAST): the core's :class:`kafkarec.DecodeError` is raised as it is, and
    a cut-off batch at the end ends the range quietly (:class:`kafkarec.scan.ScanConfig`).
    """
    from kafkarec._core import error_record, iter_arrow
    end = base + len(view)      # where the view ends in its file/blob

    def keep(position, size, reason):
        if quarantine is None or not size:
            return
        if topic is None or partition is None:
            raise ValueError("badRecordsPath keeps undecodable batches by topic-partition: "
                             f"{where or 'this read'} has none")
        quarantine.add_undecodable(topic, int(partition), position,
                                   bytes(view[position - base:position - base + size]),
                                   reason=reason, source=where or None)
    sink = [] if mode != "FAILFAST" else None
    held = []   # errors without a batch (framing): reported with the framing stop
    chunks = iter_arrow(
        view, options, topic=topic, partition=partition, include_control=include_control,
        batch_columns=batch_columns, max_rows=max_rows, max_bytes=max_bytes,
        errors="skip" if sink is not None else "raise", error_sink=sink, origin=base, columns=columns,
        keys=keys, timestamp_unit=timestamp_unit, value_layout=value_layout, spare=spare)
    try:
        for rb in chunks:
            if rb.num_rows:
                yield "batch", rb
            if sink:
                yield from _drain(sink, held, where, keep)
    except DecodeError as exc:
        if core_errors:
            chunks = None
            raise
        err = error_record(exc)
        if chunks.stop_error is exc:            # framing itself stopped here
            err["not_decoded"] = end - chunks.position
        chunks = None       # let go of the buffer export: the caller releases its view
        raise MalformedBatchError("Malformed Kafka record batch (mode FAILFAST): "
                                  + format_error(err, where)) from exc
    if sink:
        yield from _drain(sink, held, where, keep)
    framing_failed = chunks.stop_reason == "error"
    position, trailing, stop_reason = chunks.position, chunks.trailing_bytes, chunks.stop_reason
    truncated = stop_reason == "truncated" and chunks.stop_error is None   # (strict: reported above)
    chunks = None           # let go of the buffer export: the caller releases its view
    for e in held:
        err = dict(e)
        if framing_failed and e["position"] == position:
            err["not_decoded"] = end - position
        err["message"] = format_error(err, where)
        if err.get("not_decoded"):
            keep(position, err["not_decoded"], err["message"])
        yield "error", err
    if truncated and not (core_errors and mode == "FAILFAST"):
        err = _truncated(position, trailing)
        err["message"] = format_error(err, where)
        if mode == "FAILFAST":
            raise MalformedBatchError("Malformed Kafka record batch (mode FAILFAST): "
                                      + err["message"])
        yield "error", err


def _truncated(position: int, trailing: int) -> dict:
    return {"position": position, "base_offset": None, "error": "TruncatedError",
            "reason": f"{trailing} bytes at the end do not hold a complete batch (cut-off segment "
                      f"or blob?)"}


def _drain(sink, held, where, keep):
    errors = list(sink)
    sink.clear()
    for e in errors:
        if e["batch_position"] is None:     # framing: reported with the framing stop
            held.append(e)
            continue
        err = dict(e)
        err["message"] = format_error(err, where)
        keep(err["batch_position"], err.get("batch_size"), err["message"])
        yield "error", err
