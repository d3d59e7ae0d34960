"""kafkarec.scan.ScanConfig, the one immutable config of a read: LogScan's keywords read into it
once, narrowing and pushdown making new configs, "listed" decided from it, offset ranges read
exactly, and the listing's notes and the framed walk the command line takes from the reader."""
import dataclasses
import pickle

import pytest

from kafkarec.errors import UsageError
from kafkarec.scan import Bounds, FileFinding, LogScan, ScanConfig

from support.logs.logdir import build_log_dir


@pytest.fixture(scope="module")
def logroot(tmp_path_factory):
    root = tmp_path_factory.mktemp("configlogs")
    build_log_dir(str(root))
    return str(root)


def _offsets(table):
    return sorted(zip(table.column("topic").to_pylist(), table.column("partition").to_pylist(),
                      table.column("offset").to_pylist()))


def test_keywords_become_one_frozen_config(logroot):
    scan = LogScan(logroot, columns=["offset", "topic"], topics=["orders"], limit=5,
                   isolation_level="read_committed", mode="permissive")
    config = scan.config
    assert isinstance(config, ScanConfig)
    assert config == ScanConfig.of(logroot, columns=["offset", "topic"], topics=["orders"], limit=5,
                                   isolation_level="read_committed", mode="permissive")
    assert (config.paths, config.columns, config.limit, config.read_committed, config.mode) == (
        (logroot,), ("offset", "topic"), 5, True, "PERMISSIVE")
    assert config.bounds == Bounds.of(topics=["orders"])
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.bounds = Bounds()
    # one construction path: a config, LogScan.of and the keywords give the same scan
    assert LogScan(config).config is config
    assert LogScan.of(logroot, columns=["offset", "topic"], topics=["orders"], limit=5,
                      isolation_level="read_committed", mode="permissive").config == config
    assert pickle.loads(pickle.dumps(config)) == config
    with pytest.raises(UsageError, match="not both"):
        LogScan(config, limit=3)


def test_keyword_errors_are_the_scans(logroot):
    with pytest.raises(UsageError, match="isolation_level 'x': one of read_uncommitted, read_committed"):
        ScanConfig.of(logroot, isolation_level="x")
    with pytest.raises(UsageError, match="limit -1: not negative"):
        LogScan(logroot, limit=-1)
    with pytest.raises(UsageError, match="LogScan: no source given"):
        LogScan([])
    with pytest.raises(UsageError, match=r"column\(s\) \['nope'\] are not read"):
        LogScan(logroot, columns=["nope"])


def test_narrow_makes_a_new_config_and_leaves_the_old_one(logroot):
    """narrow() (every engine's pushdown) replaces, never mutates: a plan or task holding the
    first config keeps reading what it planned.  A scan made from a config narrows too."""
    scan = LogScan(ScanConfig((logroot,), columns=("offset", "partition", "topic")))
    before = scan.config
    narrowed = scan.narrow(bounds=Bounds.of(partitions=[0], offsets=(0, 3)), limit=10)
    assert scan.config is before and before.bounds.unbounded and before.limit is None
    assert narrowed.config == dataclasses.replace(before, bounds=Bounds.of(partitions=[0], offsets=(0, 3)),
                                                  limit=10)
    assert narrowed.narrow(limit=20).limit == 10 and narrowed.narrow(limit=2).limit == 2
    rows = _offsets(narrowed.to_table())
    assert rows and all(p == 0 and o < 3 for _, p, o in rows)
    assert _offsets(scan.to_table()) == _offsets(LogScan(logroot).to_table())


def test_listed_is_decided_by_the_config(logroot):
    assert not ScanConfig((logroot,)).listed
    assert ScanConfig((logroot,), bounds=Bounds.of(offsets=(1, None))).listed
    assert ScanConfig(("file://" + logroot,)).listed
    assert ScanConfig((logroot,), offset_ranges=(("orders", 0, 0, 2),)).listed
    assert ScanConfig((logroot,), listing=True).listed
    assert ScanConfig.of(logroot, include_deleted_records=True).listed
    assert not ScanConfig.of(logroot, files=FileFinding(recursive=True)).listed


