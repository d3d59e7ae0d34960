"""iter_arrow's ``keys``: the records whose key is one of a set, the others never built.

Each read is checked against the whole read filtered afterwards by pyarrow (the same rows, in
the same order, every column), over the core's three ways of building rows: the v2 fast path
(plain and compressed), the wide layout (``batch_columns``) and legacy message sets; a lean
projection (no key, value or headers asked for) too.
"""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import kafkarec
from kafkarec import Compression, LegacyBatchBuilder


def _v2_log(compression=Compression.NONE) -> bytes:
    out, offset = b"", 0
    for n in range(5):
        keys = [None if i % 7 == 0 else f"k{i % 23}".encode() for i in range(40)]
        keys[3] = b""                               # an empty key is a key, not a null
        values = [f"v{n}-{i}".encode() * (i % 3) or None for i in range(40)]
        headers = [[("h", b"x")] if i % 5 == 0 else None for i in range(40)]
        out += kafkarec.build_batch(values, keys=keys, headers=headers, base_offset=offset,
                                    compression=compression)
        offset += 40
    return out


def _legacy_log(magic: int) -> bytes:
    builder = LegacyBatchBuilder(magic=magic)
    for i in range(30):
        builder.append(f"v{i}".encode(), None if i % 4 == 0 else f"k{i % 5}".encode(),
                       timestamp=None if magic == 0 else 1_700_000_000_000 + i, offset=i)
    return builder.build()


def _filtered(data, keys, **kwargs):
    whole = kafkarec.to_arrow(data, **{k: v for k, v in kwargs.items() if k != "columns"})
    kept = whole.filter(pc.fill_null(pc.is_in(whole["key"], pa.array(list(keys), pa.binary())), False))
    return kept.select(kwargs["columns"]) if "columns" in kwargs else kept


def _read(data, keys, **kwargs):
    batches = list(kafkarec.iter_arrow(data, keys=keys, **kwargs))
    return pa.Table.from_batches(batches)


FEW = [b"k1", b"k5", b"", b"absent"]
MANY = [f"k{i}".encode() for i in range(0, 23, 1)]        # more than are compared one by one


@pytest.mark.parametrize("keys", [FEW, MANY, [], [b"k22"]], ids=["few", "many", "none", "one"])
@pytest.mark.parametrize("compression", [Compression.NONE, Compression.GZIP, Compression.ZSTD],
                         ids=["none", "gzip", "zstd"])
def test_v2_keys_equal_a_filtered_read(keys, compression):
    data = _v2_log(compression)
    got = _read(data, keys)
    want = _filtered(data, keys)
    assert got.num_rows == want.num_rows
    assert got.equals(want)
    if keys == [b"k22"]:
        assert got.num_rows == 5 * 1        # i == 22 only, in each of the five batches


@pytest.mark.parametrize("keys", [FEW, MANY], ids=["few", "many"])
def test_wide_layout_and_lean_projection(keys):
    data = _v2_log()
    got = _read(data, keys, batch_columns=True)
    assert got.equals(_filtered(data, keys, batch_columns=True))
    lean = _read(data, keys, columns=["offset", "timestamp"])
    assert lean.column_names == ["offset", "timestamp"]
    assert lean.equals(_filtered(data, keys, columns=["offset", "timestamp"]))
    assert lean.num_rows > 0


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_keys(magic):
    data = _legacy_log(magic)
    got = _read(data, [b"k1", b"k3"])
    assert got.equals(_filtered(data, [b"k1", b"k3"]))
    assert sorted(set(got["key"].to_pylist())) == [b"k1", b"k3"]


def test_null_key_is_in_no_set_and_keys_must_be_bytes():
    data = _v2_log()
    assert _read(data, [b"k1"])["key"].null_count == 0
    # kafkarec's usage error (a ValueError), never a raw TypeError; one key given bare is refused,
    # not read as a set of its bytes
    from kafkarec.errors import UsageError
    for keys, message in ((["k1"], "iter_arrow: a key is bytes, not str"), ([5], "a key is bytes, not int"),
                          (b"k1", "keys is a set of keys, not one bytes"), (5, "keys is a set of keys, not int")):
        with pytest.raises(UsageError, match=message):
            list(kafkarec.iter_arrow(data, keys=keys))


def _large_v2_log(compression=Compression.NONE) -> bytes:
    """Batches of 16 KiB and more (their records walked without the GIL), keys that are prefixes
    of one another, empty, or hold bytes past 0x7f (an order by signed bytes would differ)."""
    pool = [b"", b"a", b"ab", b"abc", b"b", b"\xff", b"\xff\x00", b"\x00", b"\x7f\x80", b"zz" * 40]
    out, offset = b"", 0
    for n in range(3):
        keys = [None if i % 11 == 0 else pool[(i * 7 + n) % len(pool)] + (b"" if i % 3 else b"%d" % (i % 4))
                for i in range(400)]
        values = [b"v%d-%d-" % (n, i) + b"x" * 60 for i in range(400)]
        out += kafkarec.build_batch(values, keys=keys, base_offset=offset, compression=compression)
        offset += 400
    assert all(b.size_in_bytes >= 16384 for b in kafkarec.iter_batches(out)) or compression != Compression.NONE
    return out


EDGES_FEW = [b"", b"ab", b"\xff", b"zz" * 40]
EDGES_MANY = [b"", b"a", b"a0", b"ab", b"ab1", b"abc", b"abc2", b"b", b"b3", b"\xff", b"\xff\x00",
              b"\x00", b"\x7f\x80", b"\x7f", b"zz" * 40, b"zz" * 39, b"c", b"d", b"e", b"f"]


@pytest.mark.parametrize("keys", [EDGES_FEW, EDGES_MANY, [b"absent"] * 1], ids=["few", "many", "absent"])
@pytest.mark.parametrize("compression", [Compression.NONE, Compression.ZSTD], ids=["none", "zstd"])
def test_keys_in_batches_walked_without_the_gil(keys, compression):
    """The record loops test each key without the GIL: a few keys one by one, more by bisection in
    Python's order of bytes; every projection as the whole read filtered."""
    assert len(EDGES_MANY) > 16
    data = _large_v2_log(compression)
    for kwargs in ({}, {"batch_columns": True}, {"columns": ["offset", "timestamp"]},
                   {"columns": ["key", "offset"]}):
        got = _read(data, keys, **kwargs)
        want = _filtered(data, keys, **kwargs)
        assert got.equals(want), kwargs
        if keys is not EDGES_MANY or "columns" in kwargs:
            continue
        assert set(got["key"].to_pylist()) == set(keys) & set(kafkarec.to_arrow(data)["key"].to_pylist())
        assert got.num_rows > 100
