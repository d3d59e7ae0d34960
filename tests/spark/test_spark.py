"""spark_udfs against a real local SparkSession, checked row by row against kafkarec's decoder.

One session for the module (local[2], 127.0.0.1, UI off); kafkarec reaches its
Python workers the way spark_udfs.register ships it.
"""
from __future__ import annotations

import glob
import os
import shutil

import pytest

from support.spark import spark_helpers as H

pytestmark = [pytest.mark.spark]

_why = H.spark_available()
if _why:
    pytest.skip(_why, allow_module_level=True)



def _data_and_errors(df, corrupt="_corrupt_record"):
    t = df.toArrow()
    import pyarrow.compute as pc
    if corrupt not in t.column_names:
        return t, []
    bad = pc.is_valid(t.column(corrupt))
    errors = t.filter(bad)
    return t.filter(pc.invert(bad)), errors.to_pylist()


# -- registration / shipping (in-process) ----------------------------------------------------

def test_register_ships_and_checks_executors(spark):
    import kafkarec
    from spark_udfs.ship import runtime as _runtime
    reg = spark._kafkarec_registration
    assert reg.fingerprint == _runtime.fingerprint(kafkarec)
    assert reg.fingerprint.startswith(kafkarec.__version__ + "+")
    assert reg.shipped and reg.shipped[0].shipped_as.endswith((".whl.zip", ".pyfiles.zip"))
    assert reg.executors and all(reg.fingerprint in e for e in reg.executors)
    # executors import kafkarec from the shipped archive, not from the source tree
    assert all(os.path.basename(reg.shipped[0].shipped_as) in e for e in reg.executors)
    # registering again ships nothing new and still passes
    import spark_udfs
    again = spark_udfs.register(spark, verify=False)
    assert again.fingerprint == reg.fingerprint
    # kafkarec installed in the executors' Python: ship=False ships nothing, still checks them
    installed = spark_udfs.register(spark, ship=False)
    assert installed.shipped == [] and installed.executors
    assert all(reg.fingerprint in e for e in installed.executors)


def test_executor_with_other_build_fails_clearly(spark):
    from pyspark.errors import PythonException
    from spark_udfs import functions as _functions
    df = spark.createDataFrame([(b"",)], "b binary")
    udf = _functions.make_decode_udf(expected="0.0.0+0000000000000000")
    with pytest.raises(PythonException, match="not the driver's build.*0.0.0\\+0000000000000000"):
        df.select(udf("b")).collect()