def test_a_local_read_finds_the_files_a_listed_read_finds(logroot, tmp_path):
    """One recursiveFileLookup default, FileFinding's (true, as the Spark option's): a log dir one
    folder down is read whether the read is of local files or over a listing (a local read walked
    no sub-folder by default, and read nothing here)."""
    import shutil
    shutil.copytree(logroot, tmp_path / "broker-a" / "data")
    local = _offsets(LogScan(str(tmp_path)).to_table())
    assert local == _offsets(LogScan(ScanConfig((str(tmp_path),), listing=True)).to_table())
    assert local == _offsets(LogScan(logroot).to_table()) and local

def test_a_config_is_checked_however_it_is_made():
    """The dataclass checks its fields and settles their defaults (made field by field, by .of or
    by dataclasses.replace alike); .of only translates keywords.  Field by field nothing was checked."""
    made = ScanConfig("/logs", columns=["offset"], limit=3, mode="permissive", num_partitions={"t": 2})
    assert (made.paths, made.columns, made.limit, made.mode, made.num_partitions) == (
        ("/logs",), ("offset",), 3, "PERMISSIVE", {"t": 2})
    assert made == ScanConfig.of("/logs", columns=["offset"], limit=3, mode="permissive", num_partitions={"t": 2})
    for fields, message in [({"limit": -1}, "limit -1: not negative"), ({"mode": "LENIENT"}, "mode must be one of"),
                            ({"partitioner": "crc"}, "partitioner 'crc': one of murmur2"),
                            ({"num_partitions": {"t": 0}}, "no partition count"), ({"threads": 0}, "threads 0")]:
        with pytest.raises(UsageError, match=message):
            ScanConfig(("/logs",), **fields)
        with pytest.raises(UsageError, match=message):
            dataclasses.replace(made, **fields)
    with pytest.raises(UsageError, match="no source given"):
        ScanConfig(())
    with pytest.raises(UsageError, match="key_format decodes"):
        ScanConfig.of("/logs", key_format="avro", registry="/r", bounds=Bounds.of(keys=[b"k"]))


def test_rows_per_batch_by_what_the_read_builds_and_its_limit():
    """An engine pays for each batch it takes: a read without a limit takes big batches (the
    lean walk's 524,288 rows, whole rows' 131,072); a read with a limit 65,536, as the core builds a
    whole batch before the limit can stop it; ``max_rows_per_batch`` overrides them all."""
    from kafkarec.scan import config as scan_config
    assert (scan_config.LEAN_ROWS_PER_BATCH, scan_config.ROWS_PER_BATCH, scan_config.LIMITED_ROWS_PER_BATCH) == (
        524288, 131072, 65536)
    plain, limited = ScanConfig.of("/logs"), ScanConfig.of("/logs", limit=10)
    assert (plain.rows_per_batch(True), plain.rows_per_batch(False)) == (524288, 131072)
    assert (limited.rows_per_batch(True), limited.rows_per_batch(False)) == (65536, 65536)
    chosen = ScanConfig.of("/logs", limit=10, max_rows_per_batch=7)
    assert (chosen.rows_per_batch(True), chosen.rows_per_batch(False)) == (7, 7)


