"""kafkarec.transactions.aborted_batches: the offline read_committed rule.

A transactional data batch joins its producer's open transaction; that
producer's next transactional ABORT or COMMIT control batch ends it.  Batches
of transactions that abort are returned (as ``key(batch)``).  A transaction
that has not ended by the end of the data holds the last stable offset (LSO)
at its first batch: every batch from the earliest such batch on (any
producer, transactional or not, control and legacy batches too) is returned
as well, as a read_committed consumer sees nothing at or past the LSO.
Legacy and non-transactional batches neither open nor end a transaction.
Odd batches (unreadable markers, empty control batches, non-transactional
control batches) are made with the tests' reference encoder (``reference.py``).
"""
from __future__ import annotations

import random
import struct
from types import SimpleNamespace

import pytest

import kafkarec
from kafkarec import ControlRecordType, DecodeError, LegacyBatchBuilder, RecordBatchBuilder
from kafkarec.transactions import aborted_batches

from kafka.record.memory_records import MemoryRecordsBuilder

TS0 = 1_700_000_000_000
ABORT, COMMIT = ControlRecordType.ABORT, ControlRecordType.COMMIT

from support.oracles.reference import corrupt_commit_into_abort, patch_legacy, patch_v2


# ------------------------------------------------------------------ builders


def data(pid, offset, n=1, *, transactional=True, codec=0, epoch=0) -> bytes:
    b = RecordBatchBuilder(base_offset=offset, producer_id=pid, producer_epoch=epoch,
                           base_sequence=0, is_transactional=transactional, compression=codec)
    for i in range(n):
        b.append(b"v%d" % (offset + i), key=b"p%d" % pid, timestamp=TS0 + offset + i)
    return b.build()


def kp_data(pid, offset, n=1, *, codec=0) -> bytes:
    """Transactional data written by kafka-python (base offset 0, deltas from offset)."""
    b = MemoryRecordsBuilder(magic=2, compression_type=codec, batch_size=1 << 20, offset=offset,
                             transactional=True, producer_id=pid, producer_epoch=0,
                             base_sequence=0)
    for i in range(n):
        b.append(timestamp=TS0, key=b"kp", value=b"%d" % i, headers=[])
    b.close()
    return bytes(b.buffer())


def marker(pid, offset, kind, *, codec=0, epoch=0, extra=()) -> bytes:
    b = RecordBatchBuilder(base_offset=offset, producer_id=pid, producer_epoch=epoch,
                           is_transactional=True, is_control=True, compression=codec)
    b.append_control(kind, {"coordinatorEpoch": 3}, timestamp=TS0)
    for k in extra:
        b.append_control(k, {"coordinatorEpoch": 3}, timestamp=TS0)
    return b.build()


def unreadable_marker(pid, offset, how) -> bytes:
    """A transactional control batch whose (first) record cannot be read as a marker."""
    if how == "short-key":       # a 2-byte key: Kafka needs at least 4
        b = RecordBatchBuilder(base_offset=offset, producer_id=pid, producer_epoch=0,
                               base_sequence=0, is_transactional=True)
        b.append(b"\x00\x00\x00\x00\x00\x03", key=b"\x00\x00", timestamp=TS0)
        return patch_v2(b.build(), attributes=0x30, base_sequence=-1)
    if how == "null-key":
        b = RecordBatchBuilder(base_offset=offset, producer_id=pid, producer_epoch=0,
                               base_sequence=0, is_transactional=True)
        b.append(b"\x00\x00\x00\x00\x00\x03", key=None, timestamp=TS0)
        return patch_v2(b.build(), attributes=0x30, base_sequence=-1)
    if how == "negative-version":   # key version -1: "May indicate data corruption"
        b = RecordBatchBuilder(base_offset=offset, producer_id=pid, producer_epoch=0,
                               base_sequence=0, is_transactional=True)
        b.append(b"\x00\x00\x00\x00\x00\x03", key=struct.pack(">hh", -1, 0), timestamp=TS0)
        return patch_v2(b.build(), attributes=0x30, base_sequence=-1)
    if how == "record-length":      # an ABORT marker whose record's length is one too many
        raw = marker(pid, offset, ABORT)
        body = bytearray(raw[61:])
        assert body[0] < 0x7E and body[0] % 2 == 0        # a 1-byte zig-zag varint
        body[0] += 2
        return patch_v2(raw, payload=bytes(body))
    if how == "bad-crc":            # an ABORT marker whose CRC does not match
        raw = bytearray(marker(pid, offset, ABORT))
        raw[-2] ^= 0x01             # coordinator epoch 3 -> 2 (the last byte is the header count)
        return bytes(raw)
    if how == "commit-read-as-abort":   # a COMMIT whose type was corrupted into ABORT; CRC stale
        return corrupt_commit_into_abort(marker(pid, offset, COMMIT))
    raise AssertionError(how)