def test_wheel_of_other_build_refused_on_driver(spark, tmp_path):
    import spark_udfs
    from spark_udfs.ship import shipping as _shipping
    zpath = _shipping.build_pyfiles_zip()
    fake = tmp_path / "kafkarec-9.9.9-cp311-cp311-linux_x86_64.whl"
    import zipfile
    with zipfile.ZipFile(zpath) as src, zipfile.ZipFile(fake, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename == "kafkarec/__init__.py":
                data = data.replace(b'__version__ = "', b'__version__ = "9.9.9-')
            dst.writestr(item, data)
    with pytest.raises(spark_udfs.KafkarecMismatchError, match="9.9.9-"):
        spark_udfs.register(spark, wheels=[str(fake)], verify=False)


def test_import_kafkarec_does_not_import_pyspark():
    import subprocess
    code = ("import sys, kafkarec, spark_udfs; "
            "assert 'pyspark' not in sys.modules, 'pyspark imported'; print('ok')")
    out = subprocess.run([H.VENV_PY, "-c", code], cwd=H.ROOT, capture_output=True, text=True)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr


# -- the data source ---------------------------------------------------------------------------

def test_datasource_matches_decoder(spark, sample):
    df = H.read(spark, sample)
    assert df.schema.simpleString() == (
        "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,timestamp:timestamp,"
        "timestampType:int,headers:array<struct<key:string,value:binary>>,timestampMs:bigint,"
        "_corrupt_record:string>")
    data, errors = _data_and_errors(df)
    want, want_errors = H.oracle_dir(sample)
    H.assert_same_rows(data, want, H.KAFKA_COLUMNS)
    # the one broken batch of the sample (clicks) is one error row naming file and byte
    assert len(errors) == sum(len(v) for v in want_errors.values()) == 1
    (path, (e,)), = want_errors.items()
    row = errors[0]
    assert (row["topic"], row["partition"]) == ("clicks", 0)
    assert row["_corrupt_record"].startswith(f"{path}: byte {e['position']} (batch base offset "
                                             f"{e['base_offset']}): ChecksumError")
    assert row["offset"] is None and row["value"] is None


def test_datasource_splits_large_segments_at_batches(spark, sample):
    segs = glob.glob(os.path.join(sample, "*", "*.log"))
    df = H.read(spark, sample, maxPartitionBytes="8k", mode="DROPMALFORMED")
    n = df.rdd.getNumPartitions()
    assert n > len(segs) * 2, (n, len(segs))
    want, _ = H.oracle_dir(sample)
    H.assert_same_rows(df.toArrow(), want, H.KAFKA_COLUMNS)


def test_datasource_batch_columns(spark, sample):
    df = H.read(spark, sample, batchColumns="true", maxPartitionBytes="16k", mode="DROPMALFORMED")
    want, _ = H.oracle_dir(sample, batch_columns=True)
    cols = H.KAFKA_COLUMNS + ["producerId", "producerEpoch", "sequence", "isTransactional",
                              "isControl", "compression", "batchPosition", "batchBaseOffset",
                              "partitionLeaderEpoch", "magic", "batchSize", "deleteHorizonMs"]
    got = df.toArrow()
    H.assert_same_rows(got, want, cols)
    assert set(got.column("compression").to_pylist()) == {"none", "gzip", "snappy", "lz4", "zstd"}


def test_datasource_control_records_and_read_committed(spark, sample):
    payments = os.path.join(sample, "payments-0")
    with_control = H.read(spark, payments, includeControl="true", batchColumns="true").toArrow()
    want, _ = H.oracle_dir(payments, include_control=True, batch_columns=True)
    H.assert_same_rows(with_control, want, H.KAFKA_COLUMNS + ["isControl"])
    assert sum(with_control.column("isControl").to_pylist()) == 3
    # read_committed over the partition's whole log, also when every batch is its own task
    data = b"".join(open(p, "rb").read() for p in sorted(glob.glob(os.path.join(payments, "*.log"))))
    import kafkarec
    committed = kafkarec.to_arrow(data, topic="payments", partition=0, read_committed=True)
    for split in ("1m", "1"):
        got = H.read(spark, payments, readCommitted="true", maxPartitionBytes=split).toArrow()
        H.assert_same_rows(got, committed, H.KAFKA_COLUMNS)
    assert committed.num_rows == 100   # the aborted transaction's 50 records are gone


def test_read_committed_across_segments(spark, sample, tmp_path):
    """The ABORT marker in the next segment still removes the transaction."""
    import kafkarec
    src = glob.glob(os.path.join(sample, "payments-0", "*.log"))[0]
    data = open(src, "rb").read()
    spans = H.batch_spans(data)
    part = tmp_path / "payments-0"
    part.mkdir()
    cut = spans[1][0] + spans[1][1]          # after the 2 batches of the aborted transaction
    (part / "00000000000000000000.log").write_bytes(data[:cut])
    (part / "00000000000000000050.log").write_bytes(data[cut:])
    got = H.read(spark, str(part), readCommitted="true").toArrow()
    want = kafkarec.to_arrow(data, topic="payments", partition=0, read_committed=True)
    H.assert_same_rows(got, want, H.KAFKA_COLUMNS)


def test_datasource_paths_and_layouts(spark, sample, tmp_path):
    one = sorted(glob.glob(os.path.join(sample, "orders-1", "*.log")))[1]
    # a single segment file: topic/partition from its folder
    got = H.read(spark, one).toArrow()
    want, _ = H.oracle_file(one, topic="orders", partition=1)
    H.assert_same_rows(got, want, H.KAFKA_COLUMNS)
    # a glob; nested layout (broker dir / partition dir); a file outside the layout
    nested = tmp_path / "broker-a" / "data"
    shutil.copytree(os.path.join(sample, "compacted-0"), nested / "compacted-0")
    loose = tmp_path / "loose"
    loose.mkdir()
    shutil.copy(one, loose / "segment.log")
    assert H.read(spark, os.path.join(sample, "orders-*")).count() == 2229 + 2689 + 2219
    assert H.read(spark, str(tmp_path / "broker-a")).count() == 120
    rows = H.read(spark, str(loose / "segment.log")).select("topic", "partition").distinct().collect()
    assert [tuple(r) for r in rows] == [(None, None)]
    # Kafka's own leftovers (-delete folders) and index files are not read
    junk = tmp_path / "broker-a" / "data" / ("compacted-0." + "a" * 32 + "-delete")
    shutil.copytree(os.path.join(sample, "compacted-0"), junk)
    (nested / "compacted-0" / "00000000000000000000.index").write_bytes(b"\0" * 64)
    assert H.read(spark, str(tmp_path / "broker-a")).count() == 120
    # several paths (load([...])), overlapping: nothing read twice
    both = spark.read.format("kafkarec").load([os.path.join(sample, "compacted-0"),
                                               os.path.join(sample, "compacted-0", "*.log")])
    assert both.count() == 120


def test_datasource_refuses_duplicates_and_bad_options(spark, sample, tmp_path):
    from pyspark.errors import AnalysisException, PySparkException
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(os.path.join(sample, "compacted-0"), a / "compacted-0")
    shutil.copytree(os.path.join(sample, "compacted-0"), b / "compacted-0")
    with pytest.raises((AnalysisException, PySparkException), match="read twice"):
        H.read(spark, str(tmp_path)).count()
    assert H.read(spark, str(tmp_path), allowDuplicatePartitions="true").count() == 240
    with pytest.raises((AnalysisException, PySparkException), match="unknown option"):
        H.read(spark, sample, maxPartitonBytes="1m").count()
    with pytest.raises((AnalysisException, PySparkException), match="mode must be one of"):
        H.read(spark, sample, mode="LENIENT").count()
    with pytest.raises((AnalysisException, PySparkException), match="does not exist"):
        H.read(spark, str(tmp_path / "nope")).count()


def test_datasource_user_schema_and_sql(spark, sample):
    df = (spark.read.format("kafkarec").schema("topic string, partition int, offset long, "
                                               "compression string, _corrupt_record string")
          .load(sample))
    t = df.toArrow()
    assert t.column_names == ["topic", "partition", "offset", "compression", "_corrupt_record"]
    want, _ = H.oracle_dir(sample, batch_columns=True)
    data = t.filter(t.column("_corrupt_record").is_null())
    H.assert_same_rows(data, want, ["topic", "partition", "offset", "compression"])
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW kr USING kafkarec OPTIONS (path '{sample}')")
    n = spark.sql("SELECT count(*) FROM kr WHERE topic = 'orders' AND _corrupt_record IS NULL").first()[0]
    assert n == 2229 + 2689 + 2219


@pytest.mark.parametrize("split", ["128m", "4k"])
def test_datasource_permissive(spark, corrupt, split):
    df = H.read(spark, corrupt["root"], maxPartitionBytes=split, columnNameOfCorruptRecord="bad")
    assert "bad" in df.columns
    data, errors = _data_and_errors(df, "bad")
    # good rows: exactly what the decoder gives for each file
    want, want_errors = H.oracle_dir(corrupt["root"])
    H.assert_same_rows(data, want, H.KAFKA_COLUMNS)
    by_topic = {}
    for e in errors:
        by_topic.setdefault(e["topic"], []).append(e["bad"])
    assert sorted(by_topic) == ["crc", "framing", "truncated"]
    (crc,), (trunc,), (framing,) = by_topic["crc"], by_topic["truncated"], by_topic["framing"]
    assert crc.startswith(f"{corrupt['crc']['path']}: byte {corrupt['crc']['position']} ")
    assert "ChecksumError" in crc
    assert trunc.startswith(f"{corrupt['truncated']['path']}: byte {corrupt['truncated']['position']}: "
                            f"TruncatedError: {corrupt['truncated']['trailing']} bytes")
    assert framing.startswith(f"{corrupt['framing']['path']}: byte {corrupt['framing']['position']}: "
                              f"CorruptBatchError")
    pos, lost = corrupt["framing"]["position"], corrupt["framing"]["not_decoded"]
    assert f"[the {lost} bytes from byte {pos} to byte {pos + lost} could not be framed" in framing
    # nothing lost or duplicated: the ok copy has every batch's records once
    import pyarrow.compute as pc
    ok = data.filter(pc.equal(data.column("topic"), "ok"))
    assert ok.num_rows == len(set(ok.column("offset").to_pylist())) == 1039


def test_datasource_dropmalformed(spark, corrupt):
    df = H.read(spark, corrupt["root"], mode="DROPMALFORMED", maxPartitionBytes="4k")
    assert "_corrupt_record" not in df.columns
    want, _ = H.oracle_dir(corrupt["root"])
    H.assert_same_rows(df.toArrow(), want, H.KAFKA_COLUMNS)


@pytest.mark.parametrize("folder,match", [
    ("crc-0", "ChecksumError"), ("truncated-0", "TruncatedError"), ("framing-0", "CorruptBatchError")])
def test_datasource_failfast(spark, corrupt, folder, match):
    from pyspark.errors import PythonException
    path = os.path.join(corrupt["root"], folder)
    with pytest.raises(PythonException, match=f"FAILFAST.*{folder}.*{match}"):
        H.read(spark, path, mode="FAILFAST").count()
    assert H.read(spark, os.path.join(corrupt["root"], "ok-0"), mode="FAILFAST").count() == 1039


# -- functions on a binary column --------------------------------------------------------------

@pytest.fixture(scope="module")
def blobs(spark, sample, corrupt):
    """One row per segment file (+ a null, an empty and a garbage value)."""
    files = sorted(glob.glob(os.path.join(sample, "*", "*.log"))) + [corrupt["crc"]["path"],
                                                                     corrupt["truncated"]["path"]]
    rows = [(i, f, open(f, "rb").read()) for i, f in enumerate(files)]
    rows += [(100, "null", None), (101, "empty", b""), (102, "garbage", b"\x00\x01\x02")]
    df = spark.createDataFrame(rows, "id long, path string, blob binary")
    df.createOrReplaceTempView("blobs")
    return df, {r[0]: r for r in rows}


def _oracle_blob(blob):
    """kafkarec's decoder on one value: (table, errors), a cut-off end counted as an error
    (iter_arrow stops there quietly, as Kafka's fetch path does; spark_udfs reports it)."""
    import kafkarec
    import pyarrow as pa
    sink = []
    t = pa.Table.from_batches(list(kafkarec.iter_arrow(blob, errors="skip", error_sink=sink)),
                              schema=kafkarec.arrow_schema())
    it = kafkarec.iter_batches(blob, verify_crc=False)
    try:
        for _ in it:
            pass
        if it.trailing_bytes:
            sink.append({"position": it.position, "error": "TruncatedError", "base_offset": None,
                         "reason": f"{it.trailing_bytes} bytes at the end do not hold a complete batch "
                                   f"(cut-off segment or blob?)"})
    except kafkarec.DecodeError:
        pass
    return t, sink


def test_decode_records_per_row(spark, blobs):
    """One struct per input row: all records of its good batches, errors described, null for null."""
    import spark_udfs
    df, rows = blobs
    got = df.select("id", spark_udfs.decode_records("blob").alias("d")).toArrow().to_pylist()
    assert len(got) == len(rows)
    for r in got:
        blob = rows[r["id"]][2]
        if blob is None:
            assert r["d"] is None
            continue
        want, sink = _oracle_blob(blob)
        assert len(r["d"]["records"]) == want.num_rows
        assert [x["offset"] for x in r["d"]["records"]] == want.column("offset").to_pylist()
        if sink:
            assert r["d"]["error"] == "; ".join(
                f"byte {e['position']}" + ("" if e["base_offset"] is None else
                                           f" (batch base offset {e['base_offset']})")
                + f": {e['error']}: {e['reason']}" for e in sink)
        else:
            assert r["d"]["error"] is None


def test_decode_records_exploded_matches_decoder(spark, blobs):
    import pyarrow as pa
    import spark_udfs
    from pyspark.sql import functions as F
    df, rows = blobs
    got = (df.select("id", F.inline(spark_udfs.decode_records("blob", batch_columns=True)["records"]))
           .toArrow())
    import kafkarec
    wants = []
    for i, (_, _, blob) in sorted(rows.items()):
        if blob:
            sink = []
            for rb in kafkarec.iter_arrow(blob, batch_columns=True, errors="skip", error_sink=sink):
                wants.append(rb.append_column("id", pa.array([i] * rb.num_rows, pa.int64())))
    want = pa.Table.from_batches(wants)
    cols = ["id"] + H.RECORD_COLUMNS + ["batchPosition", "compression", "producerId"]
    H.assert_same_rows(got, want, cols, sort_by=("id", "offset"))
    # the SQL function
    n = spark.sql("SELECT count(*) FROM (SELECT inline(kafkarec_decode(blob).records) FROM blobs)").first()[0]
    assert n == want.num_rows


def test_decode_records_modes(spark, blobs):
    from pyspark.errors import PythonException
    import spark_udfs
    df, _ = blobs
    with pytest.raises(PythonException, match="FAILFAST.*ChecksumError"):
        df.select(spark_udfs.decode_records("blob", mode="FAILFAST")).collect()
    with pytest.raises(PythonException, match="FAILFAST.*ChecksumError"):
        spark.sql("SELECT kafkarec_decode(blob, 'FAILFAST') FROM blobs").collect()
    with pytest.raises(ValueError, match="mode must be one of PERMISSIVE, FAILFAST"):
        spark_udfs.decode_records("blob", mode="DROPMALFORMED")
    ok = df.where("id IN (1, 2, 3)").select(spark_udfs.decode_records("blob", mode="FAILFAST").alias("d"))
    assert all(r.d.error is None for r in ok.collect())


@pytest.mark.parametrize("mode", ["PERMISSIVE", "DROPMALFORMED"])
def test_explode_records(spark, blobs, mode):
    import pyarrow as pa
    import spark_udfs
    df, rows = blobs
    out = spark_udfs.explode_records(df, "blob", keep=["id", "path"], mode=mode)
    t = out.toArrow()
    assert t.column_names[:2] == ["id", "path"]
    import kafkarec
    wants, errors = [], []
    for i, (_, path, blob) in sorted(rows.items()):
        if blob is None:
            continue
        t2, sink = _oracle_blob(blob)
        wants.append(t2.append_column("id", pa.array([i] * t2.num_rows, pa.int64()))
                     .append_column("path", pa.array([path] * t2.num_rows, pa.string())))
        errors += [(i, path) for _ in sink]
    want = pa.concat_tables(wants)
    if mode == "PERMISSIVE":
        bad = t.filter(t.column("_corrupt_record").is_valid())
        good = t.filter(t.column("_corrupt_record").is_null())
        assert sorted(zip(bad.column("id").to_pylist(), bad.column("path").to_pylist())) == sorted(errors)
    else:
        assert "_corrupt_record" not in t.column_names
        good = t
    H.assert_same_rows(good, want, ["id", "path"] + H.RECORD_COLUMNS, sort_by=("id", "offset"))
    assert kafkarec


def test_explode_records_failfast_outer_and_errors(spark, blobs):
    from pyspark.errors import PythonException
    import spark_udfs
    df, _ = blobs
    with pytest.raises(PythonException, match="FAILFAST"):
        spark_udfs.explode_records(df, "blob", mode="FAILFAST").collect()
    outer = spark_udfs.explode_records(df.where("id >= 100"), "blob", keep=["id"], outer=True,
                                       mode="DROPMALFORMED")
    assert sorted(r.id for r in outer.select("id").collect()) == [100, 101]   # null and empty kept
    with pytest.raises(ValueError, match="appear twice"):
        spark_udfs.explode_records(df.withColumnRenamed("path", "key"), "blob", keep=["key"])
    assert spark_udfs.explode_records(df.withColumnRenamed("path", "key"), "blob", keep=["key"],
                                      prefix="record_").columns[:2] == ["key", "record_key"]
    with pytest.raises(TypeError, match="not binary"):
        spark_udfs.explode_records(df, "path")


def test_explode_udtf_lateral(spark, blobs):
    import pyarrow as pa
    df, rows = blobs
    got = spark.sql("SELECT b.id, r.* FROM blobs b, LATERAL kafkarec_explode(b.blob) r").toArrow()
    wants, errors = [], []
    for i, (_, _, blob) in sorted(rows.items()):
        if blob is None:
            continue
        t2, sink = _oracle_blob(blob)
        wants.append(t2.append_column("id", pa.array([i] * t2.num_rows, pa.int64())))
        errors += [i] * len(sink)
    good = got.filter(got.column("_corrupt_record").is_null())
    H.assert_same_rows(good, pa.concat_tables(wants), ["id"] + H.RECORD_COLUMNS, sort_by=("id", "offset"))
    bad = got.filter(got.column("_corrupt_record").is_valid())
    assert sorted(bad.column("id").to_pylist()) == sorted(errors)
    # a filter on the left side, the mode argument, the DataFrame API (lateralJoin)
    n = spark.sql("SELECT count(*) FROM blobs b, LATERAL kafkarec_explode(b.blob, 'DROPMALFORMED') r "
                  "WHERE b.id = 2").first()[0]
    assert n == 1039
    from pyspark.errors import PythonException
    with pytest.raises(PythonException, match="FAILFAST"):
        spark.sql("SELECT * FROM blobs b, LATERAL kafkarec_explode(b.blob, 'FAILFAST') r").collect()
    import spark_udfs
    from pyspark.sql.functions import col
    fn = spark_udfs.explode_udtf()
    lat = df.where("id = 2").lateralJoin(fn(col("blob").outer()))
    assert lat.count() == 1039


def test_explode_udtf_is_deterministic_so_filters_push_down(spark, blobs):
    plan = spark.sql("SELECT b.id, r.offset FROM blobs b, LATERAL kafkarec_explode(b.blob) r "
                     "WHERE b.id = 3")._jdf.queryExecution().optimizedPlan().toString()
    udtf_at = plan.index("kafkarec_explode")
    # pushed below the UDTF (printed after it); a nondeterministic UDTF keeps the Filter above
    assert "Filter" not in plan[:udtf_at] and "Filter" in plan[udtf_at:], plan


# -- Kafka-source-shaped input -------------------------------------------------------------

@pytest.fixture(scope="module")
def kafka_source_df(spark, sample, corrupt):
    """What spark.read.format('kafka') gives when the topic's values are whole record
    batches (e.g. a topic that archives another cluster's raw batches): one batch per value."""
    import datetime
    import kafkarec
    rows = []
    files = sorted(glob.glob(os.path.join(sample, "orders-*", "*.log"))) + [corrupt["crc"]["path"]]
    for i, path in enumerate(files):
        data = open(path, "rb").read()
        for off, b in enumerate(kafkarec.iter_batches(data, verify_crc=False)):
            raw = data[b.position:b.position + b.size_in_bytes]
            rows.append((b"k%d" % off, raw, "archive", i, off,
                         datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc), 0,
                         [("src", path.encode())]))
    rows.append((None, None, "archive", 99, 0, None, 0, None))
    schema = ("key binary, value binary, topic string, partition int, offset long, timestamp timestamp, "
              "timestampType int, headers array<struct<key:string,value:binary>>")
    return spark.createDataFrame(rows, schema), rows


