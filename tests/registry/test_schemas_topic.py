"""``_schemas`` replayed as Confluent's registry replays it (KafkaStoreReaderThread,
KafkaStoreMessageHandler, InMemoryCache), from log directories written with kafkarec's builder."""
from __future__ import annotations

import base64
import hashlib
import json
import os
import pickle

import pytest

import kafkarec
import kafkarec.registry as kr
from kafkarec.registry import replay

from support.registry.schemas_every_kind import A1, check_every_kind, every_kind
from support.registry.schemas_log import confluent_key, schema_value, write_partition

def test_replay_every_record_kind():
    check_every_kind(replay(every_kind()))


def test_replay_from_log_directory_and_partition_folder(tmp_path):
    recs = every_kind()
    # A transaction marker in the middle: not a registry record.
    write_partition(str(tmp_path / "logs" / "_schemas-0"), [(k, v) for _, k, v in recs],
                    [o for o, _, _ in recs], split_every=7)
    other = tmp_path / "logs" / "orders-0"
    write_partition(str(other), [(None, b"x")])
    for src in (tmp_path / "logs", tmp_path / "logs" / "_schemas-0", f"file://{tmp_path}/logs"):
        reg = kr.load(str(src))
        check_every_kind(reg)
        assert reg.record_counts["NOOP"] == 1
        # Plain data: pickles (what Spark ships) and answers the same afterwards.
        again = pickle.loads(pickle.dumps(reg))
        check_every_kind(again)
        assert again.by_id(2) == reg.by_id(2)


def test_compacted_log_with_gaps_and_control_records(tmp_path):
    folder = tmp_path / "_schemas-0"
    os.makedirs(folder)
    data = kafkarec.build_batch([schema_value("a-value", 1, 1, '"int"')],
                                [confluent_key("SCHEMA", "a-value", 1)], offsets=[5])
    b = kafkarec.RecordBatchBuilder(base_offset=6, is_transactional=True, producer_id=3,
                                    producer_epoch=0, is_control=True)
    b.append_control(1, {"coordinatorEpoch": 0})
    data += b.build()
    data += kafkarec.build_batch([schema_value("a-value", 2, 2, '"long"')],
                                 [confluent_key("SCHEMA", "a-value", 2)], offsets=[40])
    (folder / "00000000000000000000.log").write_bytes(data)
    reg = kr.load(str(folder))
    assert reg.versions("a-value") == [1, 2] and not reg.problems
    assert kr.load(str(folder), as_of_offset=39).versions("a-value") == [1]
    assert kr.load(str(folder), as_of_offset=40).versions("a-value") == [1, 2]


def test_as_of_offset_is_inclusive():
    recs = every_kind()
    reg = replay(recs, as_of_offset=10)
    assert reg.by_id(9).schema == '"int"'           # the tombstone at 11 not applied yet
    assert replay(recs, as_of_offset=11).by_id(9) is None


def test_md5_and_guid():
    # GUID: MD5 over the schema text (and references, metadata, rule set) as the registry
    # computes it; a stored md5 field wins.
    reg = replay([(0, confluent_key("SCHEMA", "s", 1), schema_value("s", 1, 7, A1))])
    e = reg.by_id(7)
    assert e.guid.replace("-", "") == hashlib.md5(A1.encode()).hexdigest()
    assert reg.id_for_guid(hashlib.md5(A1.encode()).digest()) == 7
    stored = bytes(range(16))
    v = json.loads(schema_value("t", 1, 8, '"int"'))
    v["md5"] = base64.b64encode(stored).decode()
    reg = replay([(0, confluent_key("SCHEMA", "t", 1), json.dumps(v).encode())])
    assert reg.id_for_guid(stored) == 8
    # References enter the hash: name, subject, then the version as 4 big-endian bytes.
    refs = [{"name": "n", "subject": "s", "version": 1}]
    reg = replay([(0, confluent_key("SCHEMA", "u", 1), schema_value("u", 1, 9, A1, references=refs))])
    assert reg.by_id(9).guid.replace("-", "") == hashlib.md5(A1.encode() + b"ns\0\0\0\1").hexdigest()


