"""The read specification (spark_udfs.read.spec): options parsed once, at the data source's boundary,
built here from plain dicts (no Spark session)."""
from __future__ import annotations

import dataclasses
import os
import pickle

import pytest

from kafkarec.errors import SelectionError, UsageError
from support.spark import spark_helpers as H
from spark_udfs.read.options import OWN_OPTIONS, markdown_table
from spark_udfs.read.spec import read_spec


def test_a_spec_is_frozen_typed_and_pickles():
    spec = read_spec({"path": "/logs", "subscribe": "orders", "maxPartitionBytes": "1m",
                      "kafka.isolation.level": "read_committed", "mode": "dropmalformed",
                      "maxRecordsPerBatch": "100", "view": "LATEST", "dedupeBufferSize": "1m",
                      "valueFormat": "Avro", "valueReaderSchema": '"string"'})
    assert spec.config.paths == ("/logs",) and spec.selection == {"topics": "orders"}
    assert spec.config.read_committed and spec.config.mode == "DROPMALFORMED" and spec.view == "latest"
    assert (spec.limits.max_partition_bytes, spec.config.max_rows) == (1 << 20, 100)
    assert spec.typed.formats == {"value": "avro"} and spec.typed.reader_schemas == {"value": '"string"'}
    assert spec.config.listed
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.view = "log"
    # the binary read under the typed one: no typed options, headers on
    plain = spec.plain()
    assert plain.typed is None and plain.columns.include_headers and "valuereaderschema" not in plain.given
    batch = plain.for_batch("R")
    assert pickle.loads(pickle.dumps(batch)) == batch and batch.parsed_selection.topics == {"orders"}


@pytest.mark.parametrize("options, message", [
    ({"mode": "LENIENT"}, "mode must be one of PERMISSIVE, DROPMALFORMED, FAILFAST, not 'LENIENT'"),
    ({"view": "newest"}, "view must be one of log, latest, not 'newest'"),
    ({"cdc": "maxwell"}, "cdc must be one of debezium, not 'maxwell'"),
    ({"valueFormat": "xml"}, "option valueFormat: one of registry, avro, protobuf, json, not 'xml'"),
    ({"keyFormat": "csv"}, "option keyFormat: one of registry, avro, protobuf, json"),
    ({"verifyCrc": "yes"}, "option verifycrc must be true or false, got 'yes'"),
    ({"maxPartitionBytes": "lots"}, "option maxPartitionBytes: expected a byte size like 128m"),
    ({"maxRecordsPerBatch": "0"}, "option maxRecordsPerBatch must be positive"),
    ({"maxOffsetsPerTrigger": "many"}, "option maxOffsetsPerTrigger must be positive"),
    ({"maxTriggerDelay": "soon"}, "option maxTriggerDelay: not a duration like 15m or 500ms"),
    ({"valueFormat": "registry", "registryAsOfOffset": "last"}, "option registryAsOfOffset must be an offset"),
    ({"dedupeBufferSize": "10"}, "option dedupeBufferSize must be at least"),
    ({"view": "latest", "includeControl": "true"}, "includeControl=true cannot be used with view=latest"),
    # the Kafka source's refusals, in its words (spark_udfs.read.options.normalize)
    ({"subscribe": "a", "assign": '{"a":[0]}'}, "Only one of the following options"),
    ({"topics": "a", "subscribePattern": "a"}, "Only one of the following options"),
    ({"subscribe": " , "}, "No topics to subscribe to"),
    ({"subscribePattern": " "}, "Pattern to subscribe is empty"),
    ({"assign": "a:0"}, "No topicpartitions to assign"),
    ({"kafka.isolation.level": "serializable"}, "read_committed or read_uncommitted"),
    ({"kafka.auto.offset.reset": "earliest"}, "startingOffsets"),
    ({"kafka.value.deserializer": "x"}, "value.deserializer"),
    ({"minPartitions": "0"}, "minPartitions must be positive"),
    ({"includeHeaders": "yes"}, "includeHeaders must be true or false"),
    ({"readCommitted": "true", "kafka.isolation.level": "read_uncommitted"}, "disagree"),
    ({"minOffsetsPerTrigger": "9", "maxOffsetsPerTrigger": "3"}, "is higher than the"),
])
def test_a_wrong_value_is_refused_naming_the_option_and_what_it_accepts(options, message):
    # kafkarec's UsageError, a ValueError still for callers that catch that
    with pytest.raises(UsageError, match=message.replace("(", r"\(")) as refused:
        read_spec({"path": "/logs", **options})
    assert isinstance(refused.value, ValueError)


