"""The four live writers' row layouts: schemas as each project writes them, kafkarec's rows laid
out and their positions read back."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

pa = pytest.importorskip("pyarrow")

import kafkarec  # noqa: E402
from kafkarec.errors import UsageError  # noqa: E402
from kafkarec.lakehouse import LAYOUTS, layout, positions, to_layout  # noqa: E402
from kafkarec.lakehouse.layouts import column_at  # noqa: E402

T = 1_700_000_000_123

RECORD = st.tuples(
    st.one_of(st.none(), st.binary(max_size=6)),                       # key
    st.one_of(st.none(), st.binary(max_size=6)),                       # value
    st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.one_of(st.none(), st.binary(max_size=3))),
             max_size=3),                                              # headers
)


def kafkarec_rows(records, topic="orders", partition=2, first=100):
    """Rows as kafkarec's readers give them (kafkarec.arrow_schema())."""
    n = len(records)
    return pa.RecordBatch.from_pydict({
        "key": [r[0] for r in records], "value": [r[1] for r in records],
        "topic": [topic] * n, "partition": [partition] * n,
        "offset": list(range(first, first + 2 * n, 2)),
        "timestamp": pa.array([T + i for i in range(n)], pa.int64()).cast(pa.timestamp("ms")),
        "timestampType": [0] * n,
        "headers": [[{"key": k, "value": v} for k, v in r[2]] for r in records],
    }, schema=kafkarec.arrow_schema())


