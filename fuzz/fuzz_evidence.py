"""A restore's evidence documents (``kafkarec restore --check``): a valid document of a small
restore (source and target log dirs written here once), then edited by the fuzzer -- any member
replaced by a JSON value of any shape (deep nesting, floats past a long, bools where numbers
belong, lists where objects belong, keys repeated), members dropped or added, the seal made anew
or not -- or the fuzzer's bytes as they come.  :func:`kafkarec.restore.evidence.decode` gives an
``Evidence`` or a ``UsageError``; a decoded document's ``check`` gives a report or one of
kafkarec's typed errors.  Findings 46 and 47 of issue 78 were of this class: evidence the reader
took and the check died on (KeyError, TypeError, ValueError, OverflowError, RecursionError)."""
import json
import os
import tempfile

import atheris

from _harness import run

import kafkarec
from kafkarec.errors import UsageError
from kafkarec.restore import OffsetMap, RestoreSpec, plan, source
from kafkarec.restore import evidence as E
from kafkarec.restore.produce import PartitionSummary

T0 = 1_700_000_000_000
_ROOT = tempfile.mkdtemp(prefix="fuzz-evidence-")


def _log(root: str, rows) -> str:
    """``t-0``: ``rows`` (key, value, timestamp) in two batches, as one segment."""
    os.makedirs(os.path.join(root, "t-0"), exist_ok=True)
    out = b""
    for base, part in ((0, rows[:2]), (2, rows[2:])):
        b = kafkarec.RecordBatchBuilder(base_offset=base)
        for k, v, ts in part:
            b.append(v, k, timestamp=ts, headers=[("h", k)])
        out += b.build()
    with open(os.path.join(root, "t-0", "00000000000000000000.log"), "wb") as fh:
        fh.write(out)
    return root


_ROWS = [(b"a", b"1", T0), (None, b"", T0 + 1), (b"b", None, T0 + 2), (b"c", b"x" * 30, T0 + 3)]
SOURCE = _log(os.path.join(_ROOT, "source"), _ROWS)
TARGET = _log(os.path.join(_ROOT, "target"), _ROWS)


def _document() -> dict:
    spec = RestoreSpec.of(SOURCE, "x:1", digest=True)
    p = plan(spec)
    (part,) = p.partitions
    records = list(source.committed_records(spec, part.topic, part.partition, part.start, part.end))
    d, omap = E.Digest(), OffsetMap()
    for r in records:
        d.add(r)
        omap.add("t", 0, "t", r.offset, r.offset)
    omap.set_end("t", 0, "t", part.end, part.end)
    summary = PartitionSummary("t", 0, part.start, part.end, "t", len(records), "written", d.records, d.hexdigest())
    import msgspec
    return msgspec.to_builtins(E.document(spec, p, [summary], omap, [], None))


DOCUMENT = _document()
assert E.check(DOCUMENT, SOURCE, TARGET).ok


def _shape(fdp, depth=0):
    """A JSON value of any shape, numbers at and past the ranges' ends among them."""
    kind = fdp.ConsumeIntInRange(0, 8 if depth < 4 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return fdp.ConsumeBool()
    if kind == 2:
        return fdp.PickValueInList([0, 1, -1, 2 ** 31 - 1, 2 ** 31, 2 ** 63 - 1, 2 ** 63, -2 ** 63, 10 ** 30])
    if kind == 3:
        return fdp.ConsumeIntInRange(-5, 40)
    if kind == 4:
        return fdp.PickValueInList(["t", "", "g", "0" * 64, "f" * 64, "topic", "record", "x" * 300])
    if kind == 5:
        return fdp.ConsumeUnicodeNoSurrogates(8)
    if kind == 6:
        return fdp.ConsumeFloat()
    if kind == 7:
        return [_shape(fdp, depth + 1) for _ in range(fdp.ConsumeIntInRange(0, 3))]
    return {fdp.PickValueInList(["topic", "partition", "group", "start", "end", "records", "digest", "count",
                                 "named", "source_id", "target_id", "x"]): _shape(fdp, depth + 1)
            for _ in range(fdp.ConsumeIntInRange(0, 4))}


def _places(obj, path=()):
    """Every member's path in ``obj``."""
    yield path
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _places(v, path + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _places(v, path + (i,))


_SCHEMAS = {"source_registry": "/r", "target_registry": "http://t", "subject_strategy": "topic",
            "framed": [{"topic": "t", "key": False, "value": True}],
            "ids": [{"source_id": 1, "target_id": 2, "subject": "t-value", "version": 1, "kept": False}],
            "unknown": {"count": 0, "named": []}}
_GROUP = {"group": "g", "topic": "t", "partition": 0, "source_offset": 2, "target_topic": "t", "target_offset": 2}


def _edited(fdp) -> bytes:
    doc = json.loads(json.dumps(DOCUMENT))
    if fdp.ConsumeBool():
        doc["schemas"] = json.loads(json.dumps(_SCHEMAS))
    if fdp.ConsumeBool():
        doc["groups"] = [dict(_GROUP)]
        doc["share_groups"] = [{"group": "s", "topic": "t", "partition": 0, "source_start": 1, "target_topic": "t",
                                "target_start": 1}]
    for _ in range(fdp.ConsumeIntInRange(1, 4)):
        places = [p for p in _places(doc) if p]
        path = places[fdp.ConsumeIntInRange(0, len(places) - 1)]
        parent = doc
        for k in path[:-1]:
            parent = parent[k]
        what = fdp.ConsumeIntInRange(0, 3)
        if what == 0 and isinstance(parent, dict):
            del parent[path[-1]]
        elif what == 1 and isinstance(parent, list):
            parent.append(json.loads(json.dumps(parent[path[-1]])))     # a key listed twice
        else:
            parent[path[-1]] = _shape(fdp)
    if fdp.ConsumeBool():
        doc["seal"] = E.seal(doc)
    text = json.dumps(doc)
    if fdp.ConsumeIntInRange(0, 9) == 0:        # nested deep
        text = text[:-1] + ', "deep": ' + "[" * 50_000 + "]" * 50_000 + "}"
    return text.encode()


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    text = _edited(fdp) if fdp.ConsumeIntInRange(0, 7) else fdp.ConsumeBytes(fdp.remaining_bytes())
    try:
        ev = E.decode(text, "evidence")
    except UsageError as e:
        assert str(e).startswith("evidence: ") and "\n" not in str(e), repr(e)
        return
    try:
        E.check(ev, SOURCE, TARGET)
    except kafkarec.KafkaRecError:
        pass


if __name__ == "__main__":
    run(test_one_input)