def empty_control(pid, offset) -> bytes:
    """A transactional control batch with no records (what compaction can leave)."""
    return patch_v2(marker(pid, offset, ABORT), payload=b"", record_count=0)


def non_transactional_control(pid, offset, kind) -> bytes:
    return patch_v2(marker(pid, offset, kind), attributes=0x20)


def legacy(magic, offset, *, attributes=None) -> bytes:
    b = LegacyBatchBuilder(magic=magic, base_offset=offset)
    b.append(b"legacy", key=None, timestamp=TS0 if magic else None)
    raw = b.build()
    if attributes is None:
        return raw
    # Set attribute bits a v2 batch would read as transactional/control; fix the CRC-32.
    return patch_legacy(raw, attributes=attributes)


def batches_of(*parts, verify_crc=True):
    buf = b"".join(parts)
    got = list(kafkarec.iter_batches(buf, verify_crc=verify_crc))
    assert len(got) == len(parts)
    return got


def positions(batches, *indexes):
    return {batches[i].position for i in indexes}


# ---------------------------------------------------------------------- tests


def test_abort_drops_the_transaction_commit_keeps_it():
    bs = batches_of(data(1, 0, 2), data(1, 2, 3, codec=1), marker(1, 5, ABORT))
    assert aborted_batches(bs) == positions(bs, 0, 1)
    bs = batches_of(data(1, 0, 2), data(1, 2, 3, codec=3), marker(1, 5, COMMIT))
    assert aborted_batches(bs) == set()


def test_never_ended_transaction_is_dropped():
    bs = batches_of(data(1, 0), marker(1, 1, COMMIT), data(1, 2), data(1, 3, codec=2))
    assert aborted_batches(bs) == positions(bs, 2, 3)


def test_open_transaction_holds_the_lso_for_every_producer():
    bs = batches_of(
        data(1, 0),                         # 0  P1 txn -> commits below the LSO: kept
        data(2, 1, transactional=False),    # 1  below the LSO: kept
        data(3, 2),                         # 2  P3 txn -> aborts: dropped
        marker(1, 3, COMMIT),               # 3
        data(4, 4),                         # 4  P4 txn -> commits, but only past the LSO: kept
        data(5, 5, codec=1),                # 5  P5 txn never ends: the LSO
        data(2, 6, transactional=False),    # 6  non-transactional, past the LSO
        legacy(1, 7),                       # 7  legacy, past the LSO
        data(6, 8),                         # 8  P6 txn that commits past the LSO
        marker(6, 9, COMMIT),               # 9  control batches past the LSO too
        marker(3, 10, ABORT),               # 10
        marker(4, 11, COMMIT),              # 11
        non_transactional_control(7, 12, COMMIT),   # 12
        data(4, 13),                        # 13 P4's next txn, past the LSO
    )
    assert aborted_batches(bs) == positions(bs, 2, *range(5, 14))
    # Without P5's batch nothing is open once P4's second transaction is closed too.
    closed = [b for i, b in enumerate(bs) if i != 5] + batches_of(marker(4, 14, ABORT))
    assert aborted_batches(closed, key=lambda b: b.base_offset) == {2, 13}


def test_lso_is_the_earliest_first_batch_of_the_open_transactions():
    bs = batches_of(
        data(1, 0, transactional=False),    # 0
        data(2, 1),                         # 1  P2 txn -> commits
        data(3, 2),                         # 2  P3 txn, never ends: the LSO
        data(2, 3),                         # 3  P2 txn, past the LSO
        data(4, 4),                         # 4  P4 txn, never ends (later than P3's)
        marker(2, 5, COMMIT),               # 5
        data(3, 6),                         # 6
        data(1, 7, transactional=False),    # 7
    )
    assert aborted_batches(bs) == positions(bs, *range(2, 8))
    # P3's transaction opens before P2's: the earliest first batch decides, not the producer id.
    bs = batches_of(data(9, 0), data(3, 1), data(9, 2), data(2, 3), marker(9, 4, ABORT),
                    data(1, 5, transactional=False))
    assert aborted_batches(bs) == positions(bs, 0, 1, 2, 3, 4, 5)
    bs = batches_of(data(9, 0), data(3, 1), data(9, 2), data(2, 3), marker(9, 4, COMMIT),
                    data(1, 5, transactional=False))
    assert aborted_batches(bs) == positions(bs, 1, 2, 3, 4, 5)


