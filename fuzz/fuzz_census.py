"""``find`` and ``census`` against a full read: a log dir written from the fuzzer's bytes
(``_logdir``: segments of batches at every codec, legacy ones, damaged ones, arbitrary bytes), then

* ``kafkarec.census.find.find`` with a key, a value's bytes or pattern and header tests (any
  of them) must return exactly the records a full ``LogScan`` (PERMISSIVE) read filtered in
  Python gives, in the same order, and one error row per error row of that read;
* ``kafkarec.census.census`` (with the compression what-if or not: its result must be a
  read_committed read's what-if, ``kafkarec.census.what_if.what_if``) must give each partition
  the figures counted from the decoded rows of a read_committed read: records, tombstones, null keys, batches and their bytes,
  payload bytes, first and last offset, smallest and largest timestamp, records and batches per
  codec and per producer, records and bytes per header key; its damaged batches and the records
  read_uncommitted adds from a read_uncommitted read.

Two census findings of issue 67 are open elsewhere (43: damaged batches told apart by position
alone, not by file; 44: a header key's ``records`` counting headers, not records).  Each is
detected once at start on its reproducer: while it is open, the oracle accepts the answer that
finding gives; once mended, it demands the right one.  So is a third, in the reader: a find by key
skips the offset-order check for batches it reads no row of (``_keyed_find_passes_order``); while
it shows, a find by key over a log with an offset going back is not compared.  And a fourth: a
read with a key bound describes unframed bytes otherwise than the plain read
(``_keyed_read_frames_otherwise``); while it shows, a find by key's error rows are not compared.
"""
import logging
import os
import re
import tempfile
import warnings

import atheris

from _harness import run
import _logdir
from _logdir import pick

import kafkarec
from kafkarec.census import census as census_of
from kafkarec.census.find import find
from kafkarec.census.what_if import WhatIf, parse_codecs, what_if
from kafkarec.scan import LogScan

BASE = tempfile.mkdtemp(prefix="kafkarec-fuzz-census-")
ROOT = os.path.join(BASE, "logs")
warnings.simplefilter("ignore")
logging.getLogger("kafkarec").setLevel(logging.CRITICAL)

WHAT_IF_CODECS = parse_codecs("zstd,lz4")
VALUE_NEEDLES = (b"needle", b"a", b"\x00", b"")
VALUE_PATTERNS = ("needle", "^x$", "^$", "a+$", "^\\xffn")
HEADER_TESTS = ("equals", "contains", "regex", "present")


def _log(path: str, parts) -> None:
    os.makedirs(os.path.join(path, "t-0"), exist_ok=True)
    for name, data in parts:
        with open(os.path.join(path, "t-0", name), "wb") as fh:
            fh.write(data)


def _open_findings():
    """Which of findings 43 and 44 the census still shows, on their reproducers."""
    one = os.path.join(BASE, "f44")
    _log(one, [("00000000000000000000.log", kafkarec.build_batch([b"v"], headers=[[("h", b"a"), ("h", b"b")]]))])
    f44 = census_of(one, partitioner=False)["partitions"][0]["header_keys"]["h"]["records"] == 2
    two = os.path.join(BASE, "f43")
    bad = [bytearray(kafkarec.build_batch([b"v"], base_offset=b)) for b in (0, 1)]
    for b in bad:
        b[-1] ^= 1                       # the CRC broken in each file's first batch
    _log(two, [("00000000000000000000.log", bytes(bad[0])), ("00000000000000000001.log", bytes(bad[1]))])
    f43 = len(census_of(two, partitioner=False)["partitions"][0]["errors"]) == 1
    return f43, f44


FINDING_43_OPEN, FINDING_44_OPEN = _open_findings()


def _keyed_find_passes_order() -> bool:
    """Whether ``find`` with a key still skips the offset-order check for the batches it reads no
    row of (the reader checks the order on the rows it decodes, and a key bound decodes only the
    matching ones): a batch at 10 of key a, then one going back to 4 of key b.  Its answer then
    differs from the full read's: no error row for the batch going back when its key is not
    asked, and its record returned when it is."""
    path = os.path.join(BASE, "keyed")
    _log(path, [("00000000000000000000.log", kafkarec.build_batch([b"a1"], [b"a"], [1], base_offset=10)
                 + kafkarec.build_batch([b"b1"], [b"b"], [2], base_offset=4))])
    return [r.get("offset") for r in find(path, key=b"b")] == [4]


KEYED_FIND_PASSES_ORDER = _keyed_find_passes_order()

