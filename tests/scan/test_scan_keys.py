"""Keys in the reader's bounds (``Bounds(keys=...)``) and its ``partitioner`` option: the rows of
filtering the full read by key; error rows (PERMISSIVE) still given, with a null key, for the
engine to filter again; murmur2 opens only the partitions it names; bad input refused."""
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from kafkarec.errors import UsageError
from kafkarec.scan import Bounds, LogScan, ScanConfig
from support.logs.engine_logs import damaged_copy, keyed_topic, segment_bytes_read


@pytest.fixture(scope="module")
def keyed(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("keyed"))
    return root, len(keyed_topic(root, partitions=4, records=2_000))


def _by_key(table, keys):
    return table.filter(pc.fill_null(pc.is_in(table["key"], value_set=pa.array(keys, pa.binary())), False))


@pytest.mark.parametrize("partitioner", [None, "murmur2"])
@pytest.mark.parametrize("keys", [[b"key-7"], [b"key-7", b"key-150", b"absent"], []])
def test_keys_give_the_rows_of_filtering_the_full_read(keyed, keys, partitioner):
    root, _ = keyed
    full = LogScan(root).to_table()
    got = LogScan(root, bounds=Bounds.of(keys=keys), partitioner=partitioner).to_table()
    want = _by_key(full, keys)
    key = lambda t: sorted(zip(t["partition"].to_pylist(), t["offset"].to_pylist(), t["value"].to_pylist()))  # noqa: E731
    assert key(got) == key(want)
    assert got.num_rows == 10 * len([k for k in keys if k != b"absent"])


def test_murmur2_opens_only_the_named_partitions(keyed):
    from kafkarec._core import partition_for_key
    root, n = keyed
    scan = LogScan(root, bounds=Bounds.of(keys=[b"key-7", b"key-9"]), partitioner="murmur2")
    assert {p.partition for p in scan.pieces()} == {partition_for_key(k, n) for k in (b"key-7", b"key-9")}
    got, read, total = segment_bytes_read(root, lambda: LogScan(root, bounds=Bounds.of(keys=[b"key-7"]),
                                                                 partitioner="murmur2").to_table())
    assert got.num_rows == 10 and 0 < read <= total / n + 0.01 * total, (read, total)
    # num_partitions given: N as the producer had it, not as the listing shows it
    scan = LogScan(root, bounds=Bounds.of(keys=[b"key-7"]), partitioner="murmur2", num_partitions={"keyed": 1})
    assert {p.partition for p in scan.pieces()} == {0}


def test_murmur2_prunes_nothing_where_the_listing_cannot_tell_the_partition_count(tmp_path):
    """One broker's log dir holding partitions 0, 2 and 4 of a 6-partition topic, or a log dir
    holding only partition 4: the highest partition plus one is not the topic's N, so murmur2
    names no partition and every listed one is read (the key's rows all found); given
    ``num_partitions``, it prunes again."""
    import shutil

    from kafkarec._core import partition_for_key
    folders = keyed_topic(str(tmp_path / "all"), partitions=6, records=600, keys=60)
    keys = [b"key-%d" % i for i in range(60)]
    for name, numbers in (("share", (0, 2, 4)), ("one", (4,))):
        for p in numbers:
            shutil.copytree(folders[p], tmp_path / name / f"keyed-{p}")
        root = str(tmp_path / name)
        # a key held here whose partition under the guessed N (the highest listed plus one) differs
        key = next(k for k in keys if partition_for_key(k, 6) in numbers
                   and partition_for_key(k, max(numbers) + 1) != partition_for_key(k, 6))
        got = LogScan(root, bounds=Bounds.of(keys=[key]), partitioner="murmur2").to_table()
        assert got.num_rows == _by_key(LogScan(root).to_table(), [key]).num_rows == 10
    key = next(k for k in keys if partition_for_key(k, 6) == 2)
    scan = LogScan(str(tmp_path / "share"), bounds=Bounds.of(keys=[key]), partitioner="murmur2",
                   num_partitions={"keyed": 6})
    assert {p.partition for p in scan.pieces()} == {2}
    assert scan.to_table().num_rows == 10


def test_error_rows_are_still_given(tmp_path):
    """A damaged batch's error row has a null key: the read gives it (the engine filters it out
    again, as for offset bounds), and the other batches' rows are those of the key."""
    from support.logs.logdir import build_log_dir
    root = str(tmp_path / "logs")
    build_log_dir(root)
    broken = damaged_copy(root, str(tmp_path / "damaged"), "corrupt")
    full = LogScan(broken, mode="PERMISSIVE").to_table()
    errors = full.filter(pc.is_valid(full["_corrupt_record"]))
    assert errors.num_rows > 0
    key = next(k for k in full["key"].to_pylist() if k is not None)
    got = LogScan(broken, mode="PERMISSIVE", bounds=Bounds.of(keys=[key])).to_table()
    assert got.filter(pc.is_valid(got["_corrupt_record"])).num_rows == errors.num_rows
    assert got.filter(pc.is_null(got["_corrupt_record"]))["offset"].to_pylist() == \
        _by_key(full, [key])["offset"].to_pylist()


def test_bad_keys_and_partitioners_are_refused():
    with pytest.raises(UsageError, match="a set of keys, not one bytes"):
        Bounds.of(keys=b"key-7")
    with pytest.raises(UsageError, match="a key is bytes, not str"):
        Bounds.of(keys=["key-7"])
    with pytest.raises(UsageError, match="partitioner 'fnv': one of murmur2"):
        ScanConfig.of("/nowhere", partitioner="fnv")
    with pytest.raises(UsageError, match="num_partitions of 't': 0"):
        ScanConfig.of("/nowhere", partitioner="murmur2", num_partitions={"t": 0})
    assert Bounds.of(keys=[bytearray(b"k")]).intersect(Bounds.of(keys=[b"k", b"j"])).keys == {b"k"}