def test_reopened_transaction_holds_the_lso_at_its_own_first_batch():
    bs = batches_of(data(1, 0), data(1, 1), marker(1, 2, COMMIT),       # P1's first txn commits
                    data(2, 3, transactional=False),
                    data(1, 4), data(2, 5, transactional=False), data(1, 6))   # P1's second: open
    assert aborted_batches(bs) == positions(bs, 4, 5, 6)
    bs = batches_of(data(1, 0), marker(1, 1, ABORT), data(2, 2, transactional=False),
                    data(1, 3), data(2, 4, transactional=False))
    assert aborted_batches(bs) == positions(bs, 0, 3, 4)


def test_an_abort_past_the_lso_still_drops_the_batches_below_it():
    # P2's data is below the LSO and its ABORT marker past it: the transaction has
    # ended in the data, so its batches are left out like any aborted ones.
    bs = batches_of(data(2, 0), data(3, 1, transactional=False), data(1, 2),
                    marker(2, 3, ABORT), data(3, 4, transactional=False))
    assert aborted_batches(bs) == positions(bs, 0, 2, 3, 4)
    # And a COMMIT past the LSO keeps them.
    bs = batches_of(data(2, 0), data(3, 1, transactional=False), data(1, 2),
                    marker(2, 3, COMMIT), data(3, 4, transactional=False))
    assert aborted_batches(bs) == positions(bs, 2, 3, 4)


def test_no_open_transaction_no_cut():
    bs = batches_of(data(1, 0), data(2, 1), data(3, 2, transactional=False), legacy(1, 3),
                    marker(1, 4, COMMIT), marker(2, 5, ABORT), data(3, 6, transactional=False),
                    non_transactional_control(4, 7, ABORT), legacy(0, 8))
    assert aborted_batches(bs) == positions(bs, 1)


def test_empty_input():
    assert aborted_batches([]) == set()
    assert aborted_batches(iter(())) == set()


def test_interleaved_producers():
    bs = batches_of(
        data(1, 0),                 # 0  P1 txn a  -> aborts
        data(2, 1),                 # 1  P2 txn b  -> commits
        kp_data(3, 2, 2),           # 2  P3 txn c  -> commits (its marker is past the LSO)
        data(1, 4, codec=4),        # 3  P1 txn a
        marker(2, 5, COMMIT),       # 4
        data(2, 6),                 # 5  P2 txn d  -> aborts
        marker(1, 7, ABORT),        # 6
        kp_data(1, 8, 3, codec=1),  # 7  P1 txn e  -> commits
        data(4, 11),                # 8  P4 txn f  -> aborts
        marker(2, 12, ABORT),       # 9
        marker(1, 13, COMMIT),      # 10
        marker(4, 14, ABORT),       # 11
        marker(5, 15, ABORT),       # 12 P5 had nothing open
        data(5, 16),                # 13 P5 txn g  -> never ends: the LSO
        data(6, 17, transactional=False),   # 14 past the LSO
        kp_data(2, 18, 2),          # 15 P2 txn h  -> commits, past the LSO
        marker(3, 20, COMMIT),      # 16 ends P3's txn c
        marker(2, 21, COMMIT),      # 17
    )
    assert aborted_batches(bs) == positions(bs, 0, 3, 5, 8, *range(13, 18))
    # Up to P5's marker P3's txn c is the open one: the LSO is its first batch.
    assert aborted_batches(bs[:13]) == positions(bs, 0, *range(2, 13))
    # With P3's COMMIT but without P5's open txn, only the aborted ones.
    assert aborted_batches(bs[:13] + bs[16:17]) == positions(bs, 0, 3, 5, 8)


def test_a_producer_starts_a_new_transaction_after_its_marker():
    bs = batches_of(data(7, 0), marker(7, 1, ABORT), data(7, 2), marker(7, 3, COMMIT),
                    data(7, 4), marker(7, 5, ABORT), data(7, 6), marker(7, 7, COMMIT))
    assert aborted_batches(bs) == positions(bs, 0, 4)


