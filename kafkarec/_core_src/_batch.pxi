# Framing a buffer into batches, and the v2 batch header.
#
# v2 RecordBatch header (big-endian), 61 bytes:
#   0 baseOffset int64 | 8 length int32 (bytes after this field)
#  12 partitionLeaderEpoch int32 (outside the CRC: brokers rewrite it)
#  16 magic int8 | 17 crc uint32 (CRC-32C of bytes 21..end)
#  21 attributes int16 (bits 0-2 codec, 3 LogAppendTime, 4 transactional,
#     5 control, 6 delete horizon; 7-15 unused)
#  23 lastOffsetDelta int32 | 27 baseTimestamp int64 | 35 maxTimestamp int64
#  43 producerId int64 | 51 producerEpoch int16 | 53 baseSequence int32
#  57 recordsCount int32 | 61 records (one compressed stream if codec != 0)
# Legacy entries share the first 17 bytes' layout: offset, size, crc, magic.

cdef enum:
    LOG_OVERHEAD = 12
    HEADER_SIZE_UP_TO_MAGIC = 17
    RECORD_OVERHEAD_V0 = 14
    V2_HEADER_SIZE = 61
    OFF_LENGTH = 8
    OFF_PARTITION_LEADER_EPOCH = 12
    OFF_MAGIC = 16
    OFF_CRC = 17
    OFF_ATTRIBUTES = 21
    OFF_LAST_OFFSET_DELTA = 23
    OFF_BASE_TIMESTAMP = 27
    OFF_MAX_TIMESTAMP = 35
    OFF_PRODUCER_ID = 43
    OFF_PRODUCER_EPOCH = 51
    OFF_BASE_SEQUENCE = 53
    OFF_RECORDS_COUNT = 57

cdef enum:
    ATTR_CODEC_MASK = 0x07
    ATTR_LOG_APPEND_TIME = 0x08
    ATTR_TRANSACTIONAL = 0x10
    ATTR_CONTROL = 0x20
    ATTR_DELETE_HORIZON = 0x40
    ATTR_V2_UNUSED = 0xFF80
    CODEC_NONE = 0
    CODEC_GZIP = 1
    CODEC_SNAPPY = 2
    CODEC_LZ4 = 3
    CODEC_ZSTD = 4

cdef enum:
    TS_NONE = -1
    TS_CREATE = 0
    TS_LOG_APPEND = 1

DEFAULT_MAX_DECOMPRESSED_BYTES = 64 * 1024 * 1024

# Enum members indexed by wire id, so properties do not call into Enum machinery.
cdef tuple _COMPRESSIONS = tuple(Compression)
cdef dict _TIMESTAMP_TYPES = {t.value: t for t in TimestampType}


cdef inline int32_t increment_sequence(int32_t sequence, int32_t increment) noexcept nogil:
    # DefaultRecordBatch.incrementSequence: wraps past INT32_MAX to 0, in int32 arithmetic.
    cdef int32_t limit = <int32_t>(<uint32_t>INT32_MAX - <uint32_t>increment)
    if sequence > limit:
        return <int32_t>(<uint32_t>increment - (<uint32_t>INT32_MAX - <uint32_t>sequence) - 1)
    return <int32_t>(<uint32_t>sequence + <uint32_t>increment)


cdef inline int64_t wrapping_add64(int64_t a, int64_t b) noexcept nogil:
    return <int64_t>(<uint64_t>a + <uint64_t>b)


