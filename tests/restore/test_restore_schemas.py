"""Schema ids across registries (issue 69 item 6), without a cluster: the translation's rule on
records (which fields are framed, by the subjects and the strategy; ids in the prefix and in
headers; unknown ids named and left), the registrations on the target (references first; the id
kept only in IMPORT mode with the id free) and the evidence's map replaying the restore.  The target
registry is a real one, Apicurio Registry through its Confluent-compatible API (the session's
``apicurio_registry``, tests/support/registry/apicurio.py: shared, so ids are read from it, never assumed),
and Apicurio is also read as a source registry.  tests/support/registry/registry_server.py's stand-in stays
where one real registry cannot serve: IMPORT mode (Apicurio has none; the stand-in keeps Confluent's
documented rule), a second registry with other ids beside Apicurio as the source, and the evidence's
replay (which needs only some target).  The restore itself, into a real broker, is in
tests/broker/test_broker_restore.py."""
import json
import re
import time

import msgspec

import pytest

from kafkarec.restore import RestoreSpec
from kafkarec.restore import evidence as E
from kafkarec.restore.schemas import IdMapping, SchemaTranslation, Unknown, rewriter_from_evidence
from kafkarec.restore.source import Record
from kafkarec.errors import RestoreError, UsageError
from support.registry.lying_registry import LyingRegistry, answer, trickle
from support.registry.registry_server import RegistryStandIn

MONEY = json.dumps({"type": "record", "name": "Money", "namespace": "com.acme",
                    "fields": [{"name": "cents", "type": "long"}]})
ORDER = json.dumps({"type": "record", "name": "Order", "namespace": "com.acme",
                    "fields": [{"name": "amount", "type": "com.acme.Money"}]})


#: the reference's subject (not the broker test's ``money``, which holds another text of Money: the
#: tests share one real registry, where a second text would be a second version)
MONEY_SUBJECT = "acme-money"


def source_registry(root, order_subject="orders-value"):
    """A folder registry: ``acme-money`` v1 = id 50, ``order_subject`` v1 = id 100 referencing it."""
    for subject, sid, schema, refs in ((MONEY_SUBJECT, 50, MONEY, []),
                                       (order_subject, 100, ORDER,
                                        [{"name": "com.acme.Money", "subject": MONEY_SUBJECT, "version": 1}])):
        d = root / "subjects" / subject / "versions"
        d.mkdir(parents=True)
        (d / "1.json").write_text(json.dumps({"subject": subject, "version": 1, "id": sid, "schema": schema,
                                              "references": refs}))
    return str(root)


def framed(sid, body=b"payload"):
    return b"\x00" + sid.to_bytes(4, "big") + body


@pytest.mark.registry
def test_ids_rewritten_where_the_subjects_say_and_unknown_ones_named(tmp_path, apicurio_registry):
    reg = apicurio_registry
    records = [Record(0, framed(100), framed(100), 1, []),                        # key: no orders-key subject
               Record(1, None, framed(999), 2, []),                               # an id the source lacks
               Record(2, None, b"bare", 3, [("__value_schema_id", framed(100, b"")), ("h", b"x")]),
               Record(3, None, b"not framed", 4, []),
               Record(4, b"k", None, 5, [])]                                       # a tombstone
    tr = SchemaTranslation(source_registry(tmp_path), reg.url)
    out = [tr.rewrite("orders", 0, r) for r in records]
    plain = tr.rewrite("plain", 0, Record(9, None, framed(100), 9, []))
    # the reference registered first, then the order under its subject, naming the version the
    # target gave the reference; the ids are the target's own (Apicurio has no IMPORT mode: the
    # source's are not kept, the records are rewritten)
    money, order = reg.version(MONEY_SUBJECT), reg.version("orders-value")
    assert reg.versions(MONEY_SUBJECT) == [1] and reg.versions("orders-value") == [1]
    assert order["references"] == [{"name": "com.acme.Money", "subject": MONEY_SUBJECT, "version": 1}]
    oid = order["id"]
    assert (order["schema"], money["schema"]) == (ORDER, MONEY) and len({oid, money["id"], 100}) == 3
    assert tr.mappings == [IdMapping(100, oid, "orders-value", 1, False)]
    assert [(r.key, r.value, r.headers) for r in out] == [
        (framed(100), framed(oid), []),
        (None, framed(999), []),
        (None, b"bare", [("__value_schema_id", framed(oid, b"")), ("h", b"x")]),
        (None, b"not framed", []),
        (b"k", None, [])]
    assert out[4] is records[4] and records[2].headers[0][1] == framed(100, b"")     # the source untouched
    # a topic without <topic>-value: a first byte of 0 and a known id do not make it framed
    assert plain.value == framed(100)
    assert tr.unknown == [Unknown("orders", 0, 1, "value", 999), Unknown("orders", 0, 3, "value", None)]
    assert tr.unknown[0].line() == ("orders-0 offset 1 value: schema id 999, which the source registry does not "
                                    "hold under a subject of the strategy; left as it was")
    # the evidence's map rewrites the source as the restore did
    again = rewriter_from_evidence(msgspec.convert(tr.evidence({"orders", "plain"}), E.SchemasEvidence))
    assert [again.rewrite("orders", 0, r) for r in records] == out
    assert again.rewrite("plain", 0, Record(9, None, framed(100), 9, [])).value == framed(100)
    # a second translation (a re-run's) registers nothing new and maps the same way
    assert SchemaTranslation(source_registry(tmp_path / "again"), reg.url).resolve("orders", False, 100) == oid
    assert reg.versions("orders-value") == [1] and reg.versions(MONEY_SUBJECT) == [1]