@pytest.mark.parametrize("name, meant", [
    ("startingOffset", "startingOffsets"), ("endingoffsetsbytimestamps", "endingOffsetsByTimestamp"),
    ("maxPartitonBytes", "maxPartitionBytes"), ("valueformats", "valueFormat"),
    ("includeHeader", "includeHeaders"), ("failOnDataLos", "failOnDataLoss"),
])
def test_a_name_close_to_a_known_one_gets_a_did_you_mean(name, meant):
    with pytest.raises(UsageError, match=f"unknown option '{name.lower()}'; did you mean '{meant}'"):
        read_spec({"path": "/logs", name: "1"})


def test_spark_and_kafka_source_names_keep_working():
    given = {"path": "/logs", "pathGlobFilter": "*.log", "recursiveFileLookup": "false",
             "kafka.bootstrap.servers": "b:9092", "kafka.fetch.max.bytes": "1", "groupIdPrefix": "g",
             "failOnDataLoss": "false", "maxOffsetsPerTrigger": "5", "minOffsetsPerTrigger": "1",
             "maxTriggerDelay": "30s", "includeHeaders": "true", "minPartitions": "3",
             "spark.some.setting": "x"}
    spec = read_spec(given)
    local = spec.for_batch("L")          # the stream-only ones are logged and left alone
    assert not local.config.listed and local.config.files.glob_filter == "*.log" and not local.config.files.recursive
    assert spec.limits.max_trigger_delay_ms == 30_000 and spec.limits.min_partitions == 3
    stream = read_spec({"path": "/logs", "subscribePattern": "o.*", "maxOffsetsPerTrigger": "5",
                        "failOnDataLoss": "false", "endpoint": "http://s3:8333"}).for_stream()
    assert stream.limits.max_offsets == 5 and not stream.config.fail_on_data_loss
    assert stream.config.storage_options == {"endpoint": "http://s3:8333"}


def test_each_reader_refuses_what_it_does_not_take_in_its_words():
    with pytest.raises(UsageError, match=r"unknown option\(s\) \['foo'\]"):
        read_spec({"path": "/logs", "foo": "1"}).for_batch("L")
    with pytest.raises(UsageError, match=r"option\(s\) \['pathglobfilter'\] are not used when reading URIs"):
        read_spec({"path": "s3://b/logs", "pathGlobFilter": "*.log"}).for_batch("R")
    with pytest.raises(UsageError, match=r"kafkarec stream: unknown option\(s\) \['mode'\]"):
        read_spec({"path": "/logs", "mode": "FAILFAST"}).for_stream()
    with pytest.raises(UsageError, match="not valid in streaming queries"):
        read_spec({"path": "/logs", "endingOffsets": "latest"}).for_stream()
    with pytest.raises(UsageError, match="view=latest is for batch reads"):
        read_spec({"path": "/logs", "view": "latest"}).for_stream()
    with pytest.raises(SelectionError, match="startingOffsets=latest is for streaming queries"):
        read_spec({"path": "/logs", "startingOffsets": "latest"}).for_batch("R")
    # typed options without valueFormat/keyFormat are not taken by a binary read
    with pytest.raises(UsageError, match=r"unknown option\(s\) \['registry'\]"):
        read_spec({"path": "/logs", "registry": "/r"}).for_batch("L")


def test_what_sends_a_read_to_the_listed_layout():
    assert not read_spec({"path": "/logs"}).config.listed
    for options in ({"path": "s3://b/logs"}, {"path": "/logs", "subscribe": "a"},
                    {"path": "/logs", "startingOffsets": '{"a":{"0":1}}'}, {"path": "/logs", "view": "latest"},
                    {"path": "/logs", "cdc": "debezium"}, {"path": "/logs", "tieredStorage": "/t"},
                    {"path": "/logs", "tieredStorageConfig": "/t.properties"}):
        assert read_spec(options).config.listed, options


