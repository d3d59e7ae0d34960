# Legacy message sets (magic 0 and 1).
#
# Log entry: offset int64 | size int32 | crc uint32 (CRC-32 of magic..end)
#            | magic int8 | attributes int8 (bits 0-2 codec, bit 3 LogAppendTime, v1)
#            | timestamp int64 (magic 1 only)
#            | keyLength int32 | key | valueLength int32 | value
# An uncompressed entry is a batch of one record.  A compressed entry (a
# "wrapper") holds a whole inner message set, compressed, as its value; in a
# magic 1 wrapper the inner offsets are relative to the wrapper's (last) offset.

cdef enum:
    LEGACY_OFF_CRC = 12
    LEGACY_OFF_TIMESTAMP = 18
    LEGACY_V0_KEY_LENGTH = 18
    LEGACY_V1_KEY_LENGTH = 26
    LEGACY_V1_MIN_SIZE = 22 + LOG_OVERHEAD
    LEGACY_V0_UNUSED = 0xF8        # attribute bits a magic-0 message does not define
    LEGACY_V1_UNUSED = 0xF0        # ... and a magic-1 message


cdef int parse_legacy_header(RecordBatch b, const uint8_t *p) except -1:
    cdef int codec
    b.attributes = p[OFF_MAGIC + 1]
    b._base_offset = <int64_t>kr_load_be64(p)
    b.crc = kr_load_be32(p + LEGACY_OFF_CRC)
    b.partition_leader_epoch = -1
    b.base_timestamp = -1
    b.producer_id = -1
    b.producer_epoch = -1
    b.base_sequence = -1
    if b.magic == 1:
        if b.size_in_bytes < LEGACY_V1_MIN_SIZE:
            raise CorruptBatchError(
                f"Record is corrupt (size {b.size_in_bytes - LOG_OVERHEAD} is smaller than the "
                f"magic 1 message overhead 22)", b.position)
        b.max_timestamp = <int64_t>kr_load_be64(p + LEGACY_OFF_TIMESTAMP)
    else:
        b.max_timestamp = -1
    codec = b.attributes & ATTR_CODEC_MASK
    if codec == CODEC_NONE:
        b._record_count = 1
        b._last_offset_delta = 0
    elif b._strict and codec >= CODEC_ZSTD:
        raise UnsupportedCodecError(
            f"Invalid wrapper compressionType found in legacy deep record iterator {b.magic} "
            f"(codec id {codec})", b.position)
    return 0


cdef inline int64_t legacy_last_offset(RecordBatch b) noexcept:
    return <int64_t>kr_load_be64(b._buf.ptr + batch_offset(b))


cdef Py_ssize_t legacy_value_start(RecordBatch b) except -1:
    # an offset in b._buf
    cdef Cursor c
    cdef const uint8_t *value
    cdef int32_t value_len
    value = legacy_key_value(b._buf, batch_offset(b), b.size_in_bytes, b.magic, b.position,
                             False, b._strict, NULL, NULL, &value_len, &c)
    if value == NULL:
        return batch_offset(b) + b.size_in_bytes
    return value - b._buf.ptr