def test_offset_ranges_read_exactly_those_offsets(logroot):
    """A stream's micro-batch, a backfill's [start, H): the ranges read exactly, each range's
    pieces marked with its index (one task each)."""
    full = _offsets(LogScan(logroot).to_table())
    (topic, partition, _), = {(t, p, None) for t, p, _ in full if (t, p) == full[0][:2]}
    mine = [o for t, p, o in full if (t, p) == (topic, partition)]
    lo, mid, hi = mine[1], mine[len(mine) // 2], mine[-1]
    config = ScanConfig((logroot,), offset_ranges=((topic, partition, lo, mid), (topic, partition, mid, hi)))
    scan = LogScan(config)
    pieces = scan.pieces()
    assert {p.item.share for p in pieces} == {0, 1}
    first = _offsets(pyarrow_table(scan, [p for p in pieces if p.item.share == 0]))
    second = _offsets(pyarrow_table(scan, [p for p in pieces if p.item.share == 1]))
    assert [o for _, _, o in first] == [o for o in mine if lo <= o < mid]
    assert [o for _, _, o in second] == [o for o in mine if mid <= o < hi]


def pyarrow_table(scan, pieces):
    import pyarrow as pa
    return pa.Table.from_batches([b for p in pieces for b in scan.read_piece(p)], schema=scan.schema)


def test_framed_walks_the_same_pieces(logroot):
    """The command line's dump/stats read the reader's pieces framed (control batches too)."""
    scan = LogScan(ScanConfig((logroot,), listing=True, every_record=True))
    framed = [b for p in scan.pieces() for b in scan.framed(p)]
    assert framed and any(b.is_control for b in framed)
    records = sum(sum(1 for r in b if not r.is_control) for b in framed if not b.is_control)
    assert records == LogScan(logroot).to_table().num_rows


def test_the_listing_reports_through_the_hook(tmp_path, logroot):
    """What a listing met goes to the caller's hook (the command line prints its own lines)."""
    import shutil
    root = tmp_path / "logs"
    shutil.copytree(logroot, root)
    # a partition folder as LocalLog renames it for deletion: Kafka skips it
    gone = root / "orders-9.0123456789abcdef0123456789abcdef-delete"
    gone.mkdir()
    (gone / f"{0:020d}.log").write_bytes(b"")
    seen = []
    LogScan(ScanConfig((str(root),), listing=True)).pieces(lambda kind, *_: seen.append(kind))
    assert "skipped" in seen


# --- finding 50 (issue 78): every option checked at the boundary, into typed bounded values ---

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from kafkarec.errors import SelectionError  # noqa: E402


@pytest.mark.parametrize("keywords, named", [
    ({"max_rows_per_batch": 2 ** 63}, "max_rows"), ({"max_rows_per_batch": 1.5}, "max_rows"),
    ({"max_rows_per_batch": "5"}, "max_rows"), ({"max_rows_per_batch": 0}, "max_rows"),
    ({"max_rows_per_batch": True}, "max_rows"),
    ({"limit": float("inf")}, "limit"), ({"limit": [1]}, "limit"), ({"limit": 1.5}, "limit"),
    ({"limit": True}, "limit"), ({"limit": float("nan")}, "limit"),
    ({"columns": 5}, "columns"), ({"columns": ["offset", 5]}, "columns"),
    ({"topics": 5}, "topics"), ({"topics": ["orders", 5]}, "topics"), ({"topics": [{}]}, "topics"),
    ({"partitions": 5}, "partitions"), ({"partitions": [1.5]}, "partitions"), ({"partitions": ["x"]}, "partitions"),
    ({"partitions": [-1]}, "partitions"), ({"partitions": [2 ** 31]}, "partitions"),
    ({"threads": 2.0}, "threads"), ({"verify_crc": "no"}, "verify_crc"), ({"batch_columns": 1}, "batch_columns"),
    ({"num_partitions": 5}, "num_partitions"), ({"num_partitions": {5: 2}}, "num_partitions"),
    ({"files": 5}, "files"), ({"bounds": (0, 5)}, "bounds"), ({"selection": 5}, "selection"),
    ({"typed_options": 5, "value_format": "avro"}, "typed_options"), ({"value_format": 5}, "value_format"),
    ({"tiered_storage": 5}, "tiered_storage"), ({"bad_records_path": [1]}, "bad_records_path"),
    ({"storage_options": 5}, "storage_options"), ({"include_deleted_records": "yes"}, "include_deleted_records"),
    ({"partitioner": ["murmur2"]}, "partitioner"),
])
def test_a_bad_keyword_is_a_usage_error_naming_it(keywords, named):
    """Finding 50: these passed unchecked and surfaced at read time as OverflowError/TypeError
    (or read something else silently: 1.5 rows, partition -1)."""
    with pytest.raises(UsageError, match=named) as raised:
        ScanConfig.of("/logs", **keywords)
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize("fields, named", [
    ({"max_rows": 2 ** 63}, "max_rows"), ({"max_decompressed_bytes": float("inf")}, "max_decompressed_bytes"),
    ({"max_decompressed_bytes": -1}, "max_decompressed_bytes"), ({"strict": "false"}, "strict"),
    ({"offset_ranges": (("t", -1, 0, 5),)}, "offset_ranges"), ({"offset_ranges": (("t", 0, 0.5, 5),)}, "offset_ranges"),
    ({"corrupt_column": None}, "corrupt_column"), ({"paths": 5}, "paths"), ({"paths": None}, "paths"),
    ({"paths": ["/a", 5]}, "paths"), ({"typed": "avro"}, "typed"),
])
def test_a_bad_field_is_refused_however_the_config_is_made(fields, named):
    made = ScanConfig(("/logs",))
    for make in (lambda: ScanConfig(**{"paths": ("/logs",), **fields}), lambda: dataclasses.replace(made, **fields)):
        with pytest.raises(UsageError, match=named):
            make()


@pytest.mark.parametrize("pair", [(float("inf"), None), (None, float("inf")), (float("nan"), 3), (1.5, None),
                                  ("1", None), (True, None), 5, (1, 2, 3)])
def test_bounds_take_whole_numbers_only(pair):
    for make in (lambda: Bounds.of(offsets=pair), lambda: Bounds(offsets=pair), lambda: Bounds.of(timestamps=pair)):
        with pytest.raises(UsageError, match="offsets|timestamps"):
            make()


def test_one_name_is_that_name_never_its_letters():
    """A str is a sequence of characters: columns="key" or topics="orders" read as Spark's
    select("key") and subscribe=orders do, one name."""
    config = ScanConfig.of("/logs", columns="key", topics="orders")
    assert config.columns == ("key",) and config.bounds.topics == {"orders"}
    assert dataclasses.replace(config, columns="value").columns == ("value",)
    # what was accepted stays accepted: NumPy-style integers (__index__), path-like sources, clipping past a long
    class Index:
        def __index__(self):
            return 7
    config = ScanConfig.of(__import__("pathlib").Path("/logs"), limit=Index(), partitions=[Index()],
                           bounds=Bounds.of(offsets=(0, 2 ** 64)))
    assert (config.paths, config.limit, set(config.bounds.partitions), config.bounds.offsets) == (
        ("/logs",), 7, {7}, (0, None))


_ANY = st.one_of(st.none(), st.booleans(), st.integers(), st.integers(min_value=-(1 << 70), max_value=1 << 70),
                 st.floats(), st.text(max_size=8), st.binary(max_size=4),
                 st.lists(st.one_of(st.integers(), st.text(max_size=4), st.floats(), st.none()), max_size=3),
                 st.tuples(st.one_of(st.none(), st.integers(), st.floats()), st.one_of(st.none(), st.integers())),
                 st.dictionaries(st.one_of(st.text(max_size=4), st.integers()), st.one_of(st.integers(), st.text(max_size=4)),
                                 max_size=2))
_KEYWORDS = ["columns", "topics", "partitions", "limit", "isolation_level", "storage_options", "tiered_storage",
             "include_deleted_records", "mode", "value_format", "key_format", "typed_options", "selection", "files",
             "batch_columns", "include_control", "bad_records_path", "verify_crc", "max_rows_per_batch",
             "fail_on_data_loss", "partitioner", "num_partitions", "threads", "bounds"]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(_KEYWORDS), _ANY, max_size=4))
def test_any_keyword_value_builds_a_config_or_is_a_usage_error(keywords):
    """Any value of LogScan's keywords either builds a config or is a UsageError (a SelectionError
    for the Kafka source's options in ``selection``), never anything else."""
    try:
        config = ScanConfig.of("/logs", **keywords)
    except (UsageError, SelectionError) as exc:
        assert "\n" not in str(exc)
        return
    assert dataclasses.replace(config) == config
    assert pickle.loads(pickle.dumps(config)) == config