def test_options_doc_holds_the_table_of_the_spec():
    doc = open(os.path.join(H.ROOT, "docs", "spark-options.md"), encoding="utf-8").read()
    start = doc.index("-->\n", doc.index("<!-- generated by python -m spark_udfs.read.options kafkarec")) + 4
    end = doc.index("<!-- end generated -->", start)
    assert doc[start:end] == markdown_table("kafkarec"), \
        "regenerate the table: python -m spark_udfs.read.options kafkarec"
    assert all(f"`{opt.name}`" in doc for opt in OWN_OPTIONS)


def test_one_option_table_names_each_option_once():
    """Every name format("kafkarec") knows is one row of spark_udfs.read.options.OPTIONS, and the
    lists the readers, the planner and the backfill use are read off its ``readers`` column."""
    from kafkarec.log import selection
    from spark_udfs.read import options
    names = [o.name.lower() for o in options.OPTIONS]
    assert len(names) == len(set(names))
    assert all(set(o.readers) <= set("LRST") for o in options.OPTIONS)
    # a name the readers take under two rows' names (readCommitted, kafka.isolation.level) has
    # the same readers in both
    assert all(options.READERS[o.key] == o.readers for o in options.OPTIONS if o.key in options.READERS)
    # the selection kafkarec.log.selection parses is read by the listed reader
    assert all("R" in options.READERS[k] for k in selection.SELECTION_OPTIONS)
    assert options.STREAM_ONLY == {"maxoffsetspertrigger", "minoffsetspertrigger", "maxtriggerdelay"}
    assert options.BATCH_ONLY == {"endingoffsets", "endingoffsetsbytimestamp", "endingtimestamp"}
    assert options.LISTS == {"tieredstorage", "tieredstorageconfig"}
    # the Kafka source's docs table speaks of batch and stream, from the same column
    assert "| `endingOffsets` | batch |" in markdown_table("kafka")
    assert "| `maxOffsetsPerTrigger` | stream |" in markdown_table("kafka")
    assert "| `groupIdPrefix` | ignored |" in markdown_table("kafka")


def test_the_backfill_refuses_the_read_options_it_sets_itself():
    from kafkarec.errors import UsageError
    from spark_udfs.lakehouse import backfill_spec
    with pytest.raises(UsageError, match=r"option\(s\) \['kafka.isolation.level', 'mode', 'subscribe'\] "
                                         r"are set by the backfill itself"):
        backfill_spec("/logs", layout="iceberg-kafka-connect",
                      options={"subscribe": "a", "kafka.isolation.level": "read_committed",
                               "mode": "FAILFAST", "endpoint": "http://s3:8333"})


def test_a_spec_holds_one_scan_config():
    """The read's options reach kafkarec's reader as one ScanConfig, parsed into it once (the spec
    holds it and only what is Spark's own: no field mirrored, nothing converted later)."""
    from kafkarec.scan import FileFinding, ScanConfig
    from spark_udfs.read.spec import ReadSpec
    spec = read_spec({"path": "/logs", "verifyCrc": "false", "maxRecordsPerBatch": "7", "mode": "dropmalformed",
                      "readCommitted": "true", "includeControl": "true", "recursiveFileLookup": "false",
                      "maxDecompressedBytes": "1m"}).for_batch("L")
    config = spec.config
    assert isinstance(config, ScanConfig) and not config.listed
    assert (config.paths, config.verify_crc, config.max_rows, config.mode, config.read_committed,
            config.include_control, config.files, config.max_decompressed_bytes, config.threads) == (
        ("/logs",), False, 7, "DROPMALFORMED", True, True, FileFinding(recursive=False), 1 << 20, 1)
    from spark_udfs.read.spec import Columns, Limits
    spark_side = {f.name for c in (ReadSpec, Columns, Limits) for f in dataclasses.fields(c)}
    # (namesakes of other meaning: Spark's columns, its typed options, its selection's text)
    assert spark_side & {f.name for f in dataclasses.fields(ScanConfig)} == {"columns", "typed", "selection"}
    listed = read_spec({"path": "/logs", "startingOffsets": "earliest"}).for_batch("R")
    assert listed.config.listed and listed.config.selection == listed.parsed_selection
    latest = read_spec({"path": "/logs", "view": "latest", "cdc": "debezium", "valueFormat": "avro"})
    assert latest.config.listed and latest.binary().config.listed       # view=latest lists it still
    assert not read_spec({"path": "/logs", "cdc": "debezium"}).binary().config.listed
    assert not read_spec({"path": "/logs", "subscribe": "a"}).for_stream().config.listed