def test_import_mode_keeps_a_free_id_and_takes_the_targets_for_a_taken_one(tmp_path):
    """On the stand-in: Apicurio has no mode API (tests/support/registry/apicurio.py), so against the real
    registry the source's id is never kept (the test above)."""
    with RegistryStandIn(first_id=1, mode="IMPORT") as target:
        target.ids[50] = ("another schema", "AVRO", ())         # the reference's id is taken there
        tr = SchemaTranslation(source_registry(tmp_path), target.url)
        assert tr.rewrite("orders", 0, Record(0, None, framed(100), 1, [])).value == framed(100)
        assert target.subjects == {MONEY_SUBJECT: [1], "orders-value": [100]}
    assert tr.mappings == [IdMapping(100, 100, "orders-value", 1, True)]


@pytest.mark.registry
def test_record_strategy_and_a_renamed_topics_subject(tmp_path, apicurio_registry):
    reg = apicurio_registry
    tr = SchemaTranslation(source_registry(tmp_path, "com.acme.Order"), reg.url, "record")
    got = [tr.rewrite("any", 0, Record(i, None, v, 1, []))
           for i, v in enumerate([framed(100), framed(999), b"raw"])]
    order = reg.version("com.acme.Order")
    assert [r.value for r in got] == [framed(order["id"]), framed(999), b"raw"] and order["id"] != 100
    assert order["references"] == [{"name": "com.acme.Money", "subject": MONEY_SUBJECT, "version": 1}]
    assert tr.unknown == [Unknown("any", 0, 1, "value", 999)]       # no prefix: not framed, not named
    tr = SchemaTranslation(source_registry(tmp_path / "b"), reg.url, rename=(("orders", "orders-b"),))
    assert tr.rewrite("orders", 0, Record(0, None, framed(100), 1, [])).value == framed(
        reg.version("orders-b-value")["id"])
    assert [m.subject for m in tr.mappings] == ["orders-b-value"]


@pytest.mark.registry
def test_a_real_registry_read_as_the_source(apicurio_registry):
    """``--source-registry URL`` naming Apicurio: its subjects, versions, ids and references read
    through the ccompat API (which also answers ``/contexts``), and a target with other ids (the
    stand-in, numbering from 1000) given the schemas, references first."""
    from kafkarec.registry import load
    reg = apicurio_registry
    money = reg.call("POST", "/subjects/src-money/versions", {"schema": MONEY})["id"]
    refs = [{"name": "com.acme.Money", "subject": "src-money", "version": 1}]
    order = reg.call("POST", "/subjects/src-orders-value/versions", {"schema": ORDER, "references": refs})["id"]
    source = load(reg.url, refresh=True)
    assert {"src-money", "src-orders-value"} <= set(source.subjects()) and source.problems == []
    assert source.by_id(order).references[0]._asdict() == refs[0]
    with RegistryStandIn(first_id=1000) as target:
        tr = SchemaTranslation(reg.url, target.url)
        assert tr.rewrite("src-orders", 0, Record(0, None, framed(order), 1, [])).value == framed(1001)
        assert target.subjects == {"src-money": [1000], "src-orders-value": [1001]}
        assert target.ids[1001] == (ORDER, "AVRO", (("com.acme.Money", "src-money", 1),))
    assert tr.mappings == [IdMapping(order, 1001, "src-orders-value", 1, False)] and money != order


