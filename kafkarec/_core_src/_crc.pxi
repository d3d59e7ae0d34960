# Checksums.  v2 batches use CRC-32C (Castagnoli) from the `crc32c` package,
# which picks the CPU's CRC instruction and releases the GIL on large inputs;
# legacy v0/v1 messages use plain CRC-32 (IEEE) from zlib.  Nothing here is
# computed in Python.
import crc32c as _crc32c_module
import zlib as _zlib

cdef object _crc32c = _crc32c_module.crc32c
cdef object _crc32 = _zlib.crc32

CRC32C_HARDWARE = bool(getattr(_crc32c_module, "hardware_based", False))


cdef uint32_t crc32c_of(const uint8_t *p, Py_ssize_t n) except? 0xFFFFFFFF:
    return <uint32_t>_crc32c(view_of(p, n))


cdef uint32_t crc32_of(const uint8_t *p, Py_ssize_t n) except? 0xFFFFFFFF:
    return <uint32_t>_crc32(view_of(p, n))


def crc32c(data, /) -> int:
    """CRC-32C of a bytes-like object, as Kafka's v2 batches use it."""
    return <uint32_t>_crc32c(data)