@cython.final
cdef class RecordBatch:
    """One batch of records: a v2 RecordBatch, or a legacy (magic 0/1) entry.

    The header is parsed eagerly; records are decoded when the batch is
    iterated.  Fields use Kafka's names in snake_case.  Legacy batches report
    Kafka's sentinels (-1) for fields their format lacks.
    """
    cdef _Buffer _buf
    cdef readonly Py_ssize_t position
    cdef readonly Py_ssize_t size_in_bytes
    cdef readonly int32_t batch_length
    cdef readonly int32_t partition_leader_epoch
    cdef readonly int8_t magic
    cdef readonly uint32_t crc
    cdef readonly int16_t attributes
    cdef int32_t _last_offset_delta
    cdef readonly int64_t base_timestamp
    cdef readonly int64_t max_timestamp
    cdef readonly int64_t producer_id
    cdef readonly int16_t producer_epoch
    cdef readonly int32_t base_sequence
    cdef int64_t _base_offset
    cdef int32_t _record_count
    cdef bint _verify_crc
    cdef bint _strict
    cdef Py_ssize_t _max_decompressed
    cdef int8_t _crc_state          # -1 not computed, 0 bad, 1 good
    cdef object _legacy_records      # (inner records, pending error) once a wrapper is opened
    cdef readonly Py_ssize_t trailing_bytes   # legacy wrappers: bytes after the last whole inner message

    def __init__(self, *args, **kwargs):
        raise TypeError("RecordBatch objects come from kafkarec.iter_batches()")

    # --- fields -----------------------------------------------------------
    @property
    def base_offset(self) -> int:
        if self.magic < 2:
            legacy_resolve(self)
        return self._base_offset

    @property
    def last_offset_delta(self) -> int:
        if self.magic < 2:
            # Legacy batches have no such field: the span from the first inner
            # offset to the wrapper's offset, exact however far apart they are.
            legacy_resolve(self)
            return self.last_offset - self._base_offset
        return self._last_offset_delta

    @property
    def record_count(self) -> int:
        if self.magic < 2:
            legacy_resolve(self)
        return self._record_count

    @property
    def last_offset(self) -> int:
        if self.magic < 2:
            return legacy_last_offset(self)
        return wrapping_add64(self._base_offset, self._last_offset_delta)

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == -1:
            return -1
        return increment_sequence(self.base_sequence, self._last_offset_delta)

    @property
    def compression(self):
        cdef int codec = self.attributes & ATTR_CODEC_MASK
        if codec > CODEC_ZSTD:
            raise UnsupportedCodecError(f"Unknown compression type id: {codec}", self.position)
        return _COMPRESSIONS[codec]

    @property
    def timestamp_type(self):
        return _TIMESTAMP_TYPES[batch_timestamp_type(self)]

    @property
    def is_transactional(self) -> bool:
        return self.magic >= 2 and (self.attributes & ATTR_TRANSACTIONAL) != 0

    @property
    def is_control(self) -> bool:
        return self.magic >= 2 and (self.attributes & ATTR_CONTROL) != 0

    @property
    def delete_horizon_ms(self):
        if self.magic >= 2 and (self.attributes & ATTR_DELETE_HORIZON):
            return self.base_timestamp
        return None

    @property
    def crc_valid(self) -> bool:
        """Whether the stored CRC matches the bytes (computed once, on demand)."""
        if self._crc_state < 0:
            self._crc_state = 1 if compute_crc(self) == self.crc else 0
        return self._crc_state == 1

    @property
    def computed_crc(self) -> int:
        return compute_crc(self)

    def raw(self):
        """The batch's bytes, as a read-only memoryview into the input (no copy)."""
        return view_of(self._buf.ptr + self.position, self.size_in_bytes)

    def payload(self):
        """The records section as stored (compressed if the batch is), without copying."""
        cdef Py_ssize_t start = batch_payload_start(self)
        return view_of(self._buf.ptr + start, self.position + self.size_in_bytes - start)

    def ensure_valid(self) -> None:
        """Raise ChecksumError if the stored CRC does not match."""
        check_crc(self)

    # --- records ----------------------------------------------------------
    def __iter__(self):
        if self._verify_crc:
            check_crc(self)
        if self.magic < 2:
            return iter(legacy_records(self))
        return v2_record_iterator(self)

    def records(self) -> list:
        return list(self)

    def __repr__(self):
        if self.magic < 2:
            return (f"RecordBatch(magic={self.magic}, offset={self.last_offset}, "
                    f"position={self.position}, size_in_bytes={self.size_in_bytes}, "
                    f"compression={self.attributes & ATTR_CODEC_MASK})")
        return (f"RecordBatch(base_offset={self._base_offset}, last_offset={self.last_offset}, "
                f"record_count={self._record_count}, magic=2, position={self.position}, "
                f"size_in_bytes={self.size_in_bytes}, compression={self.attributes & ATTR_CODEC_MASK}, "
                f"is_control={self.is_control}, is_transactional={self.is_transactional})")


cdef inline int batch_timestamp_type(RecordBatch b) noexcept:
    if b.magic == 0:
        return TS_NONE
    return TS_LOG_APPEND if (b.attributes & ATTR_LOG_APPEND_TIME) else TS_CREATE


cdef inline Py_ssize_t batch_payload_start(RecordBatch b) except -1:
    if b.magic >= 2:
        return b.position + V2_HEADER_SIZE
    return legacy_value_start(b)


