"""``kafkarec restore --evidence`` / ``--check`` without a cluster (issue 69 items 3 and 4): a SOURCE
log dir (committed, aborted and idempotent batches, markers, records below the log start, a
group's commit) and TARGET log dirs written as a restore leaves them (the committed records in
transactions, the group's translated position), whole and damaged, by tests/support/logs/logdir.py.
The broker side (a real restore's evidence checked against the target's log dir and bootstrap) is
in tests/broker/test_broker_restore.py."""
import json

import kafkarec
import pytest

from kafkarec import internal
from kafkarec.cli.main import main
from kafkarec.restore import OffsetMap, RestoreSpec, plan, source
from kafkarec.restore import evidence as E
from kafkarec.restore.groups import translate
from kafkarec.restore.produce import PartitionSummary
from support.logs.log_start import write_log_start_checkpoint
from support.logs.logdir import CONTROL_ABORT, CONTROL_COMMIT, PartitionWriter, sample_records, v2_batch

T0 = 1_700_000_000_000
TOPIC, GROUP = "t", "g"


def _commit_group(root, positions):
    """``__consumer_offsets-0`` holding ``{(group, topic, partition): offset}``."""
    b = kafkarec.RecordBatchBuilder(base_offset=0)
    for (group, topic, partition), offset in sorted(positions.items()):
        k, v = internal.encode_record("__consumer_offsets", "OffsetCommit",
                                      {"group": group, "topic": topic, "partition": partition},
                                      {"offset": offset, "leaderEpoch": 0, "metadata": "", "commitTimestamp": T0}, 3)
        b.append(v, key=k, timestamp=T0)
    w = PartitionWriter(str(root), "__consumer_offsets", 0)
    w.append(b.build())
    w.close()


def _source(root):
    """``t-0``: 4 plain records (0-3, below the log start 2: 2 of them), a committed transaction of
    3 (4-6) and its marker (7), an aborted one of 2 (8-9) and its marker (10), 3 records with a
    null key, an empty value and a null header (11-13); the group at 9 (on the aborted records)."""
    w = PartitionWriter(str(root), TOPIC, 0)
    w.append(v2_batch(sample_records(4)))
    w.append(v2_batch(sample_records(3, start_ts=T0 + 10, key_prefix=b"c"), producer_id=5, producer_epoch=0,
                      base_sequence=0, transactional=True))
    w.end_txn(CONTROL_COMMIT, 5, timestamp=T0 + 20)
    w.append(v2_batch(sample_records(2, start_ts=T0 + 30, key_prefix=b"a"), producer_id=6, producer_epoch=0,
                      base_sequence=0, transactional=True))
    w.end_txn(CONTROL_ABORT, 6, timestamp=T0 + 40)
    w.append(v2_batch([(T0 + 50, None, b"v", []), (T0 + 51, b"", b"", [("h", None)]),
                       (T0 + 52, b"k", None, [("h", b"")])]))
    w.close()
    write_log_start_checkpoint(str(root), {(TOPIC, 0): 2})
    _commit_group(root, {(GROUP, TOPIC, 0): 9})


def _restored(spec, part):
    return list(source.committed_records(spec, part.topic, part.partition, part.start, part.end))


def _target(root, records, group_offset, *, aborted=()):
    """The target as the restore leaves it: ``records`` (source records) produced in one
    transaction and committed, then ``aborted`` ones in an aborted transaction (as a restore's
    killed run leaves them), the group at ``group_offset``."""
    w = PartitionWriter(str(root), TOPIC, 0)
    if records:
        w.append(v2_batch([(r.timestamp, r.key, r.value, r.headers) for r in records], producer_id=9,
                          producer_epoch=0, base_sequence=0, transactional=True))
        w.end_txn(CONTROL_COMMIT, 9, timestamp=T0 + 99)
    for i, r in enumerate(aborted):
        w.append(v2_batch([(r.timestamp, r.key, r.value, r.headers)], producer_id=10 + i, producer_epoch=0,
                          base_sequence=0, transactional=True))
        w.end_txn(CONTROL_ABORT, 10 + i, timestamp=T0 + 99)
    w.close()
    _commit_group(root, {(GROUP, TOPIC, 0): group_offset})
    return str(root)