@settings(max_examples=60, deadline=None)
@given(records=st.lists(RECORD, max_size=8), name=st.sampled_from(sorted(LAYOUTS)))
def test_rows_round_trip_to_each_layout(records, name):
    lay = layout(name)
    rows = to_layout(kafkarec_rows(records), name)
    assert rows.schema == lay.schema()
    kept = [(100 + 2 * i, r) for i, r in enumerate(records) if not (lay.skips_tombstones and r[1] is None)]
    pos = positions(rows, name, topic="orders")
    assert pos.column("offset").to_pylist() == [o for o, _ in kept]
    assert set(pos.column("partition").to_pylist()) <= {2}
    assert set(pos.column("topic").to_pylist()) <= {"orders"}
    assert rows.column(lay.raw_value).to_pylist() == [r[1] for _, r in kept]
    ts = column_at(rows, lay.timestamp).to_pylist()
    if name in ("kafka-delta-ingest", "redpanda"):
        # microseconds, UTC (kafka-delta-ingest: ms * 1000; Redpanda: timestamptz)
        assert [t.timestamp() * 1000 for t in ts] == [T + (o - 100) // 2 for o, _ in kept]
    else:
        assert ts == [T + (o - 100) // 2 for o, _ in kept]
    if name == "redpanda":
        # no list for a record without headers; keys as written
        assert column_at(rows, ("redpanda", "headers")).to_pylist() == [
            [{"key": k, "value": v} for k, v in r[2]] or None for _, r in kept]
        assert column_at(rows, ("redpanda", "key")).to_pylist() == [r[0] for _, r in kept]
    if name == "automq":
        # a Java map filled in header order: a repeated key keeps its last value
        assert rows.column("_kafka_header").to_pylist() == [list(dict(r[2]).items()) for _, r in kept]
        assert rows.column("_kafka_key").to_pylist() == [r[0] for _, r in kept]


def test_schemas_as_the_writers_make_them():
    typed = pa.struct([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string())])
    s = layout("iceberg-kafka-connect").schema(typed)
    assert s.names == ["id", "name", "_kafka_metadata_topic", "_kafka_metadata_partition",
                       "_kafka_metadata_offset", "_kafka_metadata_timestamp"]
    assert [(f.type, f.nullable) for f in s][2:] == [(pa.string(), False), (pa.int32(), False),
                                                     (pa.int64(), False), (pa.int64(), True)]
    s = layout("kafka-delta-ingest").schema(typed)
    assert s.field("meta").type == pa.struct([pa.field("kafka", pa.struct([
        ("offset", pa.int64()), ("partition", pa.int32()), ("topic", pa.string()),
        ("timestamp", pa.timestamp("us", tz="UTC"))]))])
    s = layout("redpanda").schema(typed)
    assert s.names == ["redpanda", "id", "name"]
    assert [f.name for f in s.field("redpanda").type] == ["partition", "offset", "timestamp", "headers", "key",
                                                          "timestamp_type"]
    assert layout("redpanda").partition_spec[0][:2] == (("redpanda", "timestamp"), "hour")
    s = layout("automq").schema(typed)
    assert s.names == ["id", "name", "_kafka_header", "_kafka_key", "_kafka_metadata"]
    assert layout("automq").topic is None and layout("redpanda").topic is None
    assert layout("iceberg-kafka-connect").topic == ("_kafka_metadata_topic",)


def test_typed_values_lay_out_their_fields():
    typed = pa.struct([pa.field("id", pa.int64()), pa.field("name", pa.string())])
    rows = kafkarec_rows([(b"k", b"x", []), (b"k", None, [])])
    values = pa.array([{"id": 1, "name": "one"}, None], typed)
    rows = rows.set_column(1, pa.field("value", typed), values)
    out = to_layout(rows, "automq")
    assert out.column("id").to_pylist() == [1, None] and out.column("name").to_pylist() == ["one", None]
    out = to_layout(rows, "iceberg-kafka-connect")          # the sink writes no row for a tombstone
    assert out.column("id").to_pylist() == [1]


def test_unknown_layout_names_the_four():
    with pytest.raises(UsageError) as e:
        layout("kafka-connect-s3")
    for name in LAYOUTS:
        assert name in str(e.value)
    assert len(LAYOUTS) == 4


def _stamped(timestamps, first=100):
    rows = kafkarec_rows([(None, b"v", [])] * len(timestamps), first=first)
    return rows.set_column(rows.schema.get_field_index("timestamp"), "timestamp",
                           pa.array(timestamps, pa.int64()).cast(pa.timestamp("ms")))


LONG_MAX_MS = ((1 << 63) - 1) // 1000           # 9223372036854775: the last ms whose us fit a long
HOUR_MIN_MS, HOUR_MAX_MS = -(1 << 31) * 3_600_000, ((1 << 31) - 1) * 3_600_000 + 3_599_999   # an int of hours


@pytest.mark.parametrize("name, fits, bad", [
    ("kafka-delta-ingest", [T, LONG_MAX_MS, -LONG_MAX_MS, -1, 0],
     {1 << 62: "no microseconds", LONG_MAX_MS + 1: "no microseconds", -LONG_MAX_MS - 1: "no microseconds",
      -(1 << 63): "no microseconds"}),
    # Redpanda partitions by hour(redpanda.timestamp): Iceberg's hour is an int
    ("redpanda", [T, HOUR_MAX_MS, HOUR_MIN_MS, -1, 0],
     {1 << 62: "no microseconds", LONG_MAX_MS + 1: "no microseconds", -(1 << 63): "no microseconds",
      LONG_MAX_MS: "an hour since the epoch past an int", HOUR_MAX_MS + 1: "an hour since the epoch past an int",
      HOUR_MIN_MS - 1: "an hour since the epoch past an int"}),
])
def test_microsecond_timestamps_fit_or_name_the_record(name, fits, bad):
    """kafka-delta-ingest's and Redpanda's ``ms * 1000`` (unchecked i64/int64: wraps to another
    instant) is checked: a CreateTime whose microseconds pass a long (or, for Redpanda's hourly
    partitions, whose hour passes an int) is a LayoutError naming the record and its timestamp,
    never 1970 or year -292,277; the extremes that fit are exact."""
    from kafkarec.errors import LayoutError
    out = to_layout(_stamped(fits), name)
    us = column_at(out, layout(name).timestamp).cast(pa.int64()).to_pylist()
    assert us == [ms * 1000 for ms in fits]
    for ms, reason in bad.items():
        with pytest.raises(LayoutError) as info:
            to_layout(_stamped(fits + [ms, T]), name)
        err = info.value
        assert (err.topic, err.partition, err.offset, err.layout) == ("orders", 2, 100 + 2 * len(fits), name)
        assert str(err).startswith(f"orders-2 offset {100 + 2 * len(fits)}: timestamp {ms} ms has {reason}")


def test_the_hour_bounds_are_icebergs():
    """The hours of the extremes Redpanda's rows take are Iceberg's own (pyiceberg's transform), in an int."""
    transforms = pytest.importorskip("pyiceberg.transforms")
    types = pytest.importorskip("pyiceberg.types")
    hour = transforms.HourTransform().transform(types.TimestamptzType())
    assert (hour(HOUR_MIN_MS * 1000), hour(HOUR_MAX_MS * 1000)) == (-(1 << 31), (1 << 31) - 1)
    assert (hour(HOUR_MIN_MS * 1000 - 1), hour(HOUR_MAX_MS * 1000 + 1000)) == (-(1 << 31) - 1, 1 << 31)


@pytest.mark.parametrize("name", ["iceberg-kafka-connect", "automq"])
def test_millisecond_layouts_keep_any_long(name):
    """The Iceberg sink and AutoMQ keep the record's ms as a long: every CreateTime fits."""
    stamps = [1 << 62, (1 << 63) - 1, -(1 << 63), T]
    out = to_layout(_stamped(stamps), name)
    assert column_at(out, layout(name).timestamp).cast(pa.int64()).to_pylist() == stamps
