"""Kafka's default partitioner in the core: ``murmur2`` against the vectors of Kafka's
``UtilsTest.testMurmur2`` and against kafka-python's independent port, and
``partition_for_key`` as ``BuiltInPartitioner.partitionForKey``."""
import pytest
from hypothesis import given, settings, strategies as st
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from kafkarec._core import misplaced_keys, murmur2, partition_for_key

# Kafka's UtilsTest.testMurmur2 (signed, as Java returns them)
VECTORS = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


@pytest.mark.parametrize("data, expected", sorted(VECTORS.items()))
def test_murmur2_is_kafkas(data, expected):
    assert murmur2(data) == expected


@given(st.binary(max_size=64))
def test_murmur2_agrees_with_kafka_python(data):
    assert murmur2(data) & 0xFFFFFFFF == kafka_python_murmur2(data)


@given(st.binary(max_size=40), st.integers(1, 1000))
def test_partition_for_key_is_the_positive_hash_modulo(data, n):
    assert partition_for_key(data, n) == (murmur2(data) & 0x7FFFFFFF) % n


def test_partition_for_key_takes_any_buffer_and_refuses_no_partitions():
    assert partition_for_key(bytearray(b"foobar"), 50) == partition_for_key(memoryview(b"foobar"), 50)
    with pytest.raises(ValueError):
        partition_for_key(b"k", 0)


@settings(max_examples=200, deadline=None)
@given(keys=st.lists(st.one_of(st.none(), st.binary(max_size=40)), max_size=60),
       num_partitions=st.integers(1, 12), data=st.data(), large=st.booleans())
def test_misplaced_keys_counts_what_partition_for_key_places_elsewhere(keys, num_partitions, data, large):
    """The census's placement count over an Arrow array (any slice, nulls skipped) equals the
    one-key partitioner's, key by key."""
    import pyarrow as pa
    partition = data.draw(st.integers(0, num_partitions - 1))
    array = pa.array(keys, pa.large_binary() if large else pa.binary())
    start = data.draw(st.integers(0, len(keys)))
    part = array.slice(start, data.draw(st.integers(0, len(keys) - start)))
    want = sum(1 for k in part.to_pylist() if k is not None and partition_for_key(k, num_partitions) != partition)
    assert misplaced_keys(part, num_partitions, partition) == want


def test_misplaced_keys_refuses_what_is_no_key_array():
    import pyarrow as pa
    with pytest.raises(TypeError, match="binary"):
        misplaced_keys(pa.array(["a"]), 2, 0)
    with pytest.raises(ValueError, match="at least 1"):
        misplaced_keys(pa.array([b"a"]), 0, 0)