def test_the_options_go_together_and_are_checked():
    with pytest.raises(UsageError, match="go together"):
        RestoreSpec.of("/x", "h:1", source_registry="/r")
    with pytest.raises(UsageError, match="not a registry URL"):
        RestoreSpec.of("/x", "h:1", source_registry="/r", target_registry="/t")
    with pytest.raises(UsageError, match="one of topic, record, topic_record"):
        RestoreSpec.of("/x", "h:1", source_registry="/r", target_registry="http://t", subject_strategy="nope")


T0 = 1_700_000_000_000


def _orders_log(root, rows):
    """``orders-0``: ``rows`` as values, in one committed transaction (tests/support/logs/logdir.py)."""
    from support.logs.logdir import CONTROL_COMMIT, PartitionWriter, v2_batch
    w = PartitionWriter(str(root), "orders", 0)
    w.append(v2_batch([(T0 + i, None, v, []) for i, v in enumerate(rows)], producer_id=9, producer_epoch=0,
                      base_sequence=0, transactional=True))
    w.end_txn(CONTROL_COMMIT, 9, timestamp=T0 + 9)
    w.close()
    return str(root)


def _translated(tmp_path):
    """A source whose record names id 100 (translated to the target's 2) and id 999 (unknown), the
    evidence of its restore (as JSON values) and the records as written."""
    from kafkarec.restore import OffsetMap, plan, source
    from kafkarec.restore.produce import PartitionSummary
    from kafkarec.restore.schemas import translation_for
    src = _orders_log(tmp_path / "source", [framed(100), framed(999)])
    with RegistryStandIn(first_id=1) as target:
        spec = RestoreSpec.of(src, "x:1", digest=True, restore_id="check-replay",
                              source_registry=source_registry(tmp_path / "reg"), target_registry=target.url)
        tr = translation_for(spec)
        (part,) = plan(spec).partitions
        read = list(source.committed_records(spec, "orders", 0, part.start, part.end))
        written = [tr.rewrite("orders", 0, r) for r in read]
    d, w, omap = E.Digest(), E.Digest(), OffsetMap()
    for r, x in zip(read, written):
        d.add(r)
        w.add(x)
        omap.add("orders", 0, "orders", r.offset, r.offset)
    omap.set_end("orders", 0, "orders", part.end, part.end)
    summary = PartitionSummary("orders", 0, part.start, part.end, "orders", 2, "written", d.records, d.hexdigest(),
                               w.hexdigest())
    doc = msgspec.to_builtins(E.document(spec, plan(spec), [summary], omap, None, None))
    return src, doc, written, w.hexdigest()


def test_check_replays_the_translation_and_names_an_id_left_untranslated(tmp_path):
    """--check against target log dirs (tests/support/logs/logdir.py): one holding the records as the
    restore wrote them (ids translated) checks clean; one holding the source's bytes differs."""
    src, doc, written, digest = _translated(tmp_path)
    assert doc["schemas"]["ids"] == [{"source_id": 100, "target_id": 2, "subject": "orders-value", "version": 1,
                                      "kept": False}]
    assert doc["schemas"]["unknown"]["count"] == 1 and doc["partitions"][0]["target"]["digest"] == digest
    good = E.check(doc, src, _orders_log(tmp_path / "good", [x.value for x in written]))
    assert good.ok and good.problems == [] and good.records == 2
    bad = E.check(doc, src, _orders_log(tmp_path / "bad", [framed(100), framed(999)]))
    assert not bad.ok and bad.problems[0].endswith(
        "first difference: source offset 0 and target offset 0 differ (value)")


def test_a_map_that_does_not_make_the_targets_records_is_a_difference(tmp_path):
    """Finding 47: the evidence's id map is what the check rewrites the source by.  One that does not
    rewrite the source's records into the target's is named, whatever the digests say (the
    record-by-record difference was dropped when the target's digest matched: exit 0), and an id
    no registry gives is refused before it is used (a raw OverflowError from the prefix's packing)."""
    src, doc, written, _ = _translated(tmp_path)
    target = _orders_log(tmp_path / "target", [x.value for x in written])
    wrong = json.loads(json.dumps(doc))
    wrong["schemas"]["ids"][0]["target_id"] = 1         # the target holds id 2; its seal made anew
    wrong["seal"] = E.seal(wrong)
    report = E.check(wrong, src, target)
    assert not report.ok and report.problems == [
        "orders-0 -> orders-0: the source's records as the evidence says they were written are not the target's; "
        "first difference: source offset 0 and target offset 0 differ (value)"], report.problems
    for bad, member in ((2 ** 31, "target_id"), (-1, "target_id"), (True, "target_id"), ("2", "target_id")):
        wrong["schemas"]["ids"][0]["target_id"] = bad
        with pytest.raises(UsageError, match=r"\$\.schemas\.ids\[0\]\." + member):
            E.check(wrong, src, target)
    wrong["schemas"]["ids"][0]["target_id"] = 2
    wrong["schemas"]["ids"].append(dict(wrong["schemas"]["ids"][0], target_id=3))
    with pytest.raises(UsageError, match=r"\$\.schemas\.ids: 100 is listed twice"):
        E.check(wrong, src, target)