def test_only_the_first_record_of_a_marker_counts():
    bs = batches_of(data(1, 0), marker(1, 1, COMMIT, extra=[ABORT]),
                    data(2, 3), marker(2, 4, ABORT, extra=[COMMIT]))
    assert aborted_batches(bs) == positions(bs, 2)


def test_compressed_markers():
    bs = batches_of(data(1, 0), marker(1, 1, ABORT, codec=1), data(2, 2),
                    marker(2, 3, COMMIT, codec=4), data(3, 4), marker(3, 5, ABORT, codec=2))
    assert aborted_batches(bs) == positions(bs, 0, 4)


@pytest.mark.parametrize("how", ["short-key", "null-key", "negative-version", "record-length"])
def test_unreadable_marker_ends_the_transaction_without_aborting(how):
    bs = batches_of(data(1, 0), data(2, 1), unreadable_marker(1, 2, how),
                    data(1, 3), data(2, 4), marker(2, 5, ABORT), marker(1, 6, ABORT))
    # The marker really is unreadable.
    with pytest.raises(DecodeError):
        [r.control_type_id for r in bs[2]]
    assert bs[2].is_control and bs[2].is_transactional
    # P1's first transaction ends (not aborted); its second one is aborted.
    assert aborted_batches(bs) == positions(bs, 1, 3, 4)


def test_marker_read_by_its_first_record_only():
    # An ABORT marker declaring 2 records but holding 1: the batch does not decode in
    # full, but its first record (all a consumer reads of a marker) is an ABORT.
    bad = patch_v2(marker(1, 1, ABORT), record_count=2)
    bs = batches_of(data(1, 0), bad, data(2, 2), patch_v2(marker(2, 3, COMMIT), record_count=2))
    with pytest.raises(DecodeError):
        list(bs[1])
    assert next(iter(bs[1])).control_type is ABORT
    assert aborted_batches(bs) == positions(bs, 0)


def test_marker_with_bad_crc_is_unreadable_only_when_crcs_are_checked():
    parts = (data(1, 0), unreadable_marker(1, 1, "bad-crc"), data(1, 2), marker(1, 3, COMMIT))
    checked = batches_of(*parts)
    with pytest.raises(kafkarec.ChecksumError):
        list(checked[1])
    assert aborted_batches(checked) == set()
    unchecked = batches_of(*parts, verify_crc=False)
    assert [r.coordinator_epoch for r in unchecked[1]] == [2]
    assert aborted_batches(unchecked) == positions(unchecked, 0)


@pytest.mark.parametrize("how", ["bad-crc", "commit-read-as-abort"])
def test_marker_with_bad_crc_ends_the_transaction_without_aborting_when_checked(how):
    # Nothing after the marker ends P1's transaction, so had the marker left it open it
    # would hold the LSO at offset 0 and every batch would be returned.
    parts = (data(1, 0), data(2, 1, transactional=False), data(1, 2), unreadable_marker(1, 3, how),
             data(2, 4, transactional=False))
    checked = batches_of(*parts)
    assert checked[3].is_control and checked[3].is_transactional and not checked[3].crc_valid
    with pytest.raises(kafkarec.ChecksumError):
        list(checked[3])
    assert aborted_batches(checked) == set()
    # Unchecked, the marker is believed: it reads as an ABORT.
    unchecked = batches_of(*parts, verify_crc=False)
    assert [r.control_type for r in unchecked[3]] == [ABORT]
    assert aborted_batches(unchecked) == positions(unchecked, 0, 2)
    # The same bytes through to_arrow: with CRC checks the corrupt marker raises, and
    # with errors="skip" it is reported and the committed records are kept.
    buf = b"".join(parts)
    with pytest.raises(kafkarec.ChecksumError) as info:
        kafkarec.to_arrow(buf, read_committed=True)
    assert info.value.position == checked[3].position
    sink = []
    chunks = list(kafkarec.iter_arrow(buf, read_committed=True, errors="skip", error_sink=sink))
    assert [o for c in chunks for o in c.column("offset").to_pylist()] == [0, 1, 2, 4]
    assert [(e["error"], e["position"], e["base_offset"]) for e in sink] == [
        ("ChecksumError", checked[3].position, 3)]
    assert kafkarec.to_arrow(buf, read_committed=True, verify_crc=False).column(
        "offset").to_pylist() == [1, 4]


def test_empty_control_batch_ends_the_transaction_without_aborting():
    bs = batches_of(data(1, 0), empty_control(1, 1), data(1, 2), marker(1, 3, ABORT))
    assert bs[1].is_control and bs[1].record_count == 0
    assert aborted_batches(bs) == positions(bs, 2)


