# Writing legacy message sets (magic 0 and 1), as MemoryRecordsBuilder does for
# old message formats: uncompressed sets are one entry per record with
# absolute offsets; a compressed set is one wrapper entry whose value is the
# compressed inner set (inner offsets relative, 0..n-1, for magic 1; absolute
# for magic 0), with the last offset and the max timestamp.

cdef bytes legacy_entry(int64_t offset, int magic, int attributes, int64_t timestamp,
                        object key, object value):
    """One log entry: offset | size | crc | magic | attributes | [timestamp] | key | value."""
    cdef const uint8_t[::1] kv
    cdef const uint8_t[::1] vv
    cdef Py_ssize_t key_len = -1, value_len = -1
    if key is not None:
        kv = key
        key_len = kv.shape[0]
    if value is not None:
        vv = value
        value_len = vv.shape[0]
    cdef Py_ssize_t body = (LEGACY_V0_KEY_LENGTH if magic == 0 else LEGACY_V1_KEY_LENGTH) - LOG_OVERHEAD
    body += 8 + max(key_len, 0) + max(value_len, 0)
    cdef bytes out = PyBytes_FromStringAndSize(NULL, LOG_OVERHEAD + body)
    cdef uint8_t *p = <uint8_t *>PyBytes_AS_STRING(out)
    cdef uint8_t *q
    kr_store_be64(p, <uint64_t>offset)
    kr_store_be32(p + OFF_LENGTH, <uint32_t>body)
    p[OFF_MAGIC] = magic
    p[OFF_MAGIC + 1] = attributes
    q = p + OFF_MAGIC + 2
    if magic == 1:
        kr_store_be64(q, <uint64_t>timestamp)
        q += 8
    kr_store_be32(q, <uint32_t>key_len)
    q = put_bytes(q + 4, &kv[0] if key_len > 0 else NULL, max(key_len, 0))
    kr_store_be32(q, <uint32_t>value_len)
    put_bytes(q + 4, &vv[0] if value_len > 0 else NULL, max(value_len, 0))
    kr_store_be32(p + LEGACY_OFF_CRC, crc32_of(p + OFF_MAGIC, LOG_OVERHEAD + body - OFF_MAGIC))
    return out


