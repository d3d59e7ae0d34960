cdef extern from *:
    int __builtin_clzll(unsigned long long) nogil
    int count_trailing_zeros64 "__builtin_ctzll"(unsigned long long) nogil   # (of a non-zero value)

# Zig-zag varints as Kafka writes them (protobuf base-128, little-endian groups).
# Kafka's ByteUtils rules: an int32 varint is at most 5 bytes and the 5th byte
# must not have its continuation bit; its bits above bit 31 are dropped
# silently (strict mode rejects them).  A varlong is at most 10 bytes.

cdef inline always_inline_i32 zigzag32(uint32_t v) noexcept nogil:
    return <int32_t>((v >> 1) ^ (<uint32_t>0 - (v & 1)))


cdef inline always_inline_i64 zigzag64(uint64_t v) noexcept nogil:
    return <int64_t>((v >> 1) ^ (<uint64_t>0 - (v & 1)))


# Decoding is split in two: take_varint/take_varlong never raise (they return
# a status and leave the position alone on failure), so hot loops stay small;
# read_varint/read_varlong turn a status into the error.
cdef enum VarintStatus:
    VARINT_OK = 0
    VARINT_PAST_END = 1
    VARINT_TOO_LONG = 2
    VARINT_OVERFLOW = 3
    VARLONG_PAST_END = 4
    VARLONG_TOO_LONG = 5
    VARLONG_OVERFLOW = 6
    UVARINT_PAST_END = 7
    UVARINT_TOO_LONG = 8
    UVARINT_OVERFLOW = 9


# The slow paths are always inlined too (always_inline.h): a call in the record loops, even one
# rarely taken, costs them registers.
cdef inline always_inline_int take_varint_slow(const uint8_t **pp, const uint8_t *end, bint strict,
                                 int32_t *out) noexcept nogil:
    cdef const uint8_t *p = pp[0]
    cdef uint32_t value = 0
    cdef uint32_t b
    cdef int i
    for i in range(5):
        if p + i >= end:
            return VARINT_PAST_END
        b = p[i]
        value |= (b & 0x7F) << (7 * i)
        if b < 0x80:
            if i == 4 and strict and (b & 0x70):
                return VARINT_OVERFLOW
            pp[0] = p + i + 1
            out[0] = zigzag32(value)
            return VARINT_OK
    return VARINT_TOO_LONG


cdef inline always_inline_int take_varint(const uint8_t **pp, const uint8_t *end, bint strict,
                            int32_t *out) noexcept nogil:
    cdef const uint8_t *p = pp[0]
    # One- and two-byte varints (lengths under 8 KiB) take no loop and no call; a one-byte
    # one may end its bounds (a record's last field: its header count).
    if p < end and p[0] < 0x80:
        pp[0] = p + 1
        out[0] = zigzag32(p[0])
        return VARINT_OK
    if end - p >= 2 and p[1] < 0x80:
        pp[0] = p + 2
        out[0] = zigzag32((p[0] & 0x7F) | (<uint32_t>p[1] << 7))
        return VARINT_OK
    return take_varint_slow(pp, end, strict, out)


cdef inline always_inline_int take_varlong_slow(const uint8_t **pp, const uint8_t *end, bint strict,
                                  int64_t *out) noexcept nogil:
    cdef const uint8_t *p = pp[0]
    cdef uint64_t value = 0
    cdef uint64_t b
    cdef int i
    for i in range(10):
        if p + i >= end:
            return VARLONG_PAST_END
        b = p[i]
        value |= (b & 0x7F) << (7 * i)
        if b < 0x80:
            if i == 9 and strict and (b & 0x7E):
                return VARLONG_OVERFLOW
            pp[0] = p + i + 1
            out[0] = zigzag64(value)
            return VARINT_OK
    return VARLONG_TOO_LONG


cdef inline always_inline_int take_varlong(const uint8_t **pp, const uint8_t *end, bint strict,
                             int64_t *out) noexcept nogil:
    cdef const uint8_t *p = pp[0]
    # One- and two-byte varlongs (timestamp deltas under 8 s) take no loop and no call; a
    # one-byte one may end its bounds.
    if p < end and p[0] < 0x80:
        pp[0] = p + 1
        out[0] = zigzag64(p[0])
        return VARINT_OK
    if end - p >= 2 and p[1] < 0x80:
        pp[0] = p + 2
        out[0] = zigzag64((p[0] & 0x7F) | (<uint64_t>p[1] << 7))
        return VARINT_OK
    return take_varlong_slow(pp, end, strict, out)