def test_kafka_source_shaped_input(spark, kafka_source_df):
    import kafkarec
    import pyarrow as pa
    import spark_udfs
    from pyspark.sql import functions as F
    df, rows = kafka_source_df
    keep = ["topic", "partition", "offset", "timestamp"]
    out = spark_udfs.explode_records(df, "value", keep=keep, prefix="record_")
    t = out.toArrow()
    wants, n_err = [], 0
    for key, value, topic, part, off, ts, tt, hs in rows:
        if value is None:
            continue
        sink = []
        for rb in kafkarec.iter_arrow(value, errors="skip", error_sink=sink):
            n = rb.num_rows
            wants.append(pa.table({"partition": pa.array([part] * n, pa.int32()),
                                   "offset": pa.array([off] * n, pa.int64()),
                                   "record_offset": rb.column("offset"), "record_value": rb.column("value"),
                                   "record_key": rb.column("key")}))
        n_err += len(sink)
    want = pa.concat_tables(wants)
    good = t.filter(t.column("_corrupt_record").is_null())
    cols = ["partition", "offset", "record_offset", "record_key", "record_value"]
    H.assert_same_rows(good, want, cols, sort_by=("partition", "offset", "record_offset"))
    assert t.filter(t.column("_corrupt_record").is_valid()).num_rows == n_err == 1
    assert set(good.column("topic").to_pylist()) == {"archive"}
    # the same through the SQL function, grouped back by the Kafka coordinates
    df.createOrReplaceTempView("kafka_src")
    per = spark.sql("SELECT partition, offset, size(kafkarec_decode(value).records) n "
                    "FROM kafka_src WHERE value IS NOT NULL").toArrow()
    assert sum(per.column("n").to_pylist()) == want.num_rows
    n = df.select(F.inline(spark_udfs.decode_records("value")["records"])).count()
    assert n == want.num_rows
    lateral = spark.sql("SELECT k.partition, k.offset, r.offset AS record_offset, r._corrupt_record "
                        "FROM kafka_src k, LATERAL kafkarec_explode(k.value) r").toArrow()
    ok = lateral.filter(lateral.column("_corrupt_record").is_null())
    H.assert_same_rows(ok, want, ["partition", "offset", "record_offset"],
                       sort_by=("partition", "offset", "record_offset"))
    assert lateral.num_rows - ok.num_rows == n_err