@cython.final
cdef class LegacyBatchBuilder:
    """Builds a magic 0 or 1 message set (uncompressed entries or one compressed wrapper).

    ``wrapper_offset="last"`` writes the wrapper with the last inner offset, as
    a broker does; ``"zero"`` writes 0, as producers such as librdkafka do.
    """
    cdef int _magic
    cdef int _codec
    cdef object _level
    cdef int64_t _base_offset
    cdef int64_t _last_offset
    cdef int64_t _max_timestamp
    cdef bint _log_append
    cdef int64_t _log_append_time
    cdef bint _wrapper_zero
    cdef list _entries
    cdef bint _built

    def __init__(self, *, magic=1, compression=Compression.NONE, compression_level=None,
                 base_offset=0, timestamp_type=None, log_append_time=None,
                 wrapper_offset="last"):
        if magic not in (0, 1):
            raise EncodeError(f"Invalid magic value {magic}")
        self._magic = magic
        self._codec = codec_id(compression)
        if self._codec == CODEC_ZSTD:
            raise EncodeError(f"ZStandard compression is not supported for magic {magic}")
        self._level = check_level(self._codec, compression_level)
        if timestamp_type is None:
            timestamp_type = TimestampType.NO_TIMESTAMP_TYPE if magic == 0 else TimestampType.CREATE_TIME
        ts_type = TimestampType(timestamp_type)
        if magic == 1 and ts_type is TimestampType.NO_TIMESTAMP_TYPE:
            raise EncodeError("Timestamp type must be provided to compute attributes for message format v1")
        if magic == 0 and ts_type is not TimestampType.NO_TIMESTAMP_TYPE:
            raise EncodeError("magic 0 messages have no timestamp")
        self._log_append = ts_type is TimestampType.LOG_APPEND_TIME
        if self._log_append:
            self._log_append_time = int(_time.time() * 1000) if log_append_time is None else log_append_time
            if self._log_append_time < 0 and self._log_append_time != -1:
                raise EncodeError(f"Invalid message timestamp {self._log_append_time}")
        if wrapper_offset not in ("last", "zero"):
            raise EncodeError("wrapper_offset must be 'last' or 'zero'")
        self._wrapper_zero = wrapper_offset == "zero"
        self._base_offset = int64_arg(base_offset, "base offset")
        if magic == 1 and self._codec != CODEC_NONE and self._base_offset < 0 and not self._wrapper_zero:
            # Inner offsets are relative (0, 1, ...) and the wrapper carries the
            # last absolute one: below 0 it would sit under its inner offsets,
            # which Kafka's reader refuses.
            raise EncodeError(f"a compressed magic 1 message set cannot start at offset {base_offset} "
                              "(its wrapper offset would be less than its inner offsets)")
        self._last_offset = self._base_offset      # meaningful once a message is in
        self._max_timestamp = -1
        self._entries = []

    @property
    def record_count(self) -> int:
        return len(self._entries)

    def append(self, value, key=None, *, timestamp=None, headers=(), offset=None):
        """Append a message; returns its offset."""
        if self._built:
            raise EncodeError("this builder has already built its batch")
        if headers:
            raise EncodeError(f"Magic v{self._magic} does not support record headers")
        cdef int64_t off
        if offset is not None:
            off = int64_arg(offset, "offset")
        elif not self._entries:
            off = self._base_offset
        elif self._last_offset == INT64_MAX:
            raise EncodeError(f"no offset follows {INT64_MAX} (offsets are signed 64-bit)")
        else:
            off = self._last_offset + 1
        if self._entries and off <= self._last_offset:
            raise EncodeError(f"Illegal offset {off} following previous offset {self._last_offset} "
                              "(Offsets must increase monotonically).")
        if off < self._base_offset:
            raise EncodeError(f"offset {off} is below the batch's base offset {self._base_offset}")
        if (self._magic == 1 and self._codec != CODEC_NONE
                and <uint64_t>off - <uint64_t>self._base_offset > <uint64_t>INT64_MAX):
            # the inner message carries off - base offset (Kafka's toInnerOffset)
            raise EncodeError(f"offset {off} is too far from the base offset {self._base_offset} "
                              "for a relative inner offset")
        cdef int64_t ts = -1
        if self._magic == 1:
            ts = int(_time.time() * 1000) if timestamp is None else int64_arg(timestamp, "timestamp")
            if ts < 0 and ts != -1:
                raise EncodeError(f"Invalid message timestamp {ts}")
        elif timestamp is not None and timestamp != -1:
            raise EncodeError("magic 0 messages have no timestamp")
        self._entries.append((off, ts, key, value))
        self._last_offset = off
        if ts > self._max_timestamp:
            self._max_timestamp = ts
        return off

    def build(self) -> bytes:
        self._built = True
        if not self._entries:
            return b""
        cdef int ts_attr = ATTR_LOG_APPEND_TIME if (self._log_append and self._magic == 1) else 0
        cdef int64_t wrapper_ts
        if self._codec == CODEC_NONE:
            return b"".join([
                legacy_entry(off, self._magic, ts_attr,
                             self._log_append_time if self._log_append else ts, key, value)
                for off, ts, key, value in self._entries])
        # Kafka's toInnerOffset: relative to the base offset for magic 1, absolute for magic 0.
        # LogAppendTime stamps the inner messages too, as Kafka's appendLegacyRecord does.
        inner = b"".join([
            legacy_entry(off - self._base_offset if self._magic == 1 else off, self._magic, ts_attr,
                         self._log_append_time if self._log_append else ts, key, value)
            for off, ts, key, value in self._entries])
        payload = compress(self._codec, inner, self._level, False, self._magic)
        wrapper_ts = self._log_append_time if self._log_append else self._max_timestamp
        return legacy_entry(0 if self._wrapper_zero else self._last_offset, self._magic,
                            self._codec | ts_attr, wrapper_ts, None, payload)
