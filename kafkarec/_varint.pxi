cdef extern from *:
    int __builtin_clzll(unsigned long long) nogil

# Zig-zag varints as Kafka writes them (protobuf base-128, little-endian groups).
# Kafka's ByteUtils rules: an int32 varint is at most 5 bytes and the 5th byte
# must not have its continuation bit; its bits above bit 31 are dropped
# silently (strict mode rejects them).  A varlong is at most 10 bytes.

cdef inline int32_t zigzag32(uint32_t v) noexcept nogil:
    return <int32_t>((v >> 1) ^ (<uint32_t>0 - (v & 1)))


cdef inline int64_t zigzag64(uint64_t v) noexcept nogil:
    return <int64_t>((v >> 1) ^ (<uint64_t>0 - (v & 1)))


cdef int read_varint_slow(Cursor *c, int32_t *out, str what) except -1:
    cdef const uint8_t *p = c.pos
    cdef uint32_t value = 0
    cdef uint32_t b
    cdef int i
    for i in range(5):
        if p + i >= c.end:
            cursor_fail(c, p, InvalidRecordError,
                        f"{what}: varint runs past the end of the batch")
        b = p[i]
        value |= (b & 0x7F) << (7 * i)
        if b < 0x80:
            if i == 4 and c.strict and (b & 0x70):
                cursor_fail(c, p, InvalidRecordError,
                            f"{what}: varint overflows 32 bits")
            c.pos = p + i + 1
            out[0] = zigzag32(value)
            return 0
    cursor_fail(c, p, InvalidRecordError,
                f"{what}: varint is too long, the most significant bit in the 5th byte is set")
    return -1


cdef inline int read_varint(Cursor *c, int32_t *out, str what) except -1:
    cdef const uint8_t *p = c.pos
    if c.end - p >= 2:
        # One- and two-byte varints (lengths under 8 KiB) take no loop.
        if p[0] < 0x80:
            c.pos = p + 1
            out[0] = zigzag32(p[0])
            return 0
        if p[1] < 0x80:
            c.pos = p + 2
            out[0] = zigzag32((p[0] & 0x7F) | (<uint32_t>p[1] << 7))
            return 0
    return read_varint_slow(c, out, what)


cdef int read_varlong_slow(Cursor *c, int64_t *out, str what) except -1:
    cdef const uint8_t *p = c.pos
    cdef uint64_t value = 0
    cdef uint64_t b
    cdef int i
    for i in range(10):
        if p + i >= c.end:
            cursor_fail(c, p, InvalidRecordError,
                        f"{what}: varlong runs past the end of the batch")
        b = p[i]
        value |= (b & 0x7F) << (7 * i)
        if b < 0x80:
            if i == 9 and c.strict and (b & 0x7E):
                cursor_fail(c, p, InvalidRecordError,
                            f"{what}: varlong overflows 64 bits")
            c.pos = p + i + 1
            out[0] = zigzag64(value)
            return 0
    cursor_fail(c, p, InvalidRecordError,
                f"{what}: varlong is too long, the most significant bit in the 10th byte is set")
    return -1


cdef inline int read_varlong(Cursor *c, int64_t *out, str what) except -1:
    cdef const uint8_t *p = c.pos
    if p < c.end and p[0] < 0x80:
        c.pos = p + 1
        out[0] = zigzag64(p[0])
        return 0
    return read_varlong_slow(c, out, what)


cdef inline Py_ssize_t varint_size(int64_t value) noexcept nogil:
    """Bytes needed for the zig-zag varint/varlong encoding of value."""
    cdef uint64_t v = (<uint64_t>value << 1) ^ <uint64_t>(value >> 63)
    if v < 0x80:
        return 1
    # bits needed, 7 per byte
    return (64 - __builtin_clzll(v) + 6) // 7


cdef inline uint8_t *write_varlong(uint8_t *p, int64_t value) noexcept nogil:
    """Write the zig-zag encoding of value at p; the caller ensures room (<= 10 bytes)."""
    cdef uint64_t v = (<uint64_t>value << 1) ^ <uint64_t>(value >> 63)
    if v < 0x80:
        p[0] = <uint8_t>v
        return p + 1
    while v >= 0x80:
        p[0] = <uint8_t>(v | 0x80)
        p += 1
        v >>= 7
    p[0] = <uint8_t>v
    return p + 1
