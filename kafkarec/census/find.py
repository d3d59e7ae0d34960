"""``find``: the records of a log that match a key, a value's bytes or pattern, a header.

Reads through the one reader (:func:`kafkarec.census._scan.open_scan`) within its bounds
(topics, partitions, offsets through the ``.index``, times through the ``.timeindex``, the key:
compared by the core before any value is built); the other tests run on each Arrow batch
(pyarrow compute: substring, regular expression), headers on the rows left.
``partitioner="murmur2"`` with a key reads only the partition Kafka's default partitioner names
for it (``murmur2(key) & 0x7fffffff % partitions``): right
only if every producer of the topic used that partitioner (``kafkarec census`` tells).  A
damaged batch is a row ``{"topic", "partition", "error"}``, never skipped silently.
"""
from __future__ import annotations

import base64
from typing import Dict, Iterator, Optional, Sequence, Tuple

from kafkarec._extras import require
from kafkarec.census._scan import base_config, open_scan
from kafkarec.dlq import dead_letter
from kafkarec.scan.config import PARTITIONERS

__all__ = ["find", "PARTITIONERS", "render_bytes"]
_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", "headers")


def render_bytes(data: Optional[bytes]) -> Tuple[Optional[str], Optional[str]]:
    """``(text, encoding)``: the bytes as UTF-8 text where they are UTF-8, else base64."""
    if data is None:
        return None, None
    try:
        return data.decode("utf-8"), "utf8"
    except UnicodeDecodeError:
        return base64.b64encode(data).decode("ascii"), "base64"


def find(source, *, topics: Optional[Sequence[str]] = None, key: Optional[bytes] = None,
         value_contains: Optional[bytes] = None, value_regex: Optional[str] = None,
         headers: Optional[Dict[str, Optional[bytes]]] = None,
         header_contains: Optional[Dict[str, bytes]] = None, header_regex: Optional[Dict[str, str]] = None,
         header_names: Optional[Sequence[str]] = None, bounds=None, selection=None,
         partitioner: Optional[str] = None, num_partitions: Optional[dict] = None,
         read_committed: bool = False, storage_options: Optional[dict] = None,
         tiered_storage: Optional[str] = None) -> Iterator[dict]:
    """The matching records of ``source`` as dicts: ``topic``, ``partition``, ``offset``,
    ``timestamp`` (ms), ``key``, ``value`` (bytes), ``headers`` (``[(key, value)]``), and on a
    share group's dead letter (KIP-1191) ``dead_letter``: its provenance headers as named fields
    (:class:`kafkarec.dlq.DeadLetter` as a dict); every test given must hold.  ``headers``: ``{name: value}``, a record matches if one of its
    headers of that name has that value (None: a null value); ``header_contains``: ``{name:
    bytes}``, one of its headers of that name holds those bytes; ``header_regex``: ``{name:
    pattern}``, one of its headers of that name matches; ``header_names``: it has a header of
    each name, whatever its value.  ``value_regex`` and ``header_regex``: RE2 patterns
    (pyarrow's) over the bytes, searched anywhere in them (``^``/``$`` anchor).  ``partitioner``: ``"murmur2"`` with ``key`` (see the module doc);
    ``num_partitions``: ``{topic: N}`` (default: as many as the listing holds)."""
    from kafkarec.errors import UsageError
    from kafkarec.scan import Bounds
    if partitioner is not None and key is None:
        raise UsageError("partitioner: a key lookup only (give key)")
    tests = _header_tests(headers, header_contains, header_regex, header_names)
    for pattern in [value_regex, *(header_regex or {}).values()]:
        if pattern is not None:
            _check_regex(pattern)
    # the scan is made here, not on the first row: a usage error or a missing extra is raised by
    # the call, before a caller has written anything.  The key is the reader's bound: compared by
    # the core before a record is built, and with the partitioner other partitions never opened
    config = base_config(source, bounds=bounds, selection=selection, storage_options=storage_options,
                         tiered_storage=tiered_storage, partitioner=partitioner, num_partitions=num_partitions)
    scan = open_scan(config, read_committed=read_committed, columns=_COLUMNS,
                     bounds=Bounds.of(topics=topics, keys=None if key is None else [key]))
    return _matches(scan, value_contains, value_regex, tests)