def test_legacy_batches_are_ignored():
    # Legacy entries whose attribute byte has the v2 transactional and control bits set.
    bs = batches_of(
        data(1, 0),
        legacy(1, 1, attributes=0x30),      # would read as a control batch ...
        legacy(0, 2, attributes=0x10),      # ... and a transactional data batch
        legacy(1, 3),
        marker(1, 4, ABORT),
        data(1, 5),
        legacy(1, 6, attributes=0x30),      # does not end P1's txn: it holds the LSO
    )
    assert [b.magic for b in bs] == [2, 1, 0, 1, 2, 2, 1]
    assert aborted_batches(bs) == positions(bs, 0, 5, 6)
    # Legacy batch 2 opened nothing (it would hold the LSO), batch 1 ended nothing.
    assert aborted_batches(bs[:5]) == positions(bs, 0)


def test_non_transactional_batches_are_ignored():
    bs = batches_of(
        data(1, 0),
        data(1, 1, transactional=False),                # P1's own non-transactional data
        non_transactional_control(1, 2, COMMIT),        # not a transaction marker
        data(2, 3, transactional=False),
        marker(1, 4, ABORT),
        data(3, 5),
        non_transactional_control(3, 6, COMMIT),        # P3's transaction stays open
        data(3, 7, transactional=False),
    )
    assert bs[2].is_control and not bs[2].is_transactional
    # P1's non-transactional batch is not part of its aborted transaction; P3's open
    # transaction cuts at its first batch.
    assert aborted_batches(bs) == positions(bs, 0, 5, 6, 7)
    assert aborted_batches(bs[:5]) == positions(bs, 0)


def test_custom_key():
    bs = batches_of(data(1, 10, 2), data(2, 12), marker(1, 13, ABORT), data(2, 14, 3),
                    marker(2, 17, COMMIT), data(3, 18), legacy(1, 19))
    assert aborted_batches(bs, key=lambda b: b.base_offset) == {10, 18, 19}
    assert aborted_batches(bs, key=lambda b: (b.producer_id, b.base_offset, b.last_offset)) == {
        (1, 10, 11), (3, 18, 18), (-1, 19, 19)}
    seen = []

    def key(b):
        seen.append(b.base_offset)
        return f"{b.producer_id}@{b.base_offset}"
    bs2 = batches_of(data(1, 0), data(2, 1), marker(2, 2, ABORT), data(3, 3, transactional=False),
                     legacy(1, 4))
    # P1 never ends: the LSO is at offset 0, so every batch is left out.
    assert aborted_batches(bs2, key=key) == {"1@0", "2@1", "2@2", "3@3", "-1@4"}
    # key is asked at most once per batch, in order, and only for batches that
    # can be left out (a transaction's batches, and batches after an open one).
    assert seen == [0, 1, 2, 3, 4]
    seen.clear()
    bs3 = batches_of(data(2, 0), legacy(0, 1), marker(2, 2, ABORT), data(3, 3, transactional=False))
    assert aborted_batches(bs3, key=key) == {"2@0"}
    assert seen == [0, 1, 2]
    # Keys that compare equal collapse, as in any set.
    assert aborted_batches(bs2, key=lambda b: b.producer_id) == {1, 2, 3, -1}


def test_generator_input_and_kafkarec_batches_from_one_buffer():
    buf = b"".join([data(1, 0), data(2, 1), marker(1, 2, ABORT), marker(2, 3, COMMIT),
                    data(3, 4, transactional=False), data(4, 5), data(3, 6, transactional=False)])
    got = aborted_batches(kafkarec.iter_batches(buf))
    assert got == {b.position for b in kafkarec.iter_batches(buf) if b.base_offset in (0, 5, 6)}
    got = aborted_batches(b for b in kafkarec.iter_batches(buf) if b.base_offset < 5)
    assert got == {b.position for b in kafkarec.iter_batches(buf) if b.base_offset == 0}