@pytest.fixture
def world(tmp_path):
    """The source, its evidence (as a restore of it into an empty target writes it: the target's
    records at 0-7, its commit marker at 8, the group translated) and the records restored."""
    src = tmp_path / "source"
    _source(src)
    spec = RestoreSpec.of(str(src), "x:1", digest=True)
    p = plan(spec)
    (part,) = p.partitions
    records = _restored(spec, part)
    d, omap = E.Digest(), OffsetMap()
    for i, r in enumerate(records):
        d.add(r)
        omap.add(TOPIC, 0, TOPIC, r.offset, i)
    omap.set_end(TOPIC, 0, TOPIC, part.end, len(records) + 1)
    summary = PartitionSummary(TOPIC, 0, part.start, part.end, TOPIC, len(records), "written", d.records,
                               d.hexdigest())
    positions = translate(spec, p, omap)
    doc = E.document(spec, p, [summary], omap, positions, [])
    path = tmp_path / "evidence.json"
    E.write(doc, str(path))
    return str(src), str(path), records, tmp_path


def _check(capfd, *args):
    code = main(["restore", "--check", *args])
    out, err = capfd.readouterr()
    return code, out, err


def test_the_evidence_names_ranges_digests_and_what_was_left_out(world):
    src, path, records, _ = world
    doc = json.load(open(path))
    (p,) = doc["partitions"]
    # [2, 14): 2 + 3 + 3 committed data records; markers at 7 and 10, 2 aborted, 2 below the log start
    assert [r.offset for r in records] == [2, 3, 4, 5, 6, 11, 12, 13]
    assert p["source"]["start"] == 2 and p["source"]["end"] == 14 and p["source"]["records"] == 8
    assert p["target"] == {"topic": TOPIC, "partition": 0, "start": 0, "end": 9}
    assert p["not_restored"] == {"aborted": 2, "control": 2, "below_log_start": 2}
    assert p["offset_map"]["runs"] == 2         # 2-6 -> 0-4, 11-13 -> 5-7
    # the group on the aborted records goes to the next restored record, 11 -> 5
    assert doc["groups"] == [{"group": GROUP, "topic": TOPIC, "partition": 0, "source_offset": 9,
                              "target_topic": TOPIC, "target_offset": 5}]
    assert (doc["algorithm"], doc["encoding"]) == ("sha256", "kafkarec-record-v1")


def test_the_encoding_is_the_documented_one_and_null_is_not_empty():
    """docs/restore.md's encoding, byte for byte, and the digest over two records' encodings."""
    import hashlib
    enc = E.record_bytes(None, b"", 1, [("h", None), ("k", b"v")])
    assert enc == (b"\x00" * 7 + b"\x01" + b"\xff\xff\xff\xff" + b"\x00\x00\x00\x00" + b"\x00\x00\x00\x02"
                   + b"\x00\x00\x00\x01h" + b"\xff\xff\xff\xff" + b"\x00\x00\x00\x01k" + b"\x00\x00\x00\x01v")
    assert E.record_bytes(b"", None, 1, []) != E.record_bytes(None, b"", 1, [])
    from kafkarec.restore.source import Record
    two = [Record(0, None, b"", 1, [("h", None), ("k", b"v")]), Record(1, b"k", None, 2, [])]
    d, again = E.Digest(), E.Digest()
    for r in two:
        d.add(r)
        again.add_encoded(E.record_bytes(r.key, r.value, r.timestamp, r.headers))
    want = hashlib.sha256(enc + E.record_bytes(b"k", None, 2, [])).hexdigest()
    assert d.hexdigest() == again.hexdigest() == want and d.records == 2
    assert E.Digest().hexdigest() == hashlib.sha256(b"").hexdigest()
    batch = E.Digest()
    batch.add_records(two)
    assert (batch.hexdigest(), batch.records) == (want, 2)


