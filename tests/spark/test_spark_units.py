"""The pieces of spark_udfs that need no Spark: finding segments, planning splits,
read_committed over a partition's log, decoding with the parse modes, choosing what to ship."""
from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

import pytest

from support.spark import spark_helpers as H
from kafkarec.errors import MalformedBatchError
from kafkarec.scan.decode import decode_range
from spark_udfs.read import datasource as _datasource
from spark_udfs.read.spec import read_spec

import kafkarec
from kafkarec.log import directory, local


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    return H.sample_logs(tmp_path_factory, seed=7)


def test_topic_partition_from_folder_names():
    p = directory.parse_topic_partition
    assert p("/x/orders-3") == ("orders", 3)
    assert p("my-topic.v2-17/") == ("my-topic.v2", 17)
    assert p("__consumer_offsets-49") == ("__consumer_offsets", 49)
    assert p("orders") is None
    assert p("orders-") is None
    assert p("orders-99999999999") is None


def test_parse_bytes():
    from spark_udfs.read.spec import parse_bytes
    assert parse_bytes("128m", 0) == 128 << 20
    assert parse_bytes("4k", 0) == 4096
    assert parse_bytes("1g", 0) == 1 << 30
    assert parse_bytes("64MiB", 0) == 64 << 20
    assert parse_bytes("1000", 0) == 1000
    assert parse_bytes(None, 7) == 7
    with pytest.raises(ValueError, match="expected a positive byte size"):
        parse_bytes("0", 1)
    with pytest.raises(ValueError, match="option maxPartitionBytes: expected a byte size like 128m"):
        parse_bytes("lots", 1, "maxPartitionBytes")


def test_discover_sorted_and_deduplicated(sample, tmp_path):
    segs, skipped = directory.find_segment_files([sample, os.path.join(sample, "orders-1", "*.log")])
    keys = [(s.topic, s.partition, s.base_offset) for s in segs]
    assert keys == sorted(keys) and len(set(s.path for s in segs)) == len(segs)
    assert {s.topic for s in segs} == {"orders", "payments", "compacted", "clicks"}
    assert skipped == []
    with pytest.raises(FileNotFoundError):
        directory.find_segment_files([str(tmp_path / "missing")])


def test_discover_walks_kafka_layouts(sample, tmp_path):
    """Two brokers' log dirs under one root (meta.properties at each), a folder Kafka
    renamed for deletion, a backed-up segment, index files; recursive or not."""
    import shutil
    src = os.path.join(sample, "orders-0")
    first = sorted(f for f in os.listdir(src) if f.endswith(".log"))[0]
    for broker in ("broker-a", "broker-b"):
        d = tmp_path / broker
        d.mkdir()
        (d / "meta.properties").write_text("version=1\n")
        shutil.copytree(src, d / f"orders-{broker[-1] == 'b' and 1 or 0}")
    shutil.copytree(src, tmp_path / "broker-a" / ("orders-5." + "a" * 32 + "-delete"))
    shutil.copy(os.path.join(src, first), tmp_path / "broker-b" / "orders-1" / "backup.log")
    segs, skipped = directory.find_segment_files([str(tmp_path)])
    logs = sorted(f for f in os.listdir(src) if f.endswith(".log"))
    got = [(s.topic, s.partition, os.path.basename(s.path), s.base_offset) for s in segs]
    want = [("orders", 0, f, int(f[:-4])) for f in logs] + \
        [("orders", 1, "backup.log", None)] + [("orders", 1, f, int(f[:-4])) for f in logs]
    assert sorted(got, key=lambda g: (g[1], g[3] is not None, g[3] or 0)) == \
        sorted(want, key=lambda g: (g[1], g[3] is not None, g[3] or 0))
    assert [os.path.basename(p) for p in skipped] == ["orders-5." + "a" * 32 + "-delete"]
    # not recursive: a log dir's own partition folders only; a partition folder's files
    segs, _ = directory.find_segment_files([str(tmp_path)], recursive=False)
    assert segs == []
    segs, _ = directory.find_segment_files([str(tmp_path / "broker-a")], recursive=False)
    assert {os.path.basename(os.path.dirname(s.path)) for s in segs} == {"orders-0"}
    segs, _ = directory.find_segment_files([str(tmp_path / "broker-b" / "orders-1")], pattern="0*.log")
    assert [os.path.basename(s.path) for s in segs] == logs


