"""Indexes are evidence, not truth: a bounded read (the listing path: ``.index`` and
``.timeindex`` resolve the bounds) returns exactly the unbounded read's rows (the local path: no
index read) filtered by the bounds, in parse mode PERMISSIVE, whatever the index bytes; and
offsets that go back (damaged base offsets, segment file names) give one answer too, or, in
FAILFAST, an ``OffsetOrderError`` the unbounded read raises as well.

A partition of one to three segments is built with kafkarec's own builder; then either

* its indexes are written as a broker writes them (an entry every ``index.interval.bytes``,
  the time index's largest timestamp so far, once more on roll) and damaged: cut short,
  preallocated zeros, a zero tail, an entry's timestamp lowered, a byte changed, or replaced
  by arbitrary bytes; or
* base offsets are damaged (a batch's, outside its CRC; a segment's file name) and no index
  is written (the resolver rebuilds each segment's from its batch headers, at a fuzzed interval).

The one lie no reader catches without reading what it skips (docs/engines.md): a time-index
entry that matches the batch it names yet understates the records before it, or a closed
segment's last entry that matches its batch and its last batch yet understates a batch in
between.  Inputs whose index tells that lie are read (nothing may escape) but not compared.
"""
import logging
import os
import shutil
import struct
import tempfile
import warnings

import atheris

from _harness import run

import kafkarec
from kafkarec.errors import KafkaRecError, MalformedBatchError, OffsetOrderError
from kafkarec.log import sidefiles
from kafkarec.scan import Bounds, LogScan

ROOT = tempfile.mkdtemp(prefix="kafkarec-fuzz-indexes-")
PART = os.path.join(ROOT, "t-0")
warnings.simplefilter("ignore")          # IndexWarning is expected here
logging.getLogger("kafkarec").setLevel(logging.ERROR)   # and ignored side files


def _name(base: int, suffix: str) -> str:
    return os.path.join(PART, f"{base:020d}{suffix}")


def _segments(fdp):
    """``[[base, [(first offset, [timestamps])...]]...]``: offsets increasing, gaps as
    compaction leaves them."""
    segs, nxt = [], 0
    for _ in range(fdp.ConsumeIntInRange(1, 3)):
        batches = []
        base = nxt
        for _ in range(fdp.ConsumeIntInRange(1, 4)):
            n = fdp.ConsumeIntInRange(1, 3)
            batches.append((nxt, [fdp.ConsumeIntInRange(0, 400) for _ in range(n)]))
            nxt += n + fdp.ConsumeIntInRange(0, 1)
        segs.append([base, batches])
    return segs


def _batch(first: int, timestamps) -> bytes:
    return kafkarec.build_batch([b"v"] * len(timestamps), timestamps=timestamps, base_offset=first)


def _kafka_indexes(batches, positions, base, interval, closed):
    """The ``.index`` and ``.timeindex`` entries LogSegment.append writes (and onBecomeInactive
    adds on roll)."""
    offset_idx, time_idx = [], []
    since, max_ts, max_off = 0, -1, base
    for (first, ts), pos in zip(batches, positions):
        last = first + len(ts) - 1
        if max(ts) > max_ts:
            max_ts, max_off = max(ts), last
        if since > interval:
            offset_idx.append((last, pos))
            if not time_idx or max_ts > time_idx[-1][0]:
                time_idx.append((max_ts, max_off))
            since = 0
        since += len(_batch(first, ts))
    if closed and (not time_idx or max_ts > time_idx[-1][0]):
        time_idx.append((max_ts, max_off))
    return offset_idx, time_idx


def _write_index(path, base, entries, fmt, zero_slots=0):
    with open(path, "wb") as fh:
        for a, b in entries:
            fh.write(struct.pack(fmt, *((a - base, b) if fmt == ">ii" else (a, b - base))))
        fh.write(bytes(struct.calcsize(fmt) * zero_slots))


def _damage_indexes(fdp, segs, datas):
    for i, (base, batches) in enumerate(segs):
        positions, p = [], 0
        for first, ts in batches:
            positions.append(p)
            p += len(_batch(first, ts))
        offset_idx, time_idx = _kafka_indexes(batches, positions, base, fdp.PickValueInList([0, 60, 150]),
                                              closed=i + 1 < len(segs))
        zeros = 0
        kind = fdp.ConsumeIntInRange(0, 7)
        if kind == 1:
            time_idx = time_idx[:fdp.ConsumeIntInRange(0, len(time_idx))]     # cut short
        elif kind == 2:
            time_idx, zeros = [], fdp.ConsumeIntInRange(1, 4)                  # preallocated
        elif kind == 3:
            zeros = fdp.ConsumeIntInRange(1, 4)                                # untrimmed tail
            time_idx = time_idx[:fdp.ConsumeIntInRange(0, len(time_idx))]
        elif kind == 4 and time_idx:                                           # an entry lowered
            j = fdp.ConsumeIntInRange(0, len(time_idx) - 1)
            time_idx[j] = (time_idx[j][0] - fdp.ConsumeIntInRange(1, 50), time_idx[j][1])
        elif kind == 5:
            offset_idx = offset_idx[:fdp.ConsumeIntInRange(0, len(offset_idx))]
        _write_index(_name(base, ".index"), base, offset_idx, ">ii")
        _write_index(_name(base, ".timeindex"), base, time_idx, ">qi", zeros)
        if kind in (6, 7):                                                     # bytes, any
            which = ".timeindex" if kind == 6 else ".index"
            data = bytearray(open(_name(base, which), "rb").read())
            if data and fdp.ConsumeBool():
                data[fdp.ConsumeIntInRange(0, len(data) - 1)] = fdp.ConsumeIntInRange(0, 255)
            else:
                data = fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 36))
            with open(_name(base, which), "wb") as fh:
                fh.write(bytes(data))


