"""from_protobuf's convert.any.fields.to.json: every google.protobuf.Any value kafkarec prints equals what
protobuf-java-util's JsonFormat prints with the printer Spark's ProtobufDeserializer builds
(tests/java/AnyJsonOracle.java, run on Maven's protobuf-java and protobuf-java-util 4.36.2), for random
messages: the schema's own messages, well-known types, Any in Any, repeated and map Any fields, awkward strings
and floats, unknown type URLs and bytes that do not parse.  A record holding an Any Java cannot print is a
failed record, as Spark's row is.

The text is compared with Java 19 or later where one is installed (JAVA_HOME, /usr/lib/jvm): its
Float.toString is the shortest-digits rule kafkarec follows.  With JDK 17 (the ``java`` on PATH here) the texts
are equal except where JDK 17's Float.toString prints more digits for the same float; those are counted.
"""
from __future__ import annotations


import pyarrow as pa
import pytest

from kafkarec import protobuf as kp
from kafkarec.errors import ProtobufDecodeError
from kafkarec.protobuf.json_print import AnyJson
from kafkarec.registry.typed import message_indexes

from support.oracles.any_messages import FILES, Maker, java_major, jdks, run_oracle, same_but_float_digits  # noqa: E402
from support.oracles.protos import Generated  # noqa: E402

PAYLOADS = 400


@pytest.fixture(scope="module")
def world():
    gen = Generated(FILES)
    legacy = "kranyjson/legacy2.proto"
    schema = kp.ProtobufSchema.from_text(FILES["kranyjson/any.proto"], {legacy: FILES[legacy]},
                                         name="kranyjson/any.proto")
    return gen.modules, schema


@pytest.fixture(scope="module")
def java_setup():
    from support import jvm
    cp = jvm.classpath("jvm/protobuf")
    found = jdks()
    if not found:
        pytest.skip("no java")
    return cp, found


@pytest.fixture(scope="module")
def holder_payloads(world):
    """{enums_as_ints: random Holder payloads}."""
    modules, _ = world
    out = {}
    for enums_as_ints in (False, True):
        maker = Maker(modules, seed=17 + enums_as_ints)
        out[enums_as_ints] = [maker.holder() for _ in range(PAYLOADS)]
    return out


@pytest.fixture(scope="module")
def java_answers(world, java_setup, holder_payloads):
    """{enums_as_ints: {java: (version, per payload)}}: both printers' runs in one JVM of each JDK."""
    _, schema = world
    cp, javas = java_setup
    answers = {mode: {} for mode in holder_payloads}
    for java in javas:
        version, per_run = run_oracle(java, cp, schema.descriptor_set,
                                      [("kr.any.Holder", mode, holder_payloads[mode]) for mode in holder_payloads])
        for mode, out in zip(holder_payloads, per_run):
            answers[mode][java] = (version, out)
    return answers


def _decode(schema, payloads: list, enums_as_ints: bool):
    # (Inner's Struct and Value are recursive messages: Spark reads them only to a depth)
    options = {"convert.any.fields.to.json": "true", "enums.as.ints": str(enums_as_ints).lower(),
               "recursive.fields.max.depth": "2"}
    dec = kp.ProtobufDecoder(schema, "kr.any.Holder", **kp.spark_options(options))
    dec.add_writer(1, schema)
    prefix = message_indexes(schema, "kr.any.Holder")
    values = pa.array([prefix + p for p in payloads], pa.binary())
    arr, err = dec.decode(values, pa.array([1] * len(payloads), pa.int64()),
                          pa.array([0] * len(payloads), pa.int32()))
    assert arr.type == dec.arrow_type
    return dec, arr, err.to_pylist()


def _anys(shape, value, out: list) -> list:
    """The Any columns' texts of a decoded row (an Arrow scalar), in the order Java's walk visits them."""
    if not value.is_valid:
        return out
    if shape.kind == "anyjson":
        out.append(value.as_py())
    elif shape.kind == "struct":
        for name, i in shape.names.items():
            _anys(shape.children[i], value[name], out)
    elif shape.kind == "list":
        for item in value.values:
            _anys(shape.element, item, out)
    elif shape.kind == "map":
        for item in value.values.field("value"):
            _anys(shape.value, item, out)
    return out