def _reference_encoding(key, value, timestamp, headers) -> bytes:
    """docs/restore.md's rule, written out with struct: the oracle of the core's encoder."""
    import struct

    def field(b):
        return struct.pack(">i", -1) if b is None else struct.pack(">i", len(b)) + b
    return (struct.pack(">q", timestamp) + field(key) + field(value) + struct.pack(">i", len(headers))
            + b"".join(field(k.encode() if isinstance(k, str) else k) + field(v) for k, v in headers))


def test_the_cores_encoder_is_the_rule_over_many_records_and_refuses_what_it_cannot_encode():
    """The core writes a batch's encodings at once (the restore's per-record cost): equal to the
    rule record by record, over nulls, empties, non-ASCII header keys and extreme timestamps; a field
    that is not bytes, sequences of unequal lengths and records that change while encoded are
    errors, never bytes written past the buffer."""
    from kafkarec import _core
    records = [(None, None, -(1 << 63), []), (b"", b"", (1 << 63) - 1, [("", b""), (b"k", None)]),
               (b"k" * 300, b"v" * 70000, 0, [("\u00e9t\u00e9", b"x"), ("h", None)] * 3)]
    got = _core.evidence_encoding(*map(list, zip(*records)))
    assert got == b"".join(_reference_encoding(*r) for r in records)
    assert _core.evidence_encoding([], [], [], []) == b""
    with pytest.raises(TypeError, match="record 1: its value is bytearray"):
        _core.evidence_encoding([None, None], [b"", bytearray(b"x")], [0, 0], [[], []])
    with pytest.raises(TypeError, match="record 0: a header key is int"):
        _core.evidence_encoding([None], [None], [0], [[(1, b"")]])
    with pytest.raises(ValueError, match="one of each a record"):
        _core.evidence_encoding([None], [None, None], [0], [[]])

    class Growing(list):        # a header list longer each time it is read: the second pass
        reads = 0               # must not write what the first did not plan

        def __iter__(self):
            Growing.reads += 1
            return iter([("k", b"v" * 100)] * Growing.reads)

        def __len__(self):
            return 1
    with pytest.raises(RuntimeError, match="changed while they were encoded"):
        _core.evidence_encoding([None], [None], [0], [Growing()])


def test_the_offset_maps_digest_is_of_its_canonical_form():
    """Runs cut apart (as a file or chunks may hold them) give the same digest as joined runs."""
    import hashlib
    import struct
    a, b = OffsetMap(), OffsetMap()
    a.add("t", 0, "t", 2, 0, 5)
    a.set_end("t", 0, "t", 8, 6)
    b._runs[("t", 0)] = [kafkarec.restore.offsets.Run(2, 0, 2), kafkarec.restore.offsets.Run(4, 2, 3)]
    b._starts[("t", 0)] = [2, 4]
    b.set_end("t", 0, "t", 8, 6)
    want = hashlib.sha256(struct.pack(">qqq", 2, 0, 5) + struct.pack(">qq", 8, 6)).hexdigest()
    assert a.digest("t", 0) == b.digest("t", 0) == want


def test_a_whole_target_checks_from_its_log_dir(world, capfd):
    src, path, records, tmp = world
    tgt = _target(tmp / "whole", records, 5)
    code, out, err = _check(capfd, path, src, tgt)
    assert (code, err) == (0, ""), out
    assert out == "checked: 8 records, 1 group positions, 0 share group positions, 0 difference(s)\n"