cdef uint32_t compute_crc(RecordBatch b) except? 0xFFFFFFFF:
    cdef const uint8_t *p = b._buf.ptr + b.position
    if b.magic >= 2:
        return crc32c_of(p + OFF_ATTRIBUTES, b.size_in_bytes - OFF_ATTRIBUTES)
    return crc32_of(p + OFF_MAGIC, b.size_in_bytes - OFF_MAGIC)


cdef int check_crc(RecordBatch b) except -1:
    cdef uint32_t actual
    if b._crc_state == 1:
        return 0
    actual = compute_crc(b)
    b._crc_state = 1 if actual == b.crc else 0
    if b._crc_state == 0:
        raise ChecksumError(
            f"Record is corrupt (stored crc = {b.crc}, computed crc = {actual})",
            b.position, expected=b.crc, actual=actual)
    return 0


cdef RecordBatch new_batch(_Buffer buf, Py_ssize_t position, Py_ssize_t size,
                           bint verify_crc, bint strict, Py_ssize_t max_decompressed):
    cdef RecordBatch b = RecordBatch.__new__(RecordBatch)
    cdef const uint8_t *p = buf.ptr + position
    b._buf = buf
    b.position = position
    b.size_in_bytes = size
    b.batch_length = <int32_t>kr_load_be32(p + OFF_LENGTH)
    b.magic = <int8_t>p[OFF_MAGIC]
    b._verify_crc = verify_crc
    b._strict = strict
    b._max_decompressed = max_decompressed
    b._crc_state = -1
    if b.magic >= 2:
        parse_v2_header(b, p)
    else:
        parse_legacy_header(b, p)
    return b


cdef int parse_v2_header(RecordBatch b, const uint8_t *p) except -1:
    cdef int codec
    if b.size_in_bytes < V2_HEADER_SIZE:
        raise CorruptBatchError(
            f"Record batch is corrupt (the size {b.size_in_bytes} is smaller than "
            f"the minimum allowed overhead {V2_HEADER_SIZE})", b.position)
    b._base_offset = <int64_t>kr_load_be64(p)
    b.crc = kr_load_be32(p + OFF_CRC)
    b.partition_leader_epoch = <int32_t>kr_load_be32(p + OFF_PARTITION_LEADER_EPOCH)
    b.attributes = <int16_t>kr_load_be16(p + OFF_ATTRIBUTES)
    b._last_offset_delta = <int32_t>kr_load_be32(p + OFF_LAST_OFFSET_DELTA)
    b.base_timestamp = <int64_t>kr_load_be64(p + OFF_BASE_TIMESTAMP)
    b.max_timestamp = <int64_t>kr_load_be64(p + OFF_MAX_TIMESTAMP)
    b.producer_id = <int64_t>kr_load_be64(p + OFF_PRODUCER_ID)
    b.producer_epoch = <int16_t>kr_load_be16(p + OFF_PRODUCER_EPOCH)
    b.base_sequence = <int32_t>kr_load_be32(p + OFF_BASE_SEQUENCE)
    b._record_count = <int32_t>kr_load_be32(p + OFF_RECORDS_COUNT)
    if b._strict:
        # What the format forbids but Kafka's reader lets through.
        codec = b.attributes & ATTR_CODEC_MASK
        if codec > CODEC_ZSTD:
            raise UnsupportedCodecError(f"Unknown compression type id: {codec}", b.position)
        if b.attributes & ATTR_V2_UNUSED:
            raise CorruptBatchError(
                f"unused attribute bits set (attributes = 0x{<uint16_t>b.attributes:04x})", b.position)
        if b._record_count < 0:
            raise CorruptBatchError(f"Found invalid record count {b._record_count} in magic v2 batch",
                                    b.position)
        if b._last_offset_delta < 0 or (b._record_count > 0 and
                                        <int64_t>b._record_count > <int64_t>b._last_offset_delta + 1):
            raise CorruptBatchError(
                f"record count {b._record_count} does not fit last offset delta {b._last_offset_delta}",
                b.position)
    return 0