cdef const uint8_t *legacy_key_value(_Buffer buf, Py_ssize_t entry, Py_ssize_t size, int magic,
                                     Py_ssize_t origin, bint decompressed, bint strict,
                                     const uint8_t **key_out, int32_t *key_len_out,
                                     int32_t *value_len_out, Cursor *c) except? NULL:
    """Locate key and value of the entry at offset `entry` of `buf` (errors name `origin`, the
    entry's file position, or the batch's for a decompressed one); returns the value pointer
    (NULL if null)."""
    cdef int32_t key_len, value_len
    cdef const uint8_t *key = NULL
    cdef const uint8_t *value = NULL
    cursor_init(c, buf.ptr + entry, size, origin, decompressed, strict)
    c.pos += LEGACY_V0_KEY_LENGTH if magic == 0 else LEGACY_V1_KEY_LENGTH
    if c.pos > c.end:
        cursor_fail(c, c.start, InvalidRecordError,
                    f"message of {size - LOG_OVERHEAD} bytes is too small for magic {magic}")
    if strict and c.start[OFF_MAGIC + 1] & (LEGACY_V0_UNUSED if magic == 0 else LEGACY_V1_UNUSED):
        # Kafka ignores them; magic 0 has no timestamp type bit.
        cursor_fail(c, c.start, InvalidRecordError,
                    f"unused attribute bits set (attributes = 0x{c.start[OFF_MAGIC + 1]:02x}, "
                    f"magic {magic})")
    key_len = <int32_t>kr_load_be32(cursor_take(c, 4, "message key length"))
    if key_len >= 0:
        key = cursor_take(c, key_len, "message key")
    value_len = <int32_t>kr_load_be32(cursor_take(c, 4, "message value length"))
    if value_len >= 0:
        value = cursor_take(c, value_len, "message value")
    if strict:
        if key_len < -1 or value_len < -1:
            cursor_fail(c, c.start, InvalidRecordError,
                        f"negative key/value length other than -1 ({key_len}, {value_len})")
        if c.pos != c.end:
            cursor_fail(c, c.pos, InvalidRecordError,
                        f"{c.end - c.pos} bytes after the message value")
    if key_out != NULL:
        key_out[0] = key
        key_len_out[0] = key_len
    value_len_out[0] = value_len
    return value


cdef Record legacy_record(_Buffer buf, Py_ssize_t entry, Py_ssize_t size, int64_t offset,
                          Py_ssize_t origin, bint decompressed, bint strict,
                          int wrapper_ts_type, int64_t wrapper_ts):
    """A Record for the message at `entry` (which starts with its 12-byte log overhead)."""
    cdef Cursor c
    cdef const uint8_t *p = buf.ptr + entry
    cdef int magic = <int8_t>p[OFF_MAGIC]
    cdef uint8_t attributes = p[OFF_MAGIC + 1]
    cdef const uint8_t *key
    cdef const uint8_t *value
    cdef int32_t key_len, value_len
    cdef Record r
    value = legacy_key_value(buf, entry, size, magic, origin, decompressed, strict,
                             &key, &key_len, &value_len, &c)
    r = Record.__new__(Record)
    r._buf = buf
    r._v.offset = offset
    # Inside a compressed wrapper the wrapper's timestamp type rules (as in
    # Kafka's deep iterator): a v0 wrapper has none, whatever the inner
    # messages say, though a magic 1 inner message keeps its own timestamp
    # (LegacyRecord.timestamp(), which the consumer reports with the wrapper's
    # NO_TIMESTAMP_TYPE); a v1 CreateTime wrapper makes them CreateTime even
    # with the LogAppendTime bit set; a v1 LogAppendTime wrapper gives them its time.
    if magic == 0:
        r._v.timestamp = -1
        r._timestamp_type = TS_NONE
    elif decompressed and wrapper_ts_type == TS_NONE:
        r._v.timestamp = <int64_t>kr_load_be64(p + LEGACY_OFF_TIMESTAMP)
        r._timestamp_type = TS_NONE
    elif wrapper_ts_type == TS_LOG_APPEND:
        r._v.timestamp = wrapper_ts
        r._timestamp_type = TS_LOG_APPEND
    elif decompressed:
        r._v.timestamp = <int64_t>kr_load_be64(p + LEGACY_OFF_TIMESTAMP)
        r._timestamp_type = TS_CREATE
    else:
        r._v.timestamp = <int64_t>kr_load_be64(p + LEGACY_OFF_TIMESTAMP)
        r._timestamp_type = TS_LOG_APPEND if attributes & ATTR_LOG_APPEND_TIME else TS_CREATE
    r._v.sequence = -1
    r._v.attributes = <int8_t>attributes
    r._v.key_len = key_len
    r._v.value_len = value_len
    r._v.key = key
    r._v.value = value
    r._v.header_count = 0
    r._v.headers = NULL
    r._v.headers_end = NULL
    r._v.error_position = origin
    r._magic = magic
    r._strict = strict
    r._has_checksum = True
    r._checksum = kr_load_be32(p + LEGACY_OFF_CRC)
    r._entry = entry
    r._entry_size = size
    r._control_version = -1
    return r