@pytest.mark.parametrize("damage, differences", [
    ("dropped", ["the target's [0, 9) holds 7 committed records", "first difference: source offset 4 and target "
                 "offset 2 differ (key, value, headers, timestamp)", "the target partition ends at 8; the evidence "
                 "says 9", "offset map recomputed from both sides"]),
    ("duplicated", ["the target's [0, 9) holds 9 committed records", "first difference: source offset 6 and target "
                    "offset 4 differ (key, value, headers, timestamp)", "ends at 10; the evidence says 9"]),
    ("changed", ["the target's [0, 9) holds 8 committed records", "first difference: source offset 12 and target "
                 "offset 6 differ (value)"]),
    ("aborted written", ["the target's [0, 9) holds 9 committed records", "first difference: source offset 11 "
                         "and target offset 5 differ (key, value, timestamp)", "ends at 10; the evidence says 9"]),
])
def test_a_damaged_target_is_named(world, capfd, damage, differences):
    src, path, records, tmp = world
    if damage == "dropped":
        records = records[:2] + records[3:]
    elif damage == "duplicated":
        records = records[:4] + records[3:]
    elif damage == "changed":
        records = records[:6] + [records[6]._replace(value=b"changed")] + records[7:]
    else:       # the source's aborted record at 8 written as committed
        aborted = [r for r in source.committed_records(RestoreSpec.of(src, None), TOPIC, 0, 0, 14)]
        assert 8 not in [r.offset for r in aborted]
        from kafkarec.restore.source import Record
        records = records[:5] + [Record(8, b"a1", b"value-0-" + b"x" * 40, T0 + 30, [])] + records[5:]
    tgt = _target(tmp / damage.replace(" ", "-"), records, 5 if damage != "dropped" else 4)
    code, out, _ = _check(capfd, path, src, tgt)
    assert code == 1, out
    lines = [x for x in out.splitlines() if x.startswith("difference: ")]
    assert lines and out.splitlines()[-1].endswith(f"{len(lines)} difference(s)")
    for want in differences:
        assert any(want in line for line in lines), (want, out)


def test_a_moved_group_and_an_aborted_write_left_aborted(world, capfd):
    """A group moved on the target is named with both offsets; a record written in an aborted
    transaction (a killed run's) is not a committed record: no difference but the group's."""
    src, path, records, tmp = world
    tgt = _target(tmp / "moved", records, 3, aborted=records[:1])
    code, out, _ = _check(capfd, path, src, tgt)
    assert code == 1
    # the aborted transaction's batch and marker lie past the target range: the partition's end (and
    # the map's, which holds it) says so
    lines = [x for x in out.splitlines() if x.startswith("difference: ")]
    assert len(lines) == 3 and "the offset map recomputed from both sides" in lines[1], out
    assert [lines[0], lines[2]] == [
        "difference: t-0 -> t-0: the target partition ends at 11; the evidence says 9",
        "difference: group g: t-0 stands at 3 on the target; the evidence says 5"]


def _rewritten(tmp_path, doc, name="edited.json", *, reseal=True):
    """``doc`` written to ``name``, its seal made anew (``reseal``: as by someone who knows the rule,
    so only the member's own comparison can name the edit)."""
    if reseal:
        doc["seal"] = E.seal(doc)
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return str(path)


def test_a_check_of_nothing_fails_and_bad_evidence_is_a_usage_error(world, tmp_path, capfd):
    src, path, records, tmp = world
    doc = json.load(open(path))
    doc["partitions"][0]["source"].update(start=14, records=0, digest="0" * 64)
    doc["groups"] = None
    tgt = _target(tmp / "none", [], 0)
    code, out, _ = _check(capfd, _rewritten(tmp_path, doc, "empty.json"), src, tgt)
    assert code == 1 and "difference: no record was compared" in out, out
    (tmp_path / "bad.json").write_text('{"format": "kafkarec-restore-evidence", "version": 3}')
    code, _, err = _check(capfd, str(tmp_path / "bad.json"), src, tgt)
    assert code == 2 and "not a kafkarec-restore-evidence document of version 2" in err, err
    (tmp_path / "bad.json").write_text('{"format": "kafkarec-restore-evidence", "version": 1}')
    code, _, err = _check(capfd, str(tmp_path / "bad.json"), src, tgt)
    assert code == 2 and "written by an earlier kafkarec" in err, err
    del doc["partitions"][0]["offset_map"]
    code, _, err = _check(capfd, _rewritten(tmp_path, doc, "bad.json"), src, tgt)
    assert code == 2 and "Object missing required field `offset_map` - at `$.partitions[0]`" in err, err
    code, _, err = _check(capfd, path, src, tgt, "--topics", "t")
    assert code == 2 and "--check with --topics" in err


