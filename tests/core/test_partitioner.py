"""Kafka's default partitioner in the core: ``murmur2`` against the vectors of Kafka's
``UtilsTest.testMurmur2`` and against kafka-python's independent port, and
``partition_for_key`` as ``BuiltInPartitioner.partitionForKey``."""
import pytest
from hypothesis import given, strategies as st
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from kafkarec._core import murmur2, partition_for_key

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