def test_a_restore_over_spark_refuses_to_translate_ids():
    """Its tasks would each register ids apart from the driver, whose evidence would hold none."""
    import spark_udfs
    spec = RestoreSpec.of("/x", "h:1", source_registry="/r", target_registry="http://t")
    with pytest.raises(UsageError, match="does not translate schema ids"):
        spark_udfs.restore(None, spec)


# --- a target registry that answers badly (issue 78, finding 48) ------------------------------------

def _translate(tmp_path, overrides, **kw):
    """The order's value translated against a target that answers ``overrides`` badly; the target's calls."""
    with LyingRegistry(overrides) as target:
        tr = SchemaTranslation(source_registry(tmp_path), target.url, **kw)
        try:
            tr.rewrite("orders", 0, Record(0, None, framed(100), 1, []))
        finally:
            calls = target.calls
    return tr, calls


@pytest.mark.parametrize("body, says", [
    (b'{"id": 2147483648}', "$.id = 2147483648: Expected `int` <= 2147483647"),     # was OverflowError in _with_id
    (b'{"id": -5}', "$.id = -5: Expected `int` >= 0"),                               # was written as ff ff ff fb
    (b'{"id": "7"}', '$.id = "7": Expected `int`, got `str`'),
    (b'{"id": true}', "$.id = true: Expected `int`, got `bool`"),
    (b'{"schema_id": 7}', "$.id is missing (in {\"schema_id\": 7})"),
    (b"[7]", "$ = [7]: Expected `object`, got `array`"),
], ids=["2^31", "-5", "str", "bool", "missing", "list"])
def test_a_registered_id_the_prefix_cannot_carry_is_a_restore_error(tmp_path, body, says):
    with pytest.raises(RestoreError) as info:
        _translate(tmp_path, {f"POST /subjects/{MONEY_SUBJECT}/versions": answer(200, body)})
    message = str(info.value)
    assert f"registering schema id 100 under orders-value: POST http" in message, message
    assert f"/subjects/{MONEY_SUBJECT}/versions: unexpected answer: {says}" in message and "\n" not in message


@pytest.mark.parametrize("body, says", [
    (b'{"subject": "acme-money", "version": 0, "id": 10}', "$.version = 0: Expected `int` >= 1"),
    (b'{"subject": "acme-money", "id": 10}', "$.version is missing (in {\"subject\": \"acme-money\", \"id\": 10})"),
], ids=["zero", "missing"])
def test_a_looked_up_version_out_of_range_is_a_restore_error(tmp_path, body, says):
    with pytest.raises(RestoreError, match=f"/subjects/{MONEY_SUBJECT}: unexpected answer: {re.escape(says)}"):
        _translate(tmp_path, {f"POST /subjects/{MONEY_SUBJECT}": answer(200, body)})


def test_a_target_answering_no_http_is_a_restore_error(tmp_path):
    with pytest.raises(RestoreError, match=r"the answer is not HTTP \(BadStatusLine"):
        _translate(tmp_path, {f"POST /subjects/{MONEY_SUBJECT}/versions": b"SSH-2.0-OpenSSH_9.6\r\n"})


def test_a_trickled_target_answer_ends_at_the_timeout(tmp_path):
    """An answer a byte every 0.3 s against ``timeout=1``: one call of at most 1 s, not 1 s a byte."""
    started = time.monotonic()
    with pytest.raises(RestoreError, match="no answer within the timeout of 1 s"):
        _translate(tmp_path, {f"POST /subjects/{MONEY_SUBJECT}/versions": trickle(answer(200, {"id": 10}))},
                   timeout=1)
    took = time.monotonic() - started
    assert took < 4, f"the translation took {took:.1f} s against a timeout of 1 s"


def test_a_source_registry_answering_badly_is_a_usage_error():
    with LyingRegistry({"GET /subjects/orders-value/versions": answer(200, b"[1e400]")}) as source:
        with pytest.raises(UsageError, match=r"^--source-registry http://127\.0\.0\.1:[0-9]+: GET .*/versions\?deleted="
                                             r"true: unexpected answer: \$\[0\] = 1e400: Number out of range$"):
            SchemaTranslation(source.url, "http://127.0.0.1:9")