#: 137 bytes that frame no batch (the fuzzer's: a batch header of magic 12 before a gzip stream)
_UNFRAMED = bytes.fromhex(
    "a7000000000000000000006b000000000c00000074ffffffff02cce668b200010000000200000000000009390000000000"
    "000a44ffffffffffffffffffffffffffff000000031f8b08000000000000ff53606060604ae4c94b4d4dc94965624a6734"
    "6298c6c2c4929824f01f22c6c0c294c15401c4954a0c9f555880328c70110022517fd13d000000")


def _keyed_read_frames_otherwise() -> bool:
    """Whether a read with a key bound still describes bytes that frame no batch otherwise than
    the plain read: on ``_UNFRAMED`` the plain read gives one error row ("the 137 bytes from byte
    0 to byte 137 could not be framed"), a keyed read (``Bounds.of(keys=[...])``, find's) two
    ("the 119 bytes from byte 0 to byte 119", then a TruncatedError at byte 119)."""
    from kafkarec.scan import Bounds
    path = os.path.join(BASE, "unframed")
    _log(path, [("00000000000000000000.log", _UNFRAMED)])

    def errors(keys):
        t = LogScan(path, mode="PERMISSIVE", bounds=Bounds.of(keys=keys)).to_table()
        return [e for e in t.column("_corrupt_record").to_pylist() if e]
    return errors(None) != errors([b"zz"])


KEYED_READ_FRAMES_OTHERWISE = _keyed_read_frames_otherwise()


def full_read(isolation_level: str = "read_uncommitted"):
    """Every row of a PERMISSIVE read as dicts, times as epoch milliseconds."""
    import pyarrow as pa
    rows = []
    for rb in LogScan(ROOT, mode="PERMISSIVE", batch_columns=True, isolation_level=isolation_level):
        d = rb.to_pydict()
        d["timestamp"] = rb.column(rb.schema.get_field_index("timestamp")).cast(pa.int64()).to_pylist()
        rows += [{k: d[k][i] for k in d} for i in range(rb.num_rows)]
    return rows


def _header_hit(headers, name, kind, operand) -> bool:
    for h in headers or ():
        if h["key"] != name:
            continue
        v = h["value"]
        if kind == "present" or (kind == "equals" and v == operand) or (
                v is not None and ((kind == "contains" and operand in v)
                                   or (kind == "regex" and re.search(operand.encode(), v)))):
            return True
    return False


def check_find(fdp, rows) -> None:
    key = pick(fdp, (None, b"a", b"b", b"ab", b"zz"))
    needle = pick(fdp, (None,) + VALUE_NEEDLES)
    pattern = pick(fdp, (None,) + VALUE_PATTERNS)
    tests = []
    for _ in range(fdp.ConsumeIntInRange(0, 2)):
        kind = pick(fdp, HEADER_TESTS)
        operand = {"equals": pick(fdp, (b"x", None, b"needle")), "contains": pick(fdp, (b"x", b"ee")),
                   "regex": pick(fdp, ("^x$", "needle", "y")), "present": None}[kind]
        tests.append((pick(fdp, ("h", "g", "k")), kind, operand))
    kw = {"key": key, "value_contains": needle, "value_regex": pattern}
    for name, kind, operand in tests:
        arg = {"equals": "headers", "contains": "header_contains", "regex": "header_regex"}.get(kind)
        if arg is None:
            kw.setdefault("header_names", []).append(name)
        else:
            kw.setdefault(arg, {})[name] = operand
    # a second test of one kind on one name replaces the first, as the dict does
    tests = [t for t in tests if t[1] == "present" or kw[{"equals": "headers", "contains": "header_contains",
                                                          "regex": "header_regex"}[t[1]]][t[0]] == t[2]]
    got = list(find(ROOT, **kw))
    if key is not None and KEYED_FIND_PASSES_ORDER and any(
            "OffsetOrderError" in (r["_corrupt_record"] or "") for r in rows):
        return          # the open finding above: not compared
    want = [{"topic": r["topic"], "partition": r["partition"], "offset": r["offset"], "timestamp": r["timestamp"],
             "key": r["key"], "value": r["value"], "headers": [(h["key"], h["value"]) for h in (r["headers"] or ())]}
            for r in rows if r["_corrupt_record"] is None
            and (key is None or r["key"] == key)
            and (needle is None or (r["value"] is not None and needle in r["value"]))
            and (pattern is None or (r["value"] is not None and re.search(pattern.encode(), r["value"])))
            and all(_header_hit(r["headers"], *t) for t in tests)]
    got_records = [r for r in got if "error" not in r]
    if got_records != want:
        raise AssertionError(f"find {kw}:\n{got_records}\nthe full read filtered:\n{want}")
    if key is not None and KEYED_READ_FRAMES_OTHERWISE:
        return          # the open finding above: error rows not compared
    got_errors = sorted((r["topic"], r["partition"], r["error"]) for r in got if "error" in r)
    want_errors = sorted((r["topic"], r["partition"], r["_corrupt_record"]) for r in rows
                         if r["_corrupt_record"] is not None)
    if got_errors != want_errors:
        raise AssertionError(f"find {kw}: error rows\n{got_errors}\nthe full read's\n{want_errors}")