@pytest.mark.parametrize("enums_as_ints", [False, True], ids=["enum-names", "enums.as.ints"])
def test_any_fields_print_as_javas_json_format(world, java_setup, holder_payloads, java_answers, enums_as_ints):
    _, schema = world
    _, javas = java_setup
    payloads = holder_payloads[enums_as_ints]
    dec, arr, errors = _decode(schema, payloads, enums_as_ints)
    printer = AnyJson(schema, enums_as_ints)
    reference = max(javas, key=java_major)
    stats = {"payloads": len(payloads), "anys": 0, "any_errors": 0, "failed_rows": 0, "jdk17_float_digits": 0}
    results = java_answers[enums_as_ints]
    version, expected = results[reference]
    for i, (want, error) in enumerate(zip(expected, errors)):
        kind, content = want
        assert kind == "ROW", (i, content)            # (the outer message always parses)
        java_failed = any(tag == "E" for tag, _, _ in content)
        # the decoder: the record fails where Java's printer throws, else its Any columns hold Java's text
        assert (error is not None) == java_failed, (i, error, content)
        if error is None:
            assert _anys(dec._root, arr[i], []) == [text for _, _, text in content], i
        else:
            stats["failed_rows"] += 1
            assert "google.protobuf.Any as JSON" in error and error.startswith("at byte "), error
        # each Any on its own (as Java re-serialized it): the same text, or an error where Java throws
        for tag, raw, text in content:
            stats["anys"] += 1
            if tag == "E":
                stats["any_errors"] += 1
                with pytest.raises(ProtobufDecodeError):
                    printer(raw)
            else:
                assert printer(raw).decode("utf-8") == text, (i, raw.hex())
    for java, (other_version, other) in results.items():
        if java == reference:
            continue
        for (_, mine), (_, theirs) in zip(expected, other):
            for (tag, _, text), (otag, _, otext) in zip(mine, theirs):
                assert tag == otag
                if text != otext:
                    assert java_major(java) < 19 and same_but_float_digits(text, otext), (other_version, text,
                                                                                           otext)
                    stats["jdk17_float_digits"] += 1
    print(f"\nJava {version} (reference) and {[v for j, (v, _) in results.items() if j != reference]}: {stats}")
    assert stats["anys"] > 3 * PAYLOADS and stats["any_errors"] > 20 and stats["failed_rows"] > 20


def test_the_column_is_a_string_and_recursion_through_any_is_none(world):
    _, schema = world
    plain = kp.ProtobufDecoder(schema, "kr.any.Holder", recursive_fields_max_depth=2).arrow_type
    assert plain.field("details").type == pa.struct([pa.field("type_url", pa.string()),
                                                     pa.field("value", pa.binary())])
    t = kp.ProtobufDecoder(schema, "kr.any.Holder", convert_any_fields_to_json=True,
                           recursive_fields_max_depth=2).arrow_type
    assert t.field("details").type == pa.string()
    assert t.field("many").type == pa.list_(pa.string())
    assert t.field("by").type == pa.map_(pa.string(), pa.string())
    assert t.field("inner").type.field("deeps").type.item_type.field("any").type == pa.string()
    assert kp.spark_options({"Convert.Any.Fields.To.Json": "TRUE"}) == {"convert_any_fields_to_json": True}


def test_unresolvable_and_corrupt_any_fail_the_record_at_the_any(world):
    modules, schema = world
    m = modules["kranyjson/any.proto"]
    good = m.Holder(event="ok")
    good.details.Pack(m.Inner(s="x", i64=5))
    unknown = m.Holder(event="unknown")
    unknown.details.type_url = "type.googleapis.com/kr.any.Missing"
    corrupt = m.Holder(event="corrupt")
    corrupt.details.type_url = "type.googleapis.com/kr.any.Inner"
    corrupt.details.value = b"\x0a\x05ab"
    payloads = [good.SerializeToString(), unknown.SerializeToString(), corrupt.SerializeToString(), b""]
    dec, arr, errors = _decode(schema, payloads, False)
    rows = arr.to_pylist()
    assert rows[0]["details"] == '{"@type":"type.googleapis.com/kr.any.Inner","s":"x","i64":"5"}'
    assert errors[0] is None and rows[3] == {"event": None, "details": None, "many": [], "by": [],
                                             "inner": None}
    assert rows[1] is None and rows[2] is None
    # the Any starts after the message indexes ([1]: two bytes), the event field (tag, length, 7 bytes) and its
    # own tag and length
    start = 2 + 2 + len("unknown") + 2
    assert errors[1] == (f"at byte {start} of the value: google.protobuf.Any as JSON: cannot find type for url "
                         "'type.googleapis.com/kr.any.Missing': the schema has no message kr.any.Missing")
    assert errors[2].startswith("at byte ") and "declares 5 bytes but only 2 remain" in errors[2]


def test_decoders_printing_any_pickle(world):
    import pickle
    modules, schema = world
    m = modules["kranyjson/any.proto"]
    h = m.Holder()
    h.details.Pack(m.Inner(color=2))
    dec, arr, _ = _decode(schema, [h.SerializeToString()], True)
    rows = arr.to_pylist()
    again = pickle.loads(pickle.dumps(dec))
    payload = pa.array([message_indexes(schema, "kr.any.Holder") + h.SerializeToString()], pa.binary())
    ids, body = pa.array([1], pa.int64()), pa.array([0], pa.int32())
    assert again.decode(payload, ids, body)[0].to_pylist() == rows
    assert rows[0]["details"] == '{"@type":"type.googleapis.com/kr.any.Inner","color":2}'