def _damage_offsets(fdp, segs, datas):
    """Base offsets damaged (outside the CRC) and file names moved; no index written."""
    names = [base for base, _ in segs]
    for _ in range(fdp.ConsumeIntInRange(1, 3)):
        i = fdp.ConsumeIntInRange(0, len(segs) - 1)
        if fdp.ConsumeBool():
            j = fdp.ConsumeIntInRange(0, len(segs[i][1]) - 1)
            pos = sum(len(_batch(f, ts)) for f, ts in segs[i][1][:j])
            datas[i][pos:pos + 8] = struct.pack(">q", fdp.PickValueInList(
                [0, 1, 2, 5, 9, 1000, 1 << 31, (1 << 32) + 1, fdp.ConsumeIntInRange(0, 30)]))
        else:
            names[i] = fdp.ConsumeIntInRange(0, 30)
    if len(set(names)) != len(names):
        return None
    return names


def _understates(segs, path_of):
    """Whether a time index tells the lie no reader catches (see the module docstring)."""
    from kafkarec.log import sidefiles as sf
    for i, (base, batches) in enumerate(segs):
        try:
            entries = sf.TimeIndex(path_of(base), base).entries()
        except (KafkaRecError, OSError):
            continue
        spans = [(first, first + len(ts) - 1, max(ts)) for first, ts in batches]
        for k, (t, o) in enumerate(entries):
            named = [j for j, (a, b, _) in enumerate(spans) if a <= o <= b]
            if not named or spans[named[0]][2] != t:
                continue              # caught: the entry does not match its batch
            if any(m > t for _, _, m in spans[:named[0]]):
                return True
            if k == len(entries) - 1 and i + 1 < len(segs) and spans[-1][2] <= t and any(
                    m > t for _, _, m in spans):
                return True
    return False


def _rows(scan):
    t = scan.to_table()
    if "_corrupt_record" in t.column_names:
        t = t.filter(t.column("_corrupt_record").is_null())
    return list(zip(t.column("offset").to_pylist(),
                    [None if v is None else int(v.timestamp() * 1000) for v in t.column("timestamp").to_pylist()]))


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    shutil.rmtree(PART, ignore_errors=True)
    os.makedirs(PART)
    # a segment without a usable .index gets the one Kafka rebuilds from its batch headers: at this
    # fuzzer's small batches, an entry every 0, 60 or 150 bytes (Kafka's 4096 leaves it none)
    sidefiles.INDEX_INTERVAL_BYTES = fdp.PickValueInList([0, 60, 150, 4096])
    segs = _segments(fdp)
    datas = [bytearray(b"".join(_batch(first, ts) for first, ts in batches)) for _, batches in segs]
    damage_offsets = fdp.ConsumeBool()
    names = [base for base, _ in segs]
    if damage_offsets:
        names = _damage_offsets(fdp, segs, datas)
        if names is None:
            return
    else:
        _damage_indexes(fdp, segs, datas)
    for name, d in zip(names, datas):
        with open(_name(name, ".log"), "wb") as fh:
            fh.write(bytes(d))
    lo = fdp.ConsumeIntInRange(0, 450) if fdp.ConsumeBool() else None
    olo = fdp.ConsumeIntInRange(0, 20) if fdp.ConsumeBool() else None
    ohi = fdp.ConsumeIntInRange(olo or 0, 25) if fdp.ConsumeBool() else None
    bounds = Bounds.of(partitions=[0], offsets=(olo, ohi), timestamps=(lo, None))

    whole = _rows(LogScan(ROOT, mode="PERMISSIVE"))
    want = [(o, t) for o, t in whole if (lo is None or t >= lo) and (olo is None or o >= olo)
            and (ohi is None or o < ohi)]
    got = _rows(LogScan(ROOT, bounds=bounds, mode="PERMISSIVE"))
    if got != want and not (not damage_offsets and _understates(segs, lambda b: _name(b, ".timeindex"))):
        raise AssertionError(f"bounded {bounds}: {got}, the unbounded read filtered: {want}")
    if damage_offsets:
        try:
            LogScan(ROOT, bounds=bounds).to_table()
        except OffsetOrderError:
            try:
                LogScan(ROOT).to_table()
            except MalformedBatchError:
                pass
            else:
                raise AssertionError("the bounded read raised OffsetOrderError, the unbounded read did not")


if __name__ == "__main__":
    run(test_one_input)
