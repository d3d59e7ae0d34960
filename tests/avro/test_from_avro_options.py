"""from_avro's options with Spark's names, against Spark's own ``from_avro`` (spark-avro's jar) on
the same bytes: ``enableStableIdentifiersForUnionType`` (+ ``stableIdentifierPrefixForUnionType``)
and ``datetimeRebaseMode`` (CORRECTED, LEGACY, EXCEPTION), through kafkarec's data source
(``valueFormat=avro``) and ``spark_udfs.from_registry``, by ``spark-submit --py-files <kafkarec
wheel>`` from a bare Python (a job of the one user-way application, tests/support/spark/user_app.py).
Bodies written by fastavro; dates and timestamps on both sides of the calendar switches
(1582-10-15, 1900-01-01T00:00:00Z), inside unions, arrays and maps.  Unit tests of the same
rules in-process (kafkarec.avro, kafkarec.avro.rebase) run everywhere."""
from __future__ import annotations

import datetime as dt
import json
import os
import random

import numpy as np
import pytest

from support.oracles.avro_helpers import fastavro_write
from kafkarec import avro
from kafkarec.avro import rebase as rb
from kafkarec.errors import AvroSchemaError, SchemaResolutionError
from support.spark.user_app import UserAppJob

SCHEMA = {
    "type": "record", "name": "Event", "namespace": "t", "fields": [
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "at_ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "at_us", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}]},
        {"name": "local_us", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
        {"name": "choice", "type": ["int", "string",
                                    {"type": "record", "name": "Addr", "fields": [
                                        {"name": "since", "type": {"type": "int", "logicalType": "date"}}]},
                                    {"type": "array", "items": "long"},
                                    {"type": "map", "values": "boolean"}]},
        {"name": "maybe", "type": ["null", "int", "string"]},
        {"name": "days", "type": {"type": "array", "items": {"type": "int", "logicalType": "date"}}},
        {"name": "stamps", "type": {"type": "map", "values": {"type": "long", "logicalType": "timestamp-micros"}}},
    ]}

CASES = {
    "defaults": {},
    "stable": {"enableStableIdentifiersForUnionType": "true"},
    "stable-prefix": {"enableStableIdentifiersForUnionType": "true", "stableIdentifierPrefixForUnionType": "u_"},
    "stable-off": {"enableStableIdentifiersForUnionType": "false", "stableIdentifierPrefixForUnionType": "u_"},
    "corrected": {"datetimeRebaseMode": "CORRECTED"},
    "legacy": {"datetimeRebaseMode": "LEGACY"},
    "exception": {"datetimeRebaseMode": "EXCEPTION"},
}

NODE = {"type": "record", "name": "Node", "namespace": "t", "fields": [
    {"name": "value", "type": "int"},
    {"name": "label", "type": ["null", "string"], "default": None},
    {"name": "next", "type": ["null", "Node"], "default": None},
    {"name": "kids", "type": {"type": "array", "items": "Node"}, "default": []}]}

RECURSIVE_CASES = {f"recursive-{d}": {"recursiveFieldMaxDepth": str(d)} for d in (1, 2, 3, 5)}

DAY_1582 = rb.LAST_SWITCH_JULIAN_DAY
US_1900 = rb.LAST_SWITCH_JULIAN_MICROS
DAY_US = 86_400_000_000


def _records(n: int = 300, seed: int = 7) -> list:
    r = random.Random(seed)
    # days from year 1 (-719162) to 2200, thick around both switches
    def day():
        return r.choice([r.randint(-719162, 84000), r.randint(DAY_1582 - 400, DAY_1582 + 400),
                         r.randint(-25567 - 400, -25567 + 400)])

    def micros():
        return r.choice([r.randint(-62135596800000000, 7258118400000000),
                         US_1900 + r.randint(-5, 5) * DAY_US + r.randint(-10**6, 10**6),
                         DAY_1582 * DAY_US + r.randint(-20, 20) * DAY_US])

    out = []
    for i in range(n):
        choice = r.choice([r.randint(-5, 5), "s%d" % i, {"since": day()}, [r.randint(-9, 9) for _ in range(2)],
                           {"k": True}])
        out.append({"day": day(), "at_ms": micros() // 1000, "at_us": r.choice([None, micros()]),
                    "local_us": micros(), "choice": choice, "maybe": r.choice([None, 1, "x"]),
                    "days": [day() for _ in range(r.randint(0, 3))],
                    "stamps": {f"k{j}": micros() for j in range(r.randint(0, 2))}})
    return out


def _chain(r: random.Random, depth: int) -> dict:
    node = None
    for i in range(depth):
        node = {"value": r.randint(-99, 99), "label": r.choice([None, f"l{i}"]), "next": node,
                "kids": [{"value": i, "label": None, "next": None, "kids": []}] if r.random() < 0.3 else []}
    return node


def _nodes(n: int = 60, seed: int = 5) -> list:
    r = random.Random(seed)
    return [_chain(r, r.randint(1, 8)) for _ in range(n)]


def _bodies(records, schema=None) -> list:
    return fastavro_write(schema or SCHEMA, records)


# --- in-process: the rules themselves --------------------------------------------------------

def test_stable_union_names_follow_spark():
    s = avro.parse_schema(SCHEMA)
    t = avro.arrow_type_of(s, stable_union_prefix="member_")
    assert [f.name for f in t.field("choice").type] == ["member_int", "member_string", "member_Addr",
                                                         "member_array", "member_map"]
    # a union with null: members of the other branches, the column nullable
    assert [f.name for f in t.field("maybe").type] == ["member_int", "member_string"]
    assert [f.name for f in avro.arrow_type_of(s, stable_union_prefix="").field("choice").type][:2] == ["int", "string"]
    assert [f.name for f in avro.arrow_type_of(s).field("choice").type] == [f"member{i}" for i in range(5)]


def test_stable_union_names_that_collide_regardless_of_case_are_refused():
    s = avro.parse_schema(["int", {"type": "record", "name": "INT", "fields": []}])
    assert [f.name for f in avro.arrow_type_of(s)] == ["member0", "member1"]
    with pytest.raises(AvroSchemaError, match="regardless of case"):
        avro.AvroDecoder(s, stable_union_prefix="member_")


def test_spark_option_names_map_to_decoder_arguments():
    kw = avro.spark_options({"ENABLESTABLEIDENTIFIERSFORUNIONTYPE": "True", "datetimeRebaseMode": "legacy"},
                            time_zone="UTC")
    assert kw == {"stable_union_prefix": "member_", "datetime_rebase_mode": "LEGACY", "time_zone": "UTC",
                  "recursive_field_max_depth": -1}
    assert avro.spark_options({"recursiveFieldMaxDepth": "4"})["recursive_field_max_depth"] == 4
    with pytest.raises(AvroSchemaError, match="an integer"):
        avro.spark_options({"recursiveFieldMaxDepth": "deep"})
    assert avro.spark_options({})["stable_union_prefix"] is None
    with pytest.raises(SchemaResolutionError, match="datetimeRebaseMode"):
        avro.spark_options({"datetimeRebaseMode": "sometimes"})
    with pytest.raises(AvroSchemaError, match="true or false"):
        avro.spark_options({"enableStableIdentifiersForUnionType": "yes please"})


def test_rebase_modes_on_nested_columns():
    recs = _records(200)
    bodies = _bodies(recs)
    plain, e0 = avro.decode_values(bodies, avro.parse_schema(SCHEMA))
    assert e0.null_count == len(e0)
    legacy, e1 = avro.decode_values(bodies, avro.parse_schema(SCHEMA), datetime_rebase_mode="LEGACY")
    assert e1.null_count == len(e1)
    exc, e2 = avro.decode_values(bodies, avro.parse_schema(SCHEMA), datetime_rebase_mode="EXCEPTION")
    for i, rec in enumerate(recs):
        dates = [rec["day"], *rec["days"]] + ([rec["choice"]["since"]] if isinstance(rec["choice"], dict)
                                              and "since" in rec["choice"] else [])
        stamps = [rec["at_ms"] * 1000, *rec["stamps"].values()] + ([rec["at_us"]] if rec["at_us"] is not None else [])
        ancient = any(d < DAY_1582 for d in dates) or any(m < US_1900 for m in stamps)
        assert (e2[i].as_py() is not None) == ancient, rec
        if ancient:
            assert exc[i].as_py() is None and "datetimeRebaseMode EXCEPTION" in e2[i].as_py()
        else:
            assert exc[i].as_py() == plain[i].as_py()
        row = legacy[i].as_py()
        # local-timestamp is never rebased; dates as the calendar rule says
        assert row["local_us"] == plain[i].as_py()["local_us"]
        want_day = int(rb.julian_to_gregorian_days(np.array([rec["day"]]))[0])
        assert row["day"] == dt.date(1970, 1, 1) + dt.timedelta(days=want_day)


def test_legacy_timestamps_need_the_utc_session_time_zone():
    s = avro.parse_schema(SCHEMA)
    body = _bodies([dict(_records(1)[0], at_ms=US_1900 // 1000 - 10**9)])
    with pytest.raises(SchemaResolutionError, match="UTC session time zone"):
        avro.decode_values(body, s, datetime_rebase_mode="LEGACY", time_zone="America/New_York")
    # dates alone do not depend on the zone
    d = avro.parse_schema({"type": "int", "logicalType": "date"})
    v, _ = avro.decode_values([b"\x01"], d, datetime_rebase_mode="LEGACY", time_zone="America/New_York")
    assert v.to_pylist() == [dt.date(1970, 1, 1) - dt.timedelta(days=1)]


def _cut(node, depth: int, max_depth: int):
    """What Spark's from_avro keeps of a Node chain at recursiveFieldMaxDepth=max_depth."""
    out = {"value": node["value"], "label": node["label"]}
    if depth + 1 < max_depth:
        out["next"] = None if node["next"] is None else _cut(node["next"], depth + 1, max_depth)
        out["kids"] = [_cut(k, depth + 1, max_depth) for k in node["kids"]]
    return out


def test_recursive_schemas_parse_and_read_only_with_a_depth():
    s = avro.parse_schema(NODE)
    assert s.recursive and not avro.parse_schema(SCHEMA).recursive
    assert avro.parse_schema(json.dumps(s.to_json())).recursive           # written back, parsed again
    with pytest.raises(AvroSchemaError, match="recursiveFieldMaxDepth between 1 and 12"):
        avro.AvroDecoder(s)
    with pytest.raises(AvroSchemaError, match="cut at a depth"):
        avro.arrow_type_of(s)
    assert avro.arrow_type_of(avro.unroll(s, 2)) == avro.AvroDecoder(s, recursive_field_max_depth=2).arrow_type
    with pytest.raises(AvroSchemaError, match="given 13"):
        avro.AvroDecoder(s, recursive_field_max_depth=13)
    t1 = avro.AvroDecoder(s, recursive_field_max_depth=1).arrow_type
    assert [f.name for f in t1] == ["value", "label"]
    t2 = avro.AvroDecoder(s, recursive_field_max_depth=2).arrow_type
    assert [f.name for f in t2] == ["value", "label", "next", "kids"]
    assert [f.name for f in t2.field("next").type] == ["value", "label"]


@pytest.mark.parametrize("max_depth", [1, 2, 3, 12])
def test_recursive_values_are_cut_where_spark_cuts_them(max_depth):
    recs = _nodes()
    values, errors = avro.decode_values(_bodies(recs, NODE), avro.parse_schema(NODE),
                                        recursive_field_max_depth=max_depth)
    assert errors.null_count == len(errors)
    assert values.to_pylist() == [_cut(r, 0, max_depth) for r in recs]


def test_recursion_deeper_than_the_skip_bound_is_a_row_error():
    deep = _chain(random.Random(1), 1500)
    bodies = _bodies([_nodes(1)[0], deep, _nodes(1, seed=9)[0]], NODE)
    values, errors = avro.decode_values(bodies, avro.parse_schema(NODE), recursive_field_max_depth=2)
    assert errors[0].as_py() is None and errors[2].as_py() is None
    assert "nested deeper than 1000" in errors[1].as_py() and values[1].as_py() is None
    assert values[2].as_py() == _cut(_nodes(1, seed=9)[0], 0, 2)


def test_decoders_with_options_pickle():
    import pickle
    dec = avro.AvroDecoder(avro.parse_schema(SCHEMA), stable_union_prefix="x_", datetime_rebase_mode="EXCEPTION")
    again = pickle.loads(pickle.dumps(dec))
    assert again.arrow_type == dec.arrow_type and again._options == dec._options
    rec = avro.AvroDecoder(avro.parse_schema(NODE), recursive_field_max_depth=3)
    rec.add_writer(1, avro.parse_schema(NODE))
    again = pickle.loads(pickle.dumps(rec))
    assert again.arrow_type == rec.arrow_type


# --- Spark's own from_avro, side by side -------------------------------------------------------

def _prepare_spark_job(request, work):
    """Both topics' bodies in a log directory, and the job's spec: each topic's schema and option
    sets, and the sample of days and instants for Spark's own RebaseDateTime."""
    from kafkarec import RecordBatchBuilder
    for topic, bodies in (("events", _bodies(_records(300))), ("nodes", _bodies(_nodes(), NODE))):
        part = work / "logs" / f"{topic}-0"
        part.mkdir(parents=True)
        b = RecordBatchBuilder(base_offset=0)
        for i, body in enumerate(bodies):
            b.append(body, timestamp=1_700_000_000_000 + i)
        (part / "00000000000000000000.log").write_bytes(b.build())
    r = random.Random(3)
    sample = {"days": [r.randint(-1_000_000, 100) for _ in range(3000)] + list(range(DAY_1582 - 15, DAY_1582 + 3)),
              "micros": [r.randint(-40_000_000_000_000_000, 0) for _ in range(3000)]}
    spec = work / "spec.json"
    spec.write_text(json.dumps({"topics": {"events": {"schema": SCHEMA, "cases": CASES},
                                           "nodes": {"schema": NODE, "cases": RECURSIVE_CASES}},
                                "sample": sample}))
    return [work / "logs", spec], sample


JOB = UserAppJob("from-avro-options", os.path.join(os.path.dirname(os.path.abspath(__file__)), "jobs",
                                                   "from_avro_options_job.py"),
                 _prepare_spark_job, kafka_source=True)


@pytest.mark.spark
@pytest.mark.slow
def test_options_equal_spark_from_avro(user_app):
    from support.spark import spark_helpers as H
    why = H.spark_available()
    if why:
        pytest.skip(why)
    out, sample = user_app.outcome(JOB)

    jvm = out["jvm"]
    assert jvm["lastSwitchJulianTs"] == rb.LAST_SWITCH_JULIAN_MICROS
    assert jvm["lastSwitchJulianDay"] == rb.LAST_SWITCH_JULIAN_DAY
    assert rb.julian_to_gregorian_days(np.array(sample["days"])).tolist() == jvm["days"]
    mic = np.array(sample["micros"], dtype=np.int64)
    day = np.floor_divide(mic, DAY_US)
    assert (mic + (rb.julian_to_gregorian_days(day) - day) * DAY_US).tolist() == jvm["micros"]

    for name, got in out["cases"].items():
        spark = got["from_avro"]
        # a row from_avro refuses (PERMISSIVE) is a struct of nulls there, a null value with its
        # reason in _corrupt_record in kafkarec (from_registry: null)
        spark_rows = [[o, "{}" if j == '{"v":{}}' else j] for o, j, _ in spark["rows"]]
        for label in ("kafkarec", "from_registry"):
            mine = got[label]
            assert mine["type"] == spark["type"], (name, label)
            assert [r[:2] for r in mine["rows"]] == spark_rows, (name, label)
        refused = [o for o, j in spark_rows if j == "{}"]
        assert [r[0] for r in got["kafkarec"]["rows"] if r[2]] == refused, name
        if name == "exception":
            assert len(refused) > 20, "the sample holds ancient values"
            assert all("datetimeRebaseMode EXCEPTION" in r[2] for r in got["kafkarec"]["rows"] if r[2])
    assert "member_Addr" in out["cases"]["stable"]["from_avro"]["type"]
    assert "u_Addr" in out["cases"]["stable-prefix"]["from_avro"]["type"]
    assert out["cases"]["legacy"]["from_avro"]["rows"] != out["cases"]["corrected"]["from_avro"]["rows"]
    assert "next:struct" in out["cases"]["recursive-3"]["from_avro"]["type"]