def test_missing_schemas_topic_is_an_error(tmp_path):
    write_partition(str(tmp_path / "orders-0"), [(None, b"x")])
    with pytest.raises(kr.RegistryError):
        kr.read_schemas_log(str(tmp_path))


def test_hostile_values_are_problems_not_crashes():
    deep = b"[" * 100000 + b"]" * 100000
    recs = [(0, deep, b"{}"), (1, confluent_key("SCHEMA", "s", 1), deep),
            (2, confluent_key("SCHEMA", "s", 1), b'{"subject":"s","version":1,"id":"x","schema":"1"}'),
            (3, confluent_key("SCHEMA", "s", 1), b'{"subject":"s","version":1,"id":1,"schema":"1","references":[1]}'),
            (4, confluent_key("DELETE_SUBJECT", "s"), b'{"subject":"s"}'),
            (5, b"\xff\xfe", None)]
    reg = replay(recs)
    assert len(reg.problems) == 6 and not len(reg)


@pytest.mark.parametrize("extra", [
    '"references": 5', '"references": "ab"', '"references": {"a": 1}',
    '"metadata": {"tags": 1}', '"metadata": {"tags": {"f": "x"}}', '"metadata": {"tags": {"f": [1]}}',
    '"metadata": {"properties": []}', '"metadata": {"properties": {"k": {}}}', '"metadata": {"sensitive": "x"}',
    '"metadata": {"sensitive": [[]]}', '"ruleSet": {"domainRules": {}}', '"ruleSet": {"domainRules": [1]}',
    '"ruleSet": {"migrationRules": [{"name": 1}]}', '"ruleSet": {"domainRules": [{"tags": "t"}]}',
    '"ruleSet": {"domainRules": [{"params": {"k": 1}}]}', '"ruleSet": {"domainRules": [{"disabled": "no"}]}',
    '"ruleSet": {"enableAt": {}}', '"metadata": 3', '"ruleSet": []',
])
def test_schema_values_of_other_json_shapes_are_skipped_with_a_reason(extra):
    # fuzzing: TypeError/AttributeError escaped the replay; the registry skips a record it cannot read
    good = b'{"subject":"s","version":1,"id":1,"schema":"\\"int\\""}'
    bad = ('{"subject":"s","version":2,"id":2,"schema":"\\"long\\"",' + extra + '}').encode()
    reg = replay([(0, confluent_key("SCHEMA", "s", 1), good), (1, confluent_key("SCHEMA", "s", 2), bad)])
    assert len(reg) == 1 and len(reg.problems) == 1, reg.problems
    assert reg.by_id(1) is not None and reg.by_id(2) is None


def test_delete_subject_naming_a_huge_version_is_quick():
    # fuzzing: DELETE_SUBJECT up to version 2147483647 looped over every number up to it
    import time
    good = b'{"subject":"s","version":1,"id":1,"schema":"\\"int\\""}'
    started = time.monotonic()
    reg = replay([(0, confluent_key("SCHEMA", "s", 1), good),
                  (1, confluent_key("DELETE_SUBJECT", "s"), b'{"subject":"s","version":2147483647}')])
    assert time.monotonic() - started < 2
    assert reg.problems == [] and reg.subjects() == [] and reg.subjects(deleted=True) == ["s"]


def test_a_version_registered_again_under_another_id_leaves_its_old_id():
    # fuzzing: the old id kept pointing at the version, so by_id(old) gave the new id's entry
    # (or None after a hard delete) while ids() still listed it
    a = b'{"subject":"s","version":1,"id":1,"schema":"\\"int\\""}'
    b = b'{"subject":"s","version":1,"id":2,"schema":"\\"long\\""}'
    reg = replay([(0, confluent_key("SCHEMA", "s", 1), a), (1, confluent_key("SCHEMA", "s", 1), b)])
    assert reg.ids() == [2] and reg.by_id(1) is None and reg.by_id(2).schema == '"long"'
    reg = replay([(0, confluent_key("SCHEMA", "s", 1), a), (1, confluent_key("SCHEMA", "s", 1), b),
                  (2, confluent_key("SCHEMA", "s", 1), None)])
    assert reg.ids() == [] and reg.by_id(2) is None
