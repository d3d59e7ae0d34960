# Kafka's default partitioner for keyed records (BuiltInPartitioner.partitionForKey):
# murmur2(key) & 0x7fffffff % partitions, murmur2 in murmur2.h.

cdef extern from "murmur2.h":
    uint32_t kafkarec_murmur2(const uint8_t *data, size_t n) noexcept nogil


def murmur2(key, /) -> int:
    """Kafka's ``Utils.murmur2(key)``: a signed 32-bit int, as Java returns it."""
    cdef const uint8_t[::1] view = memoryview(key).cast("B")
    cdef const uint8_t *p = &view[0] if view.shape[0] else <const uint8_t *>b""
    cdef uint32_t h = kafkarec_murmur2(p, <size_t>view.shape[0])
    return <int32_t>h


def partition_for_key(key, int num_partitions, /) -> int:
    """The partition Kafka's default partitioner names for a non-null ``key`` among
    ``num_partitions`` (``toPositive(murmur2(key)) % numPartitions``)."""
    if num_partitions <= 0:
        raise ValueError(f"num_partitions {num_partitions}: at least 1")
    cdef const uint8_t[::1] view = memoryview(key).cast("B")
    cdef const uint8_t *p = &view[0] if view.shape[0] else <const uint8_t *>b""
    return <int>((kafkarec_murmur2(p, <size_t>view.shape[0]) & 0x7fffffffu) % <uint32_t>num_partitions)