def test_file_finding_is_one_class_from_the_options_to_the_reader():
    """pathGlobFilter, recursiveFileLookup and allowDuplicatePartitions are parsed straight into
    the reader's own FileFinding, whose defaults are the options' (the table shows them)."""
    from kafkarec.scan import FileFinding, ScanConfig
    from spark_udfs.read import spec as spec_module
    from spark_udfs.read.options import OPTIONS
    spec = read_spec({"path": "/logs", "pathGlobFilter": "0*.log", "recursiveFileLookup": "false",
                      "allowDuplicatePartitions": "true"}).for_batch("L")
    assert type(spec.config.files) is FileFinding
    assert spec.config.files == FileFinding("0*.log", recursive=False, allow_duplicates=True)
    # one default each: the reader's, the Spark options' and the table's
    assert read_spec({"path": "/logs"}).config.files == FileFinding() == ScanConfig.of("/logs").files
    assert FileFinding().recursive is True
    table = {o.name: o.default for o in OPTIONS}
    assert (table["pathGlobFilter"], table["recursiveFileLookup"], table["allowDuplicatePartitions"]) == (
        FileFinding().glob_filter, "true", "false")
    assert not hasattr(spec_module, "Files")


@pytest.mark.parametrize("text", ["inf", "nan", "-1", "1e30", "99999999999999t", "8192p", "9223372036854775808",
                                  "9" * 5000, "-inf", "1.5.5", "0"])
def test_a_byte_size_is_a_positive_long_or_a_usage_error(text):
    """Finding 50: parse_bytes("inf") was an OverflowError, "1e30" a size no long holds."""
    from spark_udfs.read.spec import parse_bytes
    with pytest.raises(UsageError, match="option maxPartitionBytes"):
        parse_bytes(text, 1, "maxPartitionBytes")


def test_byte_sizes_keep_their_spellings():
    from spark_udfs.read.spec import parse_bytes
    assert [parse_bytes(t, 0, "x") for t in ("128m", "4k", "1g", "64MiB", "1000", "1.5k", "0.5k", "8191p", " 2 mb ")] == [
        128 << 20, 4096, 1 << 30, 64 << 20, 1000, 1536, 512, 8191 << 50, 2 << 20]
    assert parse_bytes("9223372036854775807", 0, "x") == (1 << 63) - 1       # exactly: no float on the way


@pytest.mark.parametrize("options, named", [
    ({"maxRecordsPerBatch": str(2 ** 63)}, "maxRecordsPerBatch"), ({"maxRecordsPerBatch": "1.5"}, "maxRecordsPerBatch"),
    ({"maxRecordsPerBatch": "inf"}, "maxRecordsPerBatch"),
    ({"maxDecompressedBytes": "inf"}, "maxDecompressedBytes"), ({"maxPartitionBytes": "1e30"}, "maxPartitionBytes"),
    ({"openCostInBytes": "nan"}, "openCostInBytes"), ({"dedupeBufferSize": "-inf"}, "dedupeBufferSize"),
    ({"minPartitions": str(2 ** 31)}, "minPartitions"), ({"maxOffsetsPerTrigger": str(2 ** 63)}, "maxOffsetsPerTrigger"),
    ({"maxTriggerDelay": "9" * 30 + "d"}, "maxTriggerDelay"), ({"maxTriggerDelay": "9" * 5000}, "maxTriggerDelay"),
    ({"registryAsOfOffset": str(2 ** 64), "valueFormat": "avro"}, "registryAsOfOffset"),
    ({"registryAsOfOffset": "1e3", "valueFormat": "avro"}, "registryAsOfOffset"),
])
def test_a_number_option_out_of_range_is_refused_naming_it(options, named):
    with pytest.raises(UsageError, match=named):
        read_spec({"path": "/logs", **options})