def _records_then_raise(list records, error):
    # Kafka raises some wrapper errors only when the bad inner record is reached.
    yield from records
    raise error


cdef object legacy_records(RecordBatch b):
    cdef int codec = b.attributes & ATTR_CODEC_MASK
    if codec == CODEC_NONE:
        return (legacy_record(b._buf, batch_offset(b), b.size_in_bytes, b._base_offset, b.position,
                              False, b._strict, TS_NONE, 0),)
    legacy_resolve(b)
    records, pending_error = b._legacy_records
    if pending_error is not None:
        return _records_then_raise(records, pending_error)
    return records


cdef int legacy_resolve(RecordBatch b) except -1:
    """Open a compressed wrapper once: decompress and frame its inner message set."""
    cdef int codec = b.attributes & ATTR_CODEC_MASK
    cdef Cursor c
    cdef const uint8_t *value
    cdef int32_t value_len
    cdef _Buffer inner
    cdef Py_ssize_t pos, remaining, size
    cdef int32_t length
    cdef int inner_magic
    cdef int64_t wrapper_offset, last_inner, absolute_base, inner_offset
    cdef list entries = []
    cdef list records = []
    cdef object pending_error = None
    cdef int wrapper_ts_type
    cdef Record r
    if codec == CODEC_NONE or b._legacy_records is not None:
        return 0
    if codec > CODEC_ZSTD:
        raise UnsupportedCodecError(f"Unknown compression type id: {codec}", b.position)
    if codec == CODEC_ZSTD:
        raise UnsupportedCodecError(
            f"Invalid wrapper compressionType found in legacy deep record iterator {b.magic} "
            f"(zstd is not allowed before magic 2)", b.position)
    value = legacy_key_value(b._buf, batch_offset(b), b.size_in_bytes, b.magic, b.position, False,
                             b._strict, NULL, NULL, &value_len, &c)
    if value == NULL:
        raise InvalidRecordError(
            f"Found invalid compressed record set with null value (magic = {b.magic})", b.position)
    inner = buffer_of(decompress(codec, b.magic, view_of(value, value_len), b._max_decompressed,
                                 b.position, b._strict))
    # Frame the inner set (Kafka's DataLogInputStream rules).
    pos = 0
    while True:
        remaining = inner.size - pos
        if remaining < LOG_OVERHEAD:
            break
        length = <int32_t>kr_load_be32(inner.ptr + pos + OFF_LENGTH)
        if length < RECORD_OVERHEAD_V0:
            raise CorruptBatchError(
                f"Record size is less than the minimum record overhead ({RECORD_OVERHEAD_V0})",
                b.position, batch_position=b.position, decompressed_position=pos)
        size = <Py_ssize_t>length + LOG_OVERHEAD
        if remaining < size:
            break
        inner_magic = <int8_t>inner.ptr[pos + OFF_MAGIC]
        if b._strict and inner_magic != b.magic:
            # The broker refuses it ("Log record magic does not match outer magic").
            raise CorruptBatchError(
                f"inner message has magic {inner_magic} in a magic {b.magic} wrapper",
                b.position, batch_position=b.position, decompressed_position=pos)
        entries.append((pos, size))
        pos += size
    b.trailing_bytes = inner.size - pos
    if b.trailing_bytes and b._strict:
        raise TruncatedError(f"{b.trailing_bytes} trailing bytes in the decompressed message set",
                             b.position, batch_position=b.position, decompressed_position=pos)
    if not entries:
        raise InvalidRecordError("Found invalid compressed record set with no inner records",
                                 b.position)
    wrapper_offset = legacy_last_offset(b)
    absolute_base = -1
    if b.magic >= 1:
        last_inner = <int64_t>kr_load_be64(inner.ptr + <Py_ssize_t>entries[len(entries) - 1][0])
        if wrapper_offset != 0:   # librdkafka writes wrapper offset 0: take inner offsets as-is
            if wrapper_offset < last_inner:
                raise InvalidRecordError(
                    f"Found invalid wrapper offset in compressed v1 message set, wrapper offset "
                    f"'{wrapper_offset}' is less than the last inner message offset '{last_inner}' "
                    f"and it is not zero.", b.position)
            if last_inner < 0 and wrapper_offset > INT64_MAX + last_inner:
                raise InvalidRecordError(
                    f"wrapper offset {wrapper_offset} minus the last inner message offset "
                    f"{last_inner} does not fit a 64-bit offset", b.position)
            absolute_base = wrapper_offset - last_inner
    wrapper_ts_type = batch_timestamp_type(b)
    for pos, size in entries:
        inner_offset = <int64_t>kr_load_be64(inner.ptr + pos)
        if absolute_base > 0 and inner_offset > INT64_MAX - absolute_base:
            # Kafka's long arithmetic would wrap to a negative offset here.
            raise InvalidRecordError(
                f"inner message offset {inner_offset} + the wrapper's base {absolute_base} "
                f"does not fit a 64-bit offset", b.position,
                batch_position=b.position, decompressed_position=pos)
        if inner.ptr[pos + OFF_MAGIC + 1] & ATTR_CODEC_MASK:
            pending_error = InvalidRecordError("Inner messages must not be compressed", b.position,
                                               batch_position=b.position, decompressed_position=pos)
            break
        if b._verify_crc:
            check_inner_crc(inner, pos, size, b.position)
        r = legacy_record(inner, pos, size,
                          inner_offset + (absolute_base if absolute_base >= 0 else 0),
                          b.position, True, b._strict, wrapper_ts_type, b.max_timestamp)
        records.append(r)
    b._legacy_records = (records, pending_error)
    b._record_count = len(entries)
    first = <int64_t>kr_load_be64(inner.ptr + <Py_ssize_t>entries[0][0])
    if absolute_base > 0 and first > INT64_MAX - absolute_base:
        raise InvalidRecordError(
            f"inner message offset {first} + the wrapper's base {absolute_base} does not fit "
            f"a 64-bit offset", b.position)
    b._base_offset = first + (absolute_base if absolute_base >= 0 else 0)
    # Python ints: exact (a v0 wrapper's offset can be anywhere relative to its inner
    # offsets); the int32 field keeps the span only when it fits, the
    # last_offset_delta property computes it exactly.
    span = <object>wrapper_offset - <object>b._base_offset
    b._last_offset_delta = <int32_t>span if -2**31 <= span < 2**31 else 0
    return 0


cdef inline uint32_t legacy_entry_crc(const uint8_t *entry, Py_ssize_t size) except? 0xFFFFFFFF:
    """The CRC-32 a legacy message's crc field must hold: over magic..end."""
    return crc32_of(entry + OFF_MAGIC, size - OFF_MAGIC)


cdef int check_inner_crc(_Buffer inner, Py_ssize_t pos, Py_ssize_t size, Py_ssize_t batch_position) except -1:
    cdef uint32_t stored = kr_load_be32(inner.ptr + pos + LEGACY_OFF_CRC)
    cdef uint32_t actual = legacy_entry_crc(inner.ptr + pos, size)
    if stored != actual:
        raise ChecksumError(f"Record is corrupt (stored crc = {stored}, computed crc = {actual})",
                            batch_position, expected=stored, actual=actual,
                            batch_position=batch_position, decompressed_position=pos)
    return 0