def _header_tests(headers, header_contains, header_regex, header_names) -> list:
    """Every header test as ``(name, kind, operand)``: kind ``equals``, ``contains``, ``regex``
    or ``present``."""
    from kafkarec.errors import UsageError
    tests = [(name, "equals", value) for name, value in (headers or {}).items()]
    tests += [(name, "contains", needle) for name, needle in (header_contains or {}).items()]
    tests += [(name, "regex", pattern) for name, pattern in (header_regex or {}).items()]
    tests += [(name, "present", None) for name in (header_names or ())]
    for name, kind, operand in tests:
        if not isinstance(name, str):
            raise UsageError(f"header name {name!r}: a str (Kafka's header keys are strings)")
        if kind == "contains" and not isinstance(operand, (bytes, bytearray)):
            raise UsageError(f"header_contains[{name!r}]: bytes, not {type(operand).__name__}")
    return tests


def _check_regex(pattern: str) -> None:
    pa = require("pyarrow")
    pc = require("pyarrow.compute")
    from kafkarec.errors import UsageError
    try:
        pc.match_substring_regex(pa.array([b""], pa.binary()), pattern)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise UsageError(f"value regex {pattern!r}: {e}") from None


def _matches(scan, value_contains, value_regex, header_tests) -> Iterator[dict]:
    pa = require("pyarrow")
    pc = require("pyarrow.compute")
    for rb in scan:
        corrupt = rb.column(rb.schema.get_field_index("_corrupt_record"))
        if corrupt.null_count < len(corrupt):
            bad = pc.is_valid(corrupt)
            for row in rb.filter(bad).select(["topic", "partition", "_corrupt_record"]).to_pylist():
                yield {"topic": row["topic"], "partition": row["partition"], "error": row["_corrupt_record"]}
            rb = rb.filter(pc.invert(bad))
        mask = None
        values = rb.column(rb.schema.get_field_index("value"))
        if value_contains is not None:
            mask = _and(mask, _contains(values, value_contains))
        if value_regex is not None:
            mask = _and(mask, pc.match_substring_regex(values, value_regex))
        for test in header_tests:
            mask = _and(mask, _header_mask(rb.column(rb.schema.get_field_index("headers")), *test))
        if mask is not None:
            rb = rb.filter(pc.fill_null(mask, False))
        if not rb.num_rows:
            continue
        # the times as the integers they are: pyarrow gives a timestamp[ms] value as a datetime,
        # which holds no time past the year 9999 (Kafka's longs do); kafkarec.times prints them
        ts = rb.column(rb.schema.get_field_index("timestamp")).cast(pa.int64()).to_pylist()
        for i, row in enumerate(rb.select([c for c in _COLUMNS if c != "timestamp"]).to_pylist()):
            hs = [(h["key"], h["value"]) for h in (row["headers"] or ())]
            out = {"topic": row["topic"], "partition": row["partition"], "offset": row["offset"],
                   "timestamp": ts[i], "key": row["key"], "value": row["value"], "headers": hs}
            letter = dead_letter(hs) if hs else None
            if letter is not None:
                out["dead_letter"] = letter.as_dict()
            yield out


def _header_mask(headers, name: str, kind: str, operand):
    """Per row: whether one of its headers named ``name`` passes the test (over the flattened
    headers, then per row through their parents: no Python per header)."""
    pa = require("pyarrow")
    pc = require("pyarrow.compute")
    np = require("numpy")
    rows = np.zeros(len(headers), dtype=bool)
    flat = pc.list_flatten(headers)
    if not len(flat):
        return pa.array(rows)
    values = flat.field("value")
    hit = pc.equal(flat.field("key"), name)
    if kind == "equals":
        hit = pc.and_(hit, pc.is_null(values) if operand is None else pc.equal(values, pa.scalar(bytes(operand), pa.binary())))
    elif kind == "contains":
        hit = pc.and_(hit, _contains(values, bytes(operand)))
    elif kind == "regex":
        hit = pc.and_(hit, pc.match_substring_regex(values, operand))
    hit = pc.fill_null(hit, False).to_numpy(zero_copy_only=False)
    rows[pc.list_parent_indices(headers).to_numpy()[hit]] = True
    return pa.array(rows)


def _contains(values, needle: bytes):
    """Whether each value holds ``needle``'s bytes (pyarrow's substring match on binary)."""
    pc = require("pyarrow.compute")
    return pc.match_substring(values, pattern=needle)


def _and(mask, other):
    pc = require("pyarrow.compute")
    return other if mask is None else pc.and_(mask, other)