def test_duck_typed_batches():
    def batch(pid, attributes, magic=2, records=(), raises=None):
        class B(SimpleNamespace):
            # what kafkarec.RecordBatch derives from the attributes (v2 only)
            is_transactional = property(lambda self: self.magic >= 2 and bool(self.attributes & 0x10))
            is_control = property(lambda self: self.magic >= 2 and bool(self.attributes & 0x20))

            def __iter__(self):
                if raises is not None:
                    raise raises
                return iter(records)
        return B(producer_id=pid, attributes=attributes, magic=magic, name=f"b{pid}-{attributes}")

    rec = lambda t: SimpleNamespace(control_type_id=t)   # noqa: E731
    closed = [
        batch(1, 0x10), batch(2, 0x10), batch(3, 0x10),
        batch(1, 0x30, records=[rec(0)]),                                  # 3 abort
        batch(2, 0x30, records=[rec(1), rec(0)]),                          # 4 commit
        batch(3, 0x30, raises=kafkarec.InvalidRecordError("bad", 0)),      # 5 unreadable
        batch(5, 0x11), batch(5, 0x30, records=[]),                        # 7 empty marker
        batch(6, 0x00), batch(7, 0x10, magic=1),                           # not transactional
    ]
    for i, b in enumerate(closed):
        b.name = i
    assert aborted_batches(closed, key=lambda b: b.name) == {0}
    still_open = closed[:6] + [
        batch(4, 0x10),                                                    # 6 P4 txn: the LSO
        batch(6, 0x00),                                                    # 7
        batch(4, 0x30, magic=1, records=[rec(1)]),                         # 8 legacy: ignored
        batch(8, 0x30, records=[rec(0)]),                                  # 9 nothing open
    ]
    for i, b in enumerate(still_open):
        b.name = i
    assert aborted_batches(still_open, key=lambda b: b.name) == {0, 6, 7, 8, 9}


def test_random_logs_against_a_model():
    rnd = random.Random(1234)
    cuts = 0
    for round_ in range(120):
        parts, outcome, owner, open_txn, offset, counter = [], {}, [], {}, 0, 0
        steps = [(rnd.randint(1, 4), rnd.choice(["data", "data", "data", "nontxn", "commit", "abort",
                                                 "legacy", "unreadable", "empty", "ntcontrol"]))
                 for _ in range(rnd.randint(1, 30))]
        # Two rounds in three close every transaction at the end, so that aborts and
        # commits are seen all through the log rather than only before an LSO.
        if round_ % 3:
            steps += [(pid, rnd.choice(["commit", "abort", "unreadable", "empty"]))
                      for pid in (1, 2, 3, 4)]
        for pid, step in steps:
            if step == "ntcontrol":                     # ends nothing
                parts.append(non_transactional_control(pid, offset, rnd.choice([ABORT, COMMIT])))
                owner.append(None)
            elif step in ("data", "nontxn", "legacy"):
                if step == "legacy":
                    parts.append(legacy(rnd.randint(0, 1), offset))
                    owner.append(None)
                else:
                    parts.append(data(pid, offset, transactional=step == "data",
                                      codec=rnd.randint(0, 4)))
                    if step == "data":
                        if pid not in open_txn:
                            counter += 1
                            open_txn[pid] = counter
                        owner.append(open_txn[pid])
                    else:
                        owner.append(None)
            else:
                if step == "unreadable":
                    parts.append(unreadable_marker(pid, offset, rnd.choice(
                        ["short-key", "null-key", "negative-version", "record-length"])))
                elif step == "empty":
                    parts.append(empty_control(pid, offset))
                else:
                    parts.append(marker(pid, offset, ABORT if step == "abort" else COMMIT))
                owner.append(None)
                if pid in open_txn:
                    outcome[open_txn.pop(pid)] = step
            offset += 1
        bs = batches_of(*parts)
        # The model: aborted transactions' batches, and every batch from the first
        # batch of the earliest transaction that never ends.
        first_batch = {}
        for i, txn in enumerate(owner):
            if txn is not None:
                first_batch.setdefault(txn, i)
        never_ended = [first_batch[t] for t in first_batch if t not in outcome]
        lso = min(never_ended, default=len(bs))
        cuts += lso < len(bs)
        want = {b.position for i, (b, txn) in enumerate(zip(bs, owner))
                if i >= lso or (txn is not None and outcome[txn] == "abort")}
        assert aborted_batches(bs) == want
        # to_arrow(read_committed=True) uses the same rule.
        buf = b"".join(parts)
        kept = kafkarec.to_arrow(buf, read_committed=True, batch_columns=True)
        dropped_offsets = {b.base_offset for b in bs if b.position in want}
        assert set(kept.column("offset").to_pylist()) == {
            b.base_offset for b in bs if not b.is_control and b.base_offset not in dropped_offsets}
    assert 20 < cuts <= 40      # both kinds of log were made