@cython.final
@cython.no_gc          # holds buffers and ints only: no cycles possible
cdef class BatchIterator:
    """Iterates the batches of a buffer without copying it.

    A partial batch at the end ends iteration, as in Kafka's readers (fetch
    responses are cut mid-batch); ``trailing_bytes`` then tells how many bytes
    were left over, and ``strict=True`` raises TruncatedError instead.
    """
    cdef _Buffer _buf
    cdef readonly Py_ssize_t position
    cdef readonly Py_ssize_t trailing_bytes
    cdef readonly bint exhausted
    cdef bint _verify_crc
    cdef bint _strict
    cdef bint _file_rules
    cdef Py_ssize_t _max_decompressed
    cdef Py_ssize_t _end

    def __init__(self, *args, **kwargs):
        raise TypeError("use kafkarec.iter_batches()")

    def __iter__(self):
        return self

    def __next__(self):
        cdef RecordBatch batch
        if self.exhausted:
            raise StopIteration
        try:
            batch = self._next_batch()
        except BaseException:
            self.exhausted = True
            raise
        if batch is None:
            self.exhausted = True
            raise StopIteration
        return batch

    cdef RecordBatch _next_batch(self):
        # Follows ByteBufferLogInputStream.nextBatchSize check for check, or with
        # file_rules FileLogInputStream.nextBatch (no magic range check there).
        cdef Py_ssize_t remaining = self._end - self.position
        cdef const uint8_t *p = self._buf.ptr + self.position
        cdef int32_t length
        cdef int8_t magic
        cdef Py_ssize_t size
        cdef RecordBatch batch
        if remaining < LOG_OVERHEAD or (self._file_rules and remaining <= HEADER_SIZE_UP_TO_MAGIC):
            return self._stop(remaining)
        length = <int32_t>kr_load_be32(p + OFF_LENGTH)
        if length < RECORD_OVERHEAD_V0:
            raise CorruptBatchError(
                f"Record size {length} is less than the minimum record overhead ({RECORD_OVERHEAD_V0})",
                self.position)
        if remaining < HEADER_SIZE_UP_TO_MAGIC:
            return self._stop(remaining)
        magic = <int8_t>p[OFF_MAGIC]
        if (magic < 0 or magic > 2) and not self._file_rules:
            raise CorruptBatchError(f"Invalid magic found in record: {magic}", self.position)
        if length > INT32_MAX - LOG_OVERHEAD and not self._file_rules:
            # Java adds LOG_OVERHEAD in an int: the size wraps negative and the
            # in-memory reader fails on it (FileLogInputStream instead stops).
            raise CorruptBatchError(
                f"Batch size {length} + {LOG_OVERHEAD} overflows a 32-bit size "
                f"(Kafka: newLimit < 0)", self.position)
        size = <Py_ssize_t>length + LOG_OVERHEAD
        if remaining < size:
            return self._stop(remaining)
        batch = new_batch(self._buf, self.position, size, self._verify_crc, self._strict,
                          self._max_decompressed)
        self.position += size
        return batch

    cdef RecordBatch _stop(self, Py_ssize_t remaining):
        self.trailing_bytes = remaining
        if remaining and self._strict:
            raise TruncatedError(
                f"{remaining} trailing bytes do not hold a complete batch", self.position)
        return None


def iter_batches(data, /, *, bint verify_crc=True, bint strict=False,
                 max_decompressed_bytes=DEFAULT_MAX_DECOMPRESSED_BYTES,
                 Py_ssize_t start=0, end=None, bint file_rules=False):
    """Iterate the record batches in ``data`` (bytes, bytearray, memoryview, mmap).

    ``data`` is never copied.  Headers are parsed as batches are yielded;
    records are decoded when a batch is iterated.  With ``verify_crc`` a batch
    whose CRC does not match raises ChecksumError before yielding any record.
    ``strict`` rejects what the format forbids even where Kafka's Java reader
    is lenient.  ``max_decompressed_bytes`` caps what one compressed batch may
    inflate to.  ``start``/``end`` bound the region read; positions stay
    absolute in ``data``.  ``file_rules`` frames as Kafka's FileLogInputStream
    does for .log files: no magic range check (magic > 2 reads as v2) and a
    17-byte tail is ignored.
    """
    cdef BatchIterator it = BatchIterator.__new__(BatchIterator)
    if max_decompressed_bytes is None or max_decompressed_bytes < 0:
        raise ValueError("max_decompressed_bytes must be a non-negative int")
    it._buf = buffer_of(data)
    it._end = it._buf.size if end is None else end
    if start < 0 or it._end < start or it._end > it._buf.size:
        raise ValueError(f"start={start}, end={end} do not fit a buffer of {it._buf.size} bytes")
    it.position = start
    it._file_rules = file_rules
    it._verify_crc = verify_crc
    it._strict = strict
    it._max_decompressed = max_decompressed_bytes
    return it