@pytest.mark.parametrize("max_bytes", [1, 1000, 8 << 10, 50 << 10, 128 << 20])
def test_plan_covers_every_byte_once_at_batch_starts(sample, max_bytes):
    segs, _ = directory.find_segment_files([sample])
    spec, config = _datasource.batch_read(read_spec({"path": sample, "maxPartitionBytes": str(max_bytes),
                                                     "minPartitions": "2"}))
    # below what option openCostInBytes accepts: every cut shows
    spec = dataclasses.replace(spec, limits=dataclasses.replace(spec.limits, open_cost_bytes=0))
    tasks = _datasource.plan(spec, config)
    by_file = {}
    for task in tasks:
        for piece in task.ranges:
            by_file.setdefault(piece.item.path, []).append((piece.item.start, piece.item.end))
    assert sorted(by_file) == sorted(s.path for s in segs)
    for seg in segs:
        spans = sorted(by_file[seg.path])
        assert spans[0][0] == 0 and spans[-1][1] == seg.size
        assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))      # no gap, no overlap
        starts = {b.position for b in kafkarec.iter_batches(open(seg.path, "rb").read(),
                                                             verify_crc=False)}
        assert all(a in starts for a, _ in spans)
    if max_bytes <= 1000:
        assert len(tasks) > len(segs)


def test_aborted_batches_span_segments(sample, tmp_path):
    data = open(os.path.join(sample, "payments-0", "00000000000000000000.log"), "rb").read()
    spans = [(b.position, b.size_in_bytes) for b in kafkarec.iter_batches(data, verify_crc=False)]
    part = tmp_path / "payments-0"
    part.mkdir()
    cut = spans[1][0] + spans[1][1]
    (part / "00000000000000000000.log").write_bytes(data[:cut])
    (part / "00000000000000000050.log").write_bytes(data[cut:])
    segs, _ = directory.find_segment_files([str(part)])
    aborted = local.aborted_batches(segs)
    assert aborted == {str(part / "00000000000000000000.log"): spans[:2]}
    # each file alone: the core's read_committed sees a transaction that never ends
    assert kafkarec.to_arrow(data[:cut], read_committed=True).num_rows == 0


def test_decode_range_modes():
    data = open_sample_batches()
    bad = bytearray(data)
    bad[-3] ^= 1
    cut = data[:-7]
    out = list(decode_range(memoryview(bytes(bad)), base=100, where="f"))
    errs = [x for k, x in out if k == "error"]
    assert len(errs) == 1 and errs[0]["message"].startswith("f: byte ")
    assert errs[0]["position"] >= 100
    out = list(decode_range(memoryview(cut), mode="DROPMALFORMED"))
    (kind, e), = [x for x in out if x[0] == "error"]
    assert e["error"] == "TruncatedError"
    with pytest.raises(MalformedBatchError, match="FAILFAST.*TruncatedError"):
        list(decode_range(memoryview(cut), mode="FAILFAST"))
    with pytest.raises(MalformedBatchError, match="FAILFAST.*ChecksumError"):
        list(decode_range(memoryview(bytes(bad)), mode="FAILFAST"))
    rows = sum(x.num_rows for k, x in decode_range(memoryview(data)) if k == "batch")
    assert rows == 30


