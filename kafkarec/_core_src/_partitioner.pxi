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


def misplaced_keys(keys, int num_partitions, int partition, /) -> int:
    """How many non-null keys of ``keys`` (a pyarrow ``binary`` or ``large_binary`` array) Kafka's
    default partitioner puts in another partition than ``partition`` of ``num_partitions``: the
    census's placement check, over the array's buffers (no Python object per key)."""
    if num_partitions <= 0:
        raise ValueError(f"num_partitions {num_partitions}: at least 1")
    cdef Py_ssize_t n = len(keys), start = keys.offset, i
    if n == 0:
        return 0
    cdef bint large = str(keys.type) == "large_binary"
    if not large and str(keys.type) != "binary":
        raise TypeError(f"keys: a binary or large_binary array, not {keys.type}")
    validity, offsets_buffer, data_buffer = keys.buffers()
    # pyarrow's buffers export signed chars: viewed as bytes
    cdef const uint8_t[::1] bits = memoryview(validity).cast("B") if validity is not None else None
    cdef const uint8_t[::1] raw_offsets = memoryview(offsets_buffer).cast("B")
    cdef const uint8_t[::1] data = (memoryview(data_buffer).cast("B") if data_buffer is not None and data_buffer.size
                                    else memoryview(b"\0"))
    cdef Py_ssize_t width = 8 if large else 4
    if raw_offsets.shape[0] < (start + n + 1) * width or \
            (bits is not None and bits.shape[0] * 8 < start + n):
        raise ValueError("keys: the array's buffers are shorter than its length")
    cdef const uint8_t *offs = &raw_offsets[0]
    cdef int64_t lo, hi, size = data_buffer.size if data_buffer is not None else 0
    cdef int32_t lo32, hi32
    cdef Py_ssize_t count = 0
    cdef uint32_t want = <uint32_t>partition, parts = <uint32_t>num_partitions
    with nogil:
        for i in range(start, start + n):
            if bits is not None and not (bits[i >> 3] >> (i & 7)) & 1:
                continue
            if large:
                memcpy(&lo, offs + i * 8, 8)
                memcpy(&hi, offs + i * 8 + 8, 8)
            else:
                memcpy(&lo32, offs + i * 4, 4)
                memcpy(&hi32, offs + i * 4 + 4, 4)
                lo, hi = lo32, hi32
            if lo < 0 or hi < lo or hi > size:
                with gil:
                    raise ValueError(f"keys: entry {i - start} lies outside the array's data")
            if (kafkarec_murmur2(&data[0] + lo, <size_t>(hi - lo)) & 0x7fffffffu) % parts != want:
                count += 1
    return count