# Unsigned varints (Kafka's ByteUtils.readUnsignedVarint): the lengths, counts
# and tags of its message protocol (internal topics, control values) and the
# preamble of a raw snappy block.  At most 5 bytes; Kafka drops the bits of the
# 5th byte above bit 31, which strict mode refuses.
cdef inline int take_uvarint(const uint8_t **pp, const uint8_t *end, bint strict,
                             uint32_t *out) noexcept nogil:
    cdef const uint8_t *p = pp[0]
    cdef uint32_t value = 0
    cdef uint32_t b
    cdef int i
    if p < end and p[0] < 0x80:
        pp[0] = p + 1
        out[0] = p[0]
        return VARINT_OK
    for i in range(5):
        if p + i >= end:
            return UVARINT_PAST_END
        b = p[i]
        value |= (b & 0x7F) << (7 * i)
        if b < 0x80:
            if i == 4 and strict and (b & 0x70):
                return UVARINT_OVERFLOW
            pp[0] = p + i + 1
            out[0] = value
            return VARINT_OK
    return UVARINT_TOO_LONG


cdef str varint_problem(int status, str container="the batch"):
    """Why a varint could not be read; `container`: what it ran past the end of."""
    if status == UVARINT_PAST_END:
        return "unsigned varint runs past the end"
    if status == UVARINT_TOO_LONG:
        return "unsigned varint is too long, the most significant bit in the 5th byte is set"
    if status == UVARINT_OVERFLOW:
        return "unsigned varint overflows 32 bits"
    if status == VARINT_PAST_END:
        return f"varint runs past the end of {container}"
    if status == VARINT_TOO_LONG:
        return "varint is too long, the most significant bit in the 5th byte is set"
    if status == VARINT_OVERFLOW:
        return "varint overflows 32 bits"
    if status == VARLONG_PAST_END:
        return f"varlong runs past the end of {container}"
    if status == VARLONG_TOO_LONG:
        return "varlong is too long, the most significant bit in the 10th byte is set"
    return "varlong overflows 64 bits"


cdef int varint_fail(const Cursor *c, int status, str what, object cls=InvalidRecordError) except -1:
    # The cursor still points at the first byte of the bad varint.
    return cursor_fail(c, c.pos, cls, f"{what}: {varint_problem(status)}")


cdef inline int read_uvarint(Cursor *c, uint32_t *out, str what, object cls=InvalidRecordError) except -1:
    cdef int status = take_uvarint(&c.pos, c.end, c.strict, out)
    if status != VARINT_OK:
        varint_fail(c, status, what, cls)
    return 0


cdef inline int read_varint(Cursor *c, int32_t *out, str what) except -1:
    cdef int status = take_varint(&c.pos, c.end, c.strict, out)
    if status != VARINT_OK:
        varint_fail(c, status, what)
    return 0


cdef inline int read_varlong(Cursor *c, int64_t *out, str what) except -1:
    cdef int status = take_varlong(&c.pos, c.end, c.strict, out)
    if status != VARINT_OK:
        varint_fail(c, status, what)
    return 0


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


def encode_varlong(int64_t value) -> bytes:
    """``value`` as a zig-zag varlong (Kafka's record fields, Avro's int and long): the one
    encoder Python code uses (Avro defaults, Confluent's Protobuf message indexes)."""
    cdef uint8_t out[10]
    cdef uint8_t *end = write_varlong(out, value)
    return PyBytes_FromStringAndSize(<const char *>out, end - out)


# Plain (not zig-zag) unsigned base-128 varints of up to 10 bytes, as protobuf
# writes tags, lengths and integer fields.  A 10th byte's bits above bit 63 are
# dropped, as protobuf-java's CodedInputStream (what from_protobuf uses) and
# upb drop them; only a 10th byte with its continuation bit set is too long.
# Used by _protobuf.pxi.  Returns the status, leaves the position alone on failure.
cdef inline int take_uvarint64(const uint8_t **pp, const uint8_t *end, uint64_t *out) noexcept nogil:
    cdef const uint8_t *p = pp[0]
    cdef uint64_t value = 0
    cdef uint64_t b
    cdef int i
    if p < end and p[0] < 0x80:
        pp[0] = p + 1
        out[0] = p[0]
        return VARINT_OK
    for i in range(10):
        if p + i >= end:
            return VARLONG_PAST_END
        b = p[i]
        value |= (b & 0x7F) << (7 * i)
        if b < 0x80:
            pp[0] = p + i + 1
            out[0] = value
            return VARINT_OK
    return VARLONG_TOO_LONG