def test_decode_range_keeps_undecodable_bytes_in_the_quarantine(tmp_path):
    """badRecordsPath under every Spark reader: a batch that fails is copied whole at its file
    position, and where framing stops every byte after it; a cut-off tail is only reported."""
    import json
    from kafkarec.log.quarantine import Quarantine
    data = open_sample_batches()
    first, second, third = list(kafkarec.iter_batches(data))
    bad = bytearray(data)
    bad[second.position + second.size_in_bytes - 1] ^= 1
    q = Quarantine(str(tmp_path / "q"))
    out = list(decode_range(memoryview(bytes(bad)), base=100, topic="t", partition=3,
                                    where="f", quarantine=q))
    assert sum(x.num_rows for k, x in out if k == "batch") == 20
    (err,) = [x for k, x in out if k == "error"]
    assert (err["batch_position"], err["batch_size"]) == (100 + second.position, second.size_in_bytes)
    copy = tmp_path / "q" / "_undecodable" / "t-3" / f"{100 + second.position:020d}.batch"
    assert copy.read_bytes() == bytes(bad[second.position:second.position + second.size_in_bytes])
    meta = json.loads(copy.with_name(copy.name + ".json").read_text())
    assert meta == {"source": "f", "position": 100 + second.position, "length": second.size_in_bytes,
                    "reason": err["message"]}
    # framing stops (a batch length no batch has): the rest of the range is kept
    stopped = bytearray(data)
    stopped[third.position + 8:third.position + 12] = (2 ** 31 - 1).to_bytes(4, "big")
    q2 = Quarantine(str(tmp_path / "q2"))
    out = list(decode_range(memoryview(bytes(stopped)), topic="t", partition=3, quarantine=q2))
    (err,) = [x for k, x in out if k == "error"]
    assert err["not_decoded"] == len(data) - third.position
    copy = tmp_path / "q2" / "_undecodable" / "t-3" / f"{third.position:020d}.batch"
    assert copy.read_bytes() == bytes(stopped[third.position:])
    # a cut-off tail (a segment still being written) is reported, not copied
    q3 = Quarantine(str(tmp_path / "q3"))
    out = list(decode_range(memoryview(data[:-7]), topic="t", partition=3, quarantine=q3))
    assert [x["error"] for k, x in out if k == "error"] == ["TruncatedError"]
    assert not (tmp_path / "q3").exists() or not list((tmp_path / "q3").rglob("*.batch"))
    # without a topic-partition there is nowhere to keep it: said, not dropped
    with pytest.raises(ValueError, match="by topic-partition"):
        list(decode_range(memoryview(bytes(bad)), quarantine=q))


def open_sample_batches() -> bytes:
    out = b""
    for i in range(3):
        b = kafkarec.RecordBatchBuilder(base_offset=i * 10)
        for j in range(10):
            b.append(b"v%d" % j, key=b"k", timestamp=1_700_000_000_000 + j)
        out += b.build()
    return out


def test_decode_column_one_pass_equals_row_by_row():
    """The one-pass path over a column's buffer gives what decoding each value alone gives."""
    import numpy as np
    import pyarrow as pa
    pytest.importorskip("pyspark")
    from spark_udfs import functions as _functions
    good = open_sample_batches()
    bad = bytearray(good)
    bad[-3] ^= 1                                   # CRC error in the last batch of the value
    values = [good, b"", None, bytes(bad), good, good + good]
    for large in (False, True):
        arr = pa.array(values, pa.large_binary() if large else pa.binary())
        for batch_columns in (False, True):
            fast = _functions._decode_column(arr.slice(0), "PERMISSIVE", batch_columns)
            slow = _functions._decode_column(arr, ["PERMISSIVE"] * len(values),
                                             batch_columns)
            assert fast.records == slow.records == 30 * 4 + 20
            ft = pa.Table.from_batches(fast.pieces).to_pylist()
            st = pa.Table.from_batches(slow.pieces).to_pylist()
            assert ft == st
            assert np.array_equal(fast.row_index(), slow.row_index())
            assert fast.errors == slow.errors and [r for r, _ in fast.errors] == [3]
            assert list(fast.nulls) == list(slow.nulls) == [False, False, True, False, False, False]
            if batch_columns:   # batch positions are relative to each value
                assert max(r["batchPosition"] for r in ft) < 2 * len(good)
    # the clean column did take the one-pass path
    probe = _functions._Decoded(len(values))
    probe.nulls = np.array([v is None for v in values])
    offsets, view, _ = _functions._binary_values(pa.array(values, pa.binary()))
    assert _functions._decode_concatenated(offsets, view, probe, "PERMISSIVE", False,
                                           _functions._record_target(False), 65536)
    # a sliced array (non-zero offset) and a cut-off value take the row-by-row path, same result
    arr = pa.array([b"xx", good, good[:-5]], pa.binary()).slice(1)
    dec = _functions._decode_column(arr, "PERMISSIVE", False)
    assert dec.records == 30 + 20 and [r for r, _ in dec.errors] == [1]
    assert "TruncatedError" in dec.errors[0][1]
    with pytest.raises(MalformedBatchError, match="FAILFAST.*byte .*ChecksumError"):
        _functions._decode_column(pa.array([good, bytes(bad)]), "FAILFAST", False)