def _schemas_section():
    return {"source_registry": "/r", "target_registry": "http://t", "subject_strategy": "topic", "framed": [],
            "ids": [{"source_id": 1, "target_id": 2, "subject": "t-value", "version": 1, "kept": False}],
            "unknown": {"count": 0, "named": []}}


def _del(obj, *path):
    for k in path[:-1]:
        obj = obj[k]
    del obj[path[-1]]


def _set(obj, value, *path):
    for k in path[:-1]:
        obj = obj[k]
    obj[path[-1]] = value


#: finding 46: evidence that the old reader took and the check died on (KeyError, TypeError,
#: ValueError, RecursionError), and finding 47's values out of range: each a usage error (exit 2)
#: naming the member
MALFORMED = {
    "no groups_as_of": (lambda d: _del(d, "groups_as_of"), "missing required field `groups_as_of`"),
    "schemas without unknown": (lambda d: _del(d["schemas"], "unknown"), "missing required field `unknown` - at `$.schemas`"),
    "a group without group": (lambda d: _del(d["groups"][0], "group"), "missing required field `group` - at `$.groups[0]`"),
    "a group without target_topic": (lambda d: _del(d["groups"][0], "target_topic"),
                                     "missing required field `target_topic` - at `$.groups[0]`"),
    "unknown as a list": (lambda d: _set(d, [], "schemas", "unknown"), "Expected `object`, got `array` - at `$.schemas.unknown`"),
    "a group name that is a list": (lambda d: _set(d, ["g"], "groups", 0, "group"),
                                    "Expected `str`, got `array` - at `$.groups[0].group`"),
    "group names of two types": (lambda d: d["groups"].append(dict(d["groups"][0], group=7)),
                                 "Expected `str`, got `int` - at `$.groups[1].group`"),
    "a partition listed twice": (lambda d: d["partitions"].append(d["partitions"][0]),
                                 "$.partitions: ('t', 0) is listed twice"),
    "a target id past int32": (lambda d: _set(d, 2 ** 31, "schemas", "ids", 0, "target_id"),
                               "at `$.schemas.ids[0].target_id`"),
    "a version that is true": (lambda d: _set(d, True, "version"), "not a kafkarec-restore-evidence document of version 2"),
    "a source start of -1": (lambda d: _set(d, -1, "partitions", 0, "source", "start"),
                             "Expected `int` >= 0 - at `$.partitions[0].source.start`"),
    "a log end before the range's end": (lambda d: _set(d, 3, "partitions", 0, "log_end"), "are not in order"),
    "a digest that is not hex": (lambda d: _set(d, "z" * 64, "partitions", 0, "source", "digest"),
                                 "at `$.partitions[0].source.digest`"),
    "an unknown member": (lambda d: _set(d, 1, "partitions", 0, "extra"), "unknown field `extra`"),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_evidence_is_a_one_line_usage_error(world, tmp_path, capfd, name):
    src, path, records, tmp = world
    doc = json.load(open(path))
    doc["schemas"] = _schemas_section()
    edit, said = MALFORMED[name]
    edit(doc)
    code, out, err = _check(capfd, _rewritten(tmp_path, doc, reseal=False), src, str(tmp))
    assert code == 2 and out == "" and len(err.splitlines()) == 1, (out, err)
    assert err.startswith("kafkarec restore: error: evidence ") and said in err, err


def test_evidence_nested_past_any_depth_is_a_usage_error(world, tmp_path, capfd):
    """A 100,000-deep JSON array: msgspec's decoder stops at the recursion limit (a RecursionError
    the old reader let through), named as the document's error."""
    src, _, _, tmp = world
    deep = tmp_path / "deep.json"
    deep.write_text('{"format": "kafkarec-restore-evidence", "version": 2, "partitions": '
                    + "[" * 100_000 + "]" * 100_000 + "}")
    code, out, err = _check(capfd, str(deep), src, str(tmp))
    assert code == 2 and len(err.splitlines()) == 1 and "not JSON" in err, err


#: members edited (the seal made anew, so each member's own comparison must name it): the edit, and
#: what the difference says
EDITED = {
    "log_end": (lambda d: _set(d, 15, "partitions", 0, "log_end"),
                "t-0 -> t-0: the source's log ends at 14; the evidence says 15"),
    "offset_map.runs": (lambda d: _set(d, 3, "partitions", 0, "offset_map", "runs"),
                        "(2 runs); the evidence says"),
    "source.start": (lambda d: _set(d, 3, "partitions", 0, "source", "start"),
                     "t-0 -> t-0: the source's range is [2, 14) (its log start, and H at the evidence's end time); "
                     "the evidence says [3, 14)"),
    "source.end": (lambda d: _set(d, 13, "partitions", 0, "source", "end"), "the evidence says [2, 13)"),
    "target.start": (lambda d: _set(d, 1, "partitions", 0, "target", "start"),
                     "the target's [1, 9) holds 7 committed records"),
    "target.partition": (lambda d: _set(d, 1, "partitions", 0, "target", "partition"),
                         "into the same partition number; the evidence says 1"),
    "not_restored": (lambda d: _set(d, 1, "partitions", 0, "not_restored", "aborted"),
                     "the source holds 2 aborted record(s); the evidence says 1"),
    "groups_as_of": (lambda d: _set(d, 1, "groups_as_of"), "group g: t-0"),
    "a partition left out": (lambda d: d["partitions"].clear(),
                             "t-0: the source holds this partition of the restore's topics; the evidence does not"),
    "topics": (lambda d: _set(d, ["t", "u"], "topics"), None),
    "end_time": (lambda d: _set(d, T0 + 1, "end_time"), "the evidence says [2, 14)"),
}


@pytest.mark.parametrize("name", sorted(EDITED))
def test_every_member_edited_is_a_difference(world, tmp_path, capfd, name):
    """Finding 47: evidence edited where the check compared nothing (a wrong log end, a wrong run count,
    a source start moved...) passed with exit 0.  Every member is compared: each edit is a difference
    even with the seal made anew, and without it the seal names the edit too."""
    src, path, records, tmp = world
    tgt = _target(tmp / "whole", records, 5)
    doc = json.load(open(path))
    sealed = doc["seal"]
    edit, said = EDITED[name]
    edit(doc)
    if name == "topics":        # a topic the source does not hold: the plan refuses it
        code, out, err = _check(capfd, _rewritten(tmp_path, doc), src, tgt)
        assert code == 2 and "u" in err, (out, err)
        return
    code, out, err = _check(capfd, _rewritten(tmp_path, doc), src, tgt)
    assert code == 1 and any(said in x for x in out.splitlines() if x.startswith("difference: ")), (said, out, err)
    assert "seal" not in out
    doc["seal"] = sealed
    code, out, err = _check(capfd, _rewritten(tmp_path, doc, reseal=False), src, tgt)
    assert code == 1 and "the document was edited after the restore wrote it" in out, out


def test_the_evidence_names_the_selection_and_is_sealed(world):
    src, path, records, _ = world
    doc = json.load(open(path))
    assert (doc["topics"], doc["end_time"], doc["source_bootstrap"], doc["version"]) == (None, None, False, 2)
    assert doc["seal"] == E.seal(doc) and E.read(path) == E.decode(doc)


def test_the_offline_check_reads_the_target_from_its_log_start(world, capfd):
    """The target as its consumer reads it: a deleteRecords on the target moved its log start to 1
    (its checkpoint says so; the files still hold offset 0), so a consumer gets one record fewer than
    the evidence says.  The offline check read the files from offset 0 and passed (exit 0); the
    broker's own deleteRecords is tests/broker/test_broker_restore.py's."""
    src, path, records, tmp = world
    tgt = _target(tmp / "deleted", records, 5)
    write_log_start_checkpoint(tgt, {(TOPIC, 0): 1})
    code, out, _ = _check(capfd, path, src, tgt)
    assert code == 1, out
    lines = [x for x in out.splitlines() if x.startswith("difference: ")]
    assert lines[0] == ("difference: t-0 -> t-0: the target partition's log start is 1, past the evidence's target "
                        "start 0: Kafka's consumer no longer returns [0, 1)"), out
    assert "the target's [0, 9) holds 7 committed records" in lines[1], out