def _tally(table, name, records=0, batches=0, size=0):
    t = table.setdefault(name, {"batches": 0, "records": 0, "bytes": 0})
    t["records"] += records
    t["batches"] += batches
    t["bytes"] += size


def expected_partition(rows, everything) -> dict:
    """The census figures of one partition's rows, counted one by one: ``rows`` a
    read_committed consumer's, ``everything`` a read_uncommitted one's."""
    good = [r for r in rows if r["_corrupt_record"] is None]
    out = {"records": len(good), "tombstones": sum(r["value"] is None for r in good),
           "null_keys": sum(r["key"] is None for r in good),
           "first_offset": good[0]["offset"] if good else None, "last_offset": good[-1]["offset"] if good else None,
           "min_timestamp": min((r["timestamp"] for r in good), default=None),
           "max_timestamp": max((r["timestamp"] for r in good), default=None),
           "payload_bytes": sum(len(r["key"] or b"") + len(r["value"] or b"")
                                + sum(len(h["key"].encode()) + len(h["value"] or b"") for h in r["headers"] or ())
                                for r in good)}
    batches = bytes_ = 0
    codecs, producers, header_keys = {}, {}, {}
    last = None
    for r in good:
        this = (r["batchBaseOffset"], r["batchPosition"])
        starts = this != last
        last = this
        batches += starts
        bytes_ += r["batchSize"] if starts else 0
        for table, name in ((codecs, r["compression"]), (producers, str(r["producerId"]))):
            _tally(table, name, 1, int(starts), r["batchSize"] if starts else 0)
        names = [h["key"] for h in r["headers"] or ()]
        for h in r["headers"] or ():
            _tally(header_keys, h["key"], size=len(h["value"] or b""))
        for name in set(names):
            header_keys[name]["records"] += names.count(name) if FINDING_44_OPEN else 1
    out.update(batches=batches, bytes=bytes_, codecs=codecs, producers=producers,
               header_keys={k: {"records": v["records"], "bytes": v["bytes"]} for k, v in header_keys.items()})
    # damage inside an aborted transaction only the read_uncommitted pass meets
    errors = [r for r in everything if r["_corrupt_record"] is not None]
    out["errors"] = len({r["batchPosition"] for r in errors} if FINDING_43_OPEN else errors)
    out["read_uncommitted_adds"] = sum(r["_corrupt_record"] is None for r in everything) - len(good)
    return out


def check_census(everything, fdp) -> None:
    # the what-if asked or not: handed the read_committed rows of the census's one pass, it must give
    # what a read_committed read of its own gives (a damaged partition's taken back and read again)
    also = WhatIf(WHAT_IF_CODECS, keep_batches=fdp.ConsumeBool()) if fdp.ConsumeBool() else None
    doc = census_of(ROOT, partitioner=False, what_if=also)
    if also is not None:
        alone = what_if(ROOT, WHAT_IF_CODECS, keep_batches=also.keep_batches)
        got, want = (([{k: v for k, v in c.items() if k != "compress_seconds"} for c in r["codecs"]],
                      r["partitions"], r["errors"]) for r in (also.result(), alone))
        if got != want:
            raise AssertionError(f"census --what-if:\n{got}\na read_committed read's what-if:\n{want}")
    committed, uncommitted = {}, {}
    for r in full_read("read_committed"):
        committed.setdefault(r["partition"], []).append(r)
    for r in everything:
        uncommitted.setdefault(r["partition"], []).append(r)
    got = {p["partition"]: p for p in doc["partitions"]}
    for partition in sorted(set(committed) | set(uncommitted)):
        want = expected_partition(committed.get(partition, []), uncommitted.get(partition, []))
        have = got.get(partition)
        if have is None:
            raise AssertionError(f"census has no partition {partition}; the full read has {want}")
        have = {k: (len(have[k]) if k == "errors" else have["read_uncommitted_adds"]["records"]
                    if k == "read_uncommitted_adds" else have[k]) for k in want}
        if have != want:
            raise AssertionError(f"census of partition {partition}:\n{have}\ncounted from the full read:\n{want}")


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    _logdir.write(fdp, ROOT)
    rows = full_read()
    check_find(fdp, rows)
    check_census(rows, fdp)


if __name__ == "__main__":
    run(test_one_input)