class _StubContext:
    """What ship() uses of a SparkContext."""

    applicationId = "local-test"

    def __init__(self, py_files=""):
        self._python_includes = []
        self.added = []
        self.files = []
        self._conf = {"spark.submit.pyFiles": py_files}

    def getConf(self):
        return self

    def get(self, key, default=None):
        return self._conf.get(key, default)

    def addPyFile(self, path):
        self.added.append(path)
        self._python_includes.append(os.path.basename(path))

    def addFile(self, path):
        self.files.append(path)


class _StubSession:
    def __init__(self, sc):
        self.sparkContext = sc


def _rewrite_version(src, dst, version):
    import zipfile
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for item in zin.infolist():
            data = zin.read(item)
            if item.filename == "kafkarec/__init__.py":
                data = data.replace(b'__version__ = "', f'__version__ = "{version}'.encode())
            zout.writestr(item, data)


def test_ship_picks_the_matching_wheel_else_builds_a_zip(tmp_path, monkeypatch):
    from spark_udfs.ship import runtime as _runtime, shipping as _shipping
    monkeypatch.setenv("KAFKAREC_SPARK_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    fp = _shipping.expected_fingerprint()
    built = _shipping.build_pyfiles_zip()
    assert _shipping.archive_fingerprint(built) == fp == _runtime.fingerprint()
    house = tmp_path / "wheelhouse"
    house.mkdir()
    # a stale wheel only: not shipped, a zip of the installed packages is
    _rewrite_version(built, house / "kafkarec-0.0.1-cp311-cp311-linux_x86_64.whl", "0.0.1-")
    # the zip carries each module compiled (a checked pyc beside its .py): a worker imports it
    # rather than compiling the source, and a .py changed since (the stale wheel's __init__) is
    # compiled from its source, not taken from a pyc of other bytes
    import zipfile
    with zipfile.ZipFile(built) as z:
        names = set(z.namelist())
    assert [n for n in names if n.endswith(".py") and n + "c" not in names] == []
    assert _shipping.build_pyfiles_zip() == built        # addressed by its inputs: found again as it is
    probe = "import kafkarec, kafkarec.scan._read as r; print(kafkarec.__version__, kafkarec.__file__, r.__file__)"
    for archive, version, init in [(built, kafkarec.__version__, "__init__.pyc"),
                                   (house / "kafkarec-0.0.1-cp311-cp311-linux_x86_64.whl",
                                    "0.0.1-" + kafkarec.__version__, "__init__.py")]:
        got = subprocess.run([sys.executable, "-c", probe], env={**os.environ, "PYTHONPATH": str(archive)},
                             cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert got.returncode == 0, got.stderr[-2000:]
        assert got.stdout.split() == [version, os.path.join(str(archive), "kafkarec", init),
                                      os.path.join(str(archive), "kafkarec", "scan", "_read.pyc")]
    monkeypatch.setattr(_shipping, "find_wheels", lambda k=None: [str(house / w) for w in
                                                                 sorted(os.listdir(house))])
    sc = _StubContext()
    shipping = _shipping.ship(_StubSession(sc))
    shipped = shipping.kafkarec
    assert shipped.shipped_as.endswith(".pyfiles.zip") and sc.added == [shipped.shipped_as]
    # no wheelhouse: the dependency wheels are made from this Python's installed distributions
    assert shipping.folder is None and sc.files == [d.shipped_as for d in shipping.dependencies]
    assert any(os.path.basename(f).startswith("packaging-") for f in sc.files), sc.files
    # a wheel of this very build: shipped as <name>.whl.zip
    import shutil
    shutil.copy(built, house / "kafkarec-0.1.0-cp311-cp311-linux_x86_64.whl")
    sc = _StubContext()
    (shipped,) = _shipping.ship(_StubSession(sc))        # nothing else in its wheelhouse
    assert shipped.shipped_as.endswith("kafkarec-0.1.0-cp311-cp311-linux_x86_64.whl.zip")
    assert shipped.fingerprint == fp
    # --py-files with another build: refused on the driver, naming both builds
    sc = _StubContext(py_files=f"file:{house / 'kafkarec-0.0.1-cp311-cp311-linux_x86_64.whl'}")
    with pytest.raises(_runtime.KafkarecMismatchError, match=r"0\.0\.1-.*driver imported kafkarec"):
        _shipping.ship(_StubSession(sc))
    # --py-files with other (non-kafkarec) wheels: re-shipped as .whl.zip too
    other = tmp_path / "other-1.0-py3-none-any.whl"
    import zipfile
    with zipfile.ZipFile(other, "w") as z:
        z.writestr("other/__init__.py", "")
    sc = _StubContext(py_files=str(other))
    names = [os.path.basename(s.shipped_as) for s in _shipping.ship(_StubSession(sc))]
    assert "other-1.0-py3-none-any.whl.zip" in names and len(names) == 2
    assert names[0].startswith("kafkarec-")      # kafkarec's archive first


def test_ensure_reports_both_builds():
    from spark_udfs.ship import runtime as _runtime
    with pytest.raises(_runtime.KafkarecMismatchError, match=r"driver has kafkarec 1\.2\.3\+abc.*this "
                                                            r"worker has kafkarec .* from "):
        _runtime.ensure("1.2.3+abc")
    assert _runtime.ensure(_runtime.fingerprint()) is kafkarec


# -- the Kafka source's options (spark_udfs.read.options) ------------------------------------------

def test_options_doc_is_the_table_in_the_code():
    """docs/spark-options.md holds the table spark_udfs.read.options makes, word for word."""
    from spark_udfs.read import options as _options
    doc = open(os.path.join(H.ROOT, "docs", "spark-options.md"), encoding="utf-8").read()
    start = doc.index("-->\n", doc.index("<!-- generated")) + 4
    end = doc.index("<!-- end generated -->")
    assert doc[start:end] == _options.markdown_table(), \
        "regenerate the table: python -m spark_udfs.read.options kafka"
    for opt in _options.KAFKA_OPTIONS:
        assert f"`{opt.name}`" in doc


def test_options_translate_as_the_kafka_source():
    from spark_udfs.read.options import normalize
    from spark_udfs.read.spec import read_spec
    n = normalize({"subscribe": "a, b", "kafka.isolation.level": "read_committed",
                   "kafka.bootstrap.servers": "x:9092", "groupIdPrefix": "g",
                   "maxOffsetsPerTrigger": "5", "failOnDataLoss": "false", "path": "/p"})
    assert n == {"topics": "a, b", "readcommitted": "true", "path": "/p", "maxoffsetspertrigger": "5",
                 "failondataloss": "false"}
    assert normalize({"subscribePattern": "o.*", "maxOffsetsPerTrigger": "5"}) == {
        "topicpattern": "o.*", "maxoffsetspertrigger": "5"}
    assert normalize({"kafka.isolation.level": "READ_UNCOMMITTED"}) == {"readcommitted": "false"}
    # a batch read leaves the stream-only options out (logged, as the Kafka source does)
    batch = read_spec(n).for_batch("R")
    assert batch.config.read_committed and batch.selection == {"topics": "a, b"}
    assert read_spec({"path": "/p", "includeHeaders": "True"}).columns.include_headers
    # the refusals: tests/spark/test_spec.py


def test_assign_selects_partitions_and_checks_offsets():
    from kafkarec.log import selection
    sel = selection.parse_selection({"assign": '{"orders":[0,2]}',
                                     "startingoffsets": '{"orders":{"0":5,"2":-2}}'})
    assert sel.topics == frozenset({"orders"})
    assert sel.wants_partition("orders", 2) and not sel.wants_partition("orders", 1)
    assert not sel.wants_partition("audit", 0)
    with pytest.raises(selection.SelectionError, match="exactly the assigned partitions"):
        selection.parse_selection({"assign": '{"orders":[0,2]}',
                                   "startingoffsets": '{"orders":{"0":5}}'})
    with pytest.raises(selection.SelectionError, match="assign"):
        selection.parse_selection({"assign": '{"orders":"0"}'})


@pytest.mark.parametrize("name", ["verifyCrc", "strict", "includeHeaders", "batchColumns", "readCommitted"])
def test_every_boolean_option_follows_sparks_rule(name):
    # one parser: true/false in any case, as Spark's options; verifyCrc=yes was accepted while
    # includeHeaders=yes was refused
    from spark_udfs.read.spec import read_spec

    def flag(spec):
        return {"verifyCrc": spec.config.verify_crc, "strict": spec.config.strict,
                "readCommitted": spec.config.read_committed, "includeHeaders": spec.columns.include_headers,
                "batchColumns": spec.config.batch_columns}[name]
    assert flag(read_spec({"path": "/p", name: "TRUE"})) is True
    assert flag(read_spec({"path": "/p", name.lower(): "false"})) is False
    for bad in ("yes", "1", "on", "no"):
        with pytest.raises(ValueError, match="must be true or false"):
            read_spec({"path": "/p", name: bad})


READ_TASK_IMPORTS = r"""
import json, sys
from spark_udfs.read.datasource import KafkaRecDataSource
source = KafkaRecDataSource({"path": sys.argv[1]})
reader = source.reader(source.schema())
rows = sum(batch.num_rows for part in reader.partitions() for batch in reader.read(part))
print(json.dumps({"rows": rows, "pandas": "pandas" in sys.modules}))
"""


def test_a_read_task_leaves_pandas_unimported(tmp_path):
    """A data source read of whole batches converts them for Spark without pandas: pyarrow
    imports pandas when an array is compared with a Python number, ~0.5 CPU-s in every
    Spark Python worker that starts (and Spark starts one per task after a minute idle)."""
    import json
    import subprocess
    import sys
    pytest.importorskip("pandas")      # else the check below proves nothing
    root = tmp_path / "logs"
    subprocess.run([sys.executable, "-m", "kafkarec.sample", str(root)], check=True, capture_output=True,
                   timeout=120)
    proc = subprocess.run([sys.executable, "-c", READ_TASK_IMPORTS, str(root / "orders-0")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.splitlines()[-1])
    assert got == {"rows": 2229, "pandas": False}


def _task_rows(root, schema, **options):
    """Every row a data source read of ``root`` hands Spark in ``schema`` (no Spark: the reader's
    tasks run here), as one pyarrow Table."""
    import pyarrow as pa
    from spark_udfs.read.datasource import KafkaRecDataSource
    source = KafkaRecDataSource({"path": root, **options})
    reader = source.reader(schema)
    return pa.Table.from_batches([b for part in reader.partitions() for b in reader.read(part)])


@pytest.mark.parametrize("mode", ["PERMISSIVE", "DROPMALFORMED"])
def test_a_user_schema_without_the_records_bytes_is_read_by_the_meta_walker(sample, tmp_path, mode,
                                                                          monkeypatch):
    """Spark prunes no column of a Python data source: a user schema without key, value and
    headers is the core's projection (its meta-only walk), and gives the rows and error rows of
    the whole read projected to it."""
    from pyspark.sql import types as T
    from spark_udfs.read import schema as _schema
    root = str(tmp_path / "corrupt")
    H.make_corrupt_dir(sample, root)
    whole = _datasource.KafkaRecDataSource({"path": root, "mode": mode}).schema()
    lean = T.StructType([whole[name] for name in ("topic", "partition", "offset", "timestamp", "timestampType")]
                        + ([whole["_corrupt_record"]] if mode == "PERMISSIVE" else []))
    spec = read_spec({"path": root, "mode": mode})
    target = _schema.arrow_schema_for(lean)
    corrupt = "_corrupt_record" if mode == "PERMISSIVE" else None
    assert _datasource._core_projection(spec, target, corrupt, [], None) == (
        "topic", "partition", "offset", "timestamp", "timestampType")
    assert _datasource._core_projection(spec, _schema.arrow_schema_for(whole), corrupt, [], None) is None
    asked = []
    plain_iter_arrow = kafkarec._core.iter_arrow

    def iter_arrow(*args, **kwargs):
        asked.append(kwargs.get("columns"))
        return plain_iter_arrow(*args, **kwargs)
    monkeypatch.setattr(kafkarec._core, "iter_arrow", iter_arrow)     # (decode_range imports it there)
    got = _task_rows(root, lean, mode=mode)
    # the core was asked for the projection (its meta-only walk), not for every column
    assert asked and all(c is not None and kafkarec._core.meta_walk(c) for c in asked), asked
    asked.clear()
    want = _task_rows(root, whole, mode=mode).select(lean.names)
    assert asked and all(c is None for c in asked), asked
    key = [("topic", "ascending"), ("offset", "ascending")]
    assert got.num_rows == want.num_rows > 0
    assert got.sort_by(key).to_pylist() == want.sort_by(key).to_pylist()
    if mode == "PERMISSIVE":
        assert got.column("_corrupt_record").null_count < got.num_rows     # the error rows are there


def test_a_user_schema_without_the_records_bytes_fails_fast_as_the_whole_read(sample, tmp_path):
    from pyspark.sql import types as T
    root = str(tmp_path / "corrupt")
    H.make_corrupt_dir(sample, root)
    whole = _datasource.KafkaRecDataSource({"path": root, "mode": "FAILFAST"}).schema()
    lean = T.StructType([whole[name] for name in ("topic", "partition", "offset", "timestamp")])
    errors = []
    for schema in (whole, lean):
        with pytest.raises(Exception) as info:
            _task_rows(root, schema, mode="FAILFAST")
        errors.append(str(info.value))
    assert "ChecksumError" in errors[0] and errors[0] == errors[1]


def test_ship_sends_an_extra_only_when_asked_and_a_later_call_sends_it_then(tmp_path, monkeypatch):
    """A decode job's executors get kafkarec's runtime dependencies alone (no confluent-kafka,
    grpcio, grpcio-tools, protobuf, cryptography or setuptools, all in the suite's wheelhouse); a
    later ship(extras=["tiered"]) on the same session sends cryptography's wheels and nothing sent
    before; an extra missing from the wheelhouse is a problem naming it.  The planner's check
    refuses an encrypted tiered read until the extra is beside the shipped archive, and a Python
    without cryptography installed imports it from there (kafkarec._boot.loader.ShippedWheelFinder)."""
    from kafkarec._boot import wheels as L
    from spark_udfs.ship import runtime as _runtime, shipping as _shipping
    monkeypatch.setenv("KAFKAREC_SPARK_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("KAFKAREC_WHEELHOUSE", raising=False)
    wheel = H.wheelhouse(sys.executable)
    monkeypatch.setattr(_shipping, "expected_fingerprint", lambda: _shipping.archive_fingerprint(wheel))

    def projects(paths):
        return sorted(L.parse_wheel_name(p).project for p in paths)

    sc = _StubContext()
    sc.applicationId = "ship-extras"
    first = _shipping.ship(_StubSession(sc), [wheel])
    assert projects(sc.files) == ["cramjam", "crc32c", "isal", "lz4", "msgspec", "packaging", "python-snappy",
                                  "zstandard"] and first.problems == []
    sent = list(sc.files)
    later = _shipping.ship(_StubSession(sc), [wheel], extras=["tiered"])
    assert projects(sc.files[len(sent):]) == projects(d.shipped_as for d in later.dependencies) == [
        "cffi", "cryptography", "pycparser"]
    # a wheelhouse without cryptography's wheel: the extra is named, with the command that adds it
    alone = tmp_path / "alone"
    alone.mkdir()
    for name in os.listdir(os.path.dirname(wheel)):
        if name.endswith(".whl") and not name.startswith("cryptography-"):
            os.symlink(os.path.join(os.path.dirname(wheel), name), alone / name)
    sc = _StubContext()
    sc.applicationId = "ship-extras-missing"
    missing = _shipping.ship(_StubSession(sc), [str(alone / os.path.basename(wheel))], extras=["tiered"])
    assert len(missing.problems) == 1 and "cryptography (needed by the tiered extra): not installed and no " \
        "cryptography wheel was found; the tiered extra asked for: put its wheels next to kafkarec's (bash " \
        "scripts/wheelhouse.sh DIR --extras tiered)" == missing.problems[0], missing.problems
    with pytest.raises(kafkarec.errors.UsageError, match="unknown kafkarec extra 'crypto' to ship: one of"):
        _shipping.ship(_StubSession(sc), [wheel], extras=["crypto"])
    # the planner's check, as on a bare worker (nothing installed): refused, then passed once shipped
    monkeypatch.setattr(L, "_installed", lambda project: False)
    monkeypatch.setattr(_runtime, "shipped_kafkarec_archive", lambda: str(alone / os.path.basename(wheel)))
    with pytest.raises(_runtime.ShippingError, match=r"^reading x needs the tiered extra \(cryptography\) on "
                       r"every executor, and this session did not ship it .*spark_udfs.register\(spark, "
                       r"extras=\['tiered'\]\)"):
        _runtime.require_shipped_extra("tiered", "reading x")
    monkeypatch.setattr(_runtime, "shipped_kafkarec_archive", lambda: wheel)
    _runtime.require_shipped_extra("tiered", "reading x")
    # a Python without site-packages imports cryptography from the wheel beside kafkarec's
    code = "import kafkarec, cryptography.hazmat.primitives.ciphers.aead as a; print(a.AESGCM.__name__)"
    for where, want in ((os.path.dirname(wheel), "AESGCM"), (str(alone), "No module named 'cryptography'")):
        proc = subprocess.run([sys.executable, "-I", "-S", "-c", f"import sys; sys.path.insert(0, {os.path.join(where, os.path.basename(wheel))!r}); {code}"],
                              env={"KAFKAREC_NATIVE_CACHE": str(tmp_path / "native")}, capture_output=True,
                              text=True, timeout=120, cwd=tmp_path)
        assert want in proc.stdout + proc.stderr, proc.stdout + proc.stderr[-2000:]


@pytest.mark.parametrize("ms", [
    [0, 1, 1_700_000_000_123, -1, -62135596800000, 253402300799999],     # in range: NumPy's x1000
    [5, 253402300799999 + 1, -62135596800000 - 1],                        # outside: checked path
    [5, None, 7],                                                         # nulls: checked path
    [],
])
def test_conform_gives_sparks_timestamps_as_the_checked_cast(ms):
    """conform's timestamps for Spark (issue 80: the in-range batch converted over a NumPy view)
    are what pyarrow's checked cast gives: micros in UTC, the raw milliseconds beside them, a value
    outside Spark's range null; a slice (an offset into the buffer) the same."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from spark_udfs.read import schema as _schema
    us = pa.timestamp("us", tz="UTC")
    target = pa.schema([("offset", pa.int64()), ("timestamp", us), (_schema.RAW_TIMESTAMP, pa.int64())])
    column = pa.array(ms, pa.int64())
    batch = pa.RecordBatch.from_arrays([pa.array(range(len(ms)), pa.int64()), column.cast(pa.timestamp("ms"))],
                                       names=["offset", "timestamp"])
    for b in (batch, batch.slice(1)):
        got = _schema.conform(b, target)
        got.validate(full=True)
        raw = b.column("timestamp").cast(pa.int64())
        inside = pc.and_(pc.greater_equal(raw, _schema.MIN_TIMESTAMP_MS), pc.less_equal(raw, _schema.MAX_TIMESTAMP_MS))
        want = pc.if_else(inside, b.column("timestamp"), pa.scalar(None, pa.timestamp("ms"))).cast(us)
        assert got.column("timestamp").to_pylist() == want.to_pylist()
        assert got.column("timestamp").type == us
        assert got.column(_schema.RAW_TIMESTAMP).to_pylist() == raw.to_pylist()
