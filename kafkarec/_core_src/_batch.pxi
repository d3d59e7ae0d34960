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

# Framing sizes, also module constants for the outer layers (kafkarec.log).
cpdef enum:
    LOG_OVERHEAD = 12               # offset + size fields before every batch
    HEADER_SIZE_UP_TO_MAGIC = 17    # what framing reads of a batch
    RECORD_OVERHEAD_V0 = 14         # the smallest size field a batch may have
    V2_HEADER_SIZE = 61

cdef enum:
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

# Enum members indexed by wire id, so properties do not call into Enum machinery.
cdef tuple _COMPRESSIONS = tuple(Compression)
cdef dict _TIMESTAMP_TYPES = {t.value: t for t in TimestampType}


cdef inline int32_t increment_sequence(int32_t sequence, int32_t increment) noexcept nogil:
    # DefaultRecordBatch.incrementSequence: wraps past INT32_MAX to 0, in int32 arithmetic.
    cdef int32_t limit = <int32_t>(<uint32_t>INT32_MAX - <uint32_t>increment)
    if sequence > limit:
        return <int32_t>(<uint32_t>increment - (<uint32_t>INT32_MAX - <uint32_t>sequence) - 1)
    return <int32_t>(<uint32_t>sequence + <uint32_t>increment)


# Java's long arithmetic wraps; C's signed overflow is undefined, so longs that come from input are added
# and subtracted as unsigned (the same bits, defined).
cdef inline int64_t wrapping_add64(int64_t a, int64_t b) noexcept nogil:
    return <int64_t>(<uint64_t>a + <uint64_t>b)


cdef inline int64_t wrapping_sub64(int64_t a, int64_t b) noexcept nogil:
    return <int64_t>(<uint64_t>a - <uint64_t>b)


@cython.final
cdef class RecordBatch:
    """One batch of records: a v2 RecordBatch, or a legacy (magic 0/1) entry.

    The header is parsed eagerly; records are decoded when the batch is
    iterated.  Fields use Kafka's names in snake_case.  Legacy batches report
    Kafka's sentinels (-1) for fields their format lacks.  ``position`` is
    where the batch starts in the file (``origin`` of the read plus its offset
    in the buffer), as are the positions of the errors it raises.
    """
    cdef _Buffer _buf
    cdef readonly Py_ssize_t position    # where it starts in the file: _buf.origin + its offset in _buf
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
    cdef readonly ReadOptions options    # how it was read (its fields below, for the hot paths)
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
    def header_errors(self) -> list:
        """The strict header rules this batch breaks, as (unraised) DecodeErrors, whatever
        the options it was read with: for v2 an unknown codec id, unused attribute bits, a
        negative record count, a record count that does not fit lastOffsetDelta.  Empty for
        a sound header and for legacy messages (their rules are checked as they are read)."""
        if self.magic < 2:
            return []
        return v2_header_errors(self)

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
        return view_of(self._buf.ptr + batch_offset(self), self.size_in_bytes)

    def payload(self):
        """The records section as stored (compressed if the batch is), without copying."""
        cdef Py_ssize_t start = batch_payload_start(self)
        return view_of(self._buf.ptr + start, batch_offset(self) + self.size_in_bytes - start)

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


cdef inline Py_ssize_t batch_offset(RecordBatch b) noexcept:
    # where the batch starts in b._buf (what indexes its bytes; position is what is reported)
    return b.position - b._buf.origin


cdef inline int batch_timestamp_type(RecordBatch b) noexcept:
    if b.magic == 0:
        return TS_NONE
    return TS_LOG_APPEND if (b.attributes & ATTR_LOG_APPEND_TIME) else TS_CREATE


cdef inline Py_ssize_t batch_payload_start(RecordBatch b) except -1:
    # an offset in b._buf
    if b.magic >= 2:
        return batch_offset(b) + V2_HEADER_SIZE
    return legacy_value_start(b)


cdef uint32_t compute_crc(RecordBatch b) except? 0xFFFFFFFF:
    cdef const uint8_t *p = b._buf.ptr + batch_offset(b)
    if b.magic >= 2:
        return crc32c_of(p + OFF_ATTRIBUTES, b.size_in_bytes - OFF_ATTRIBUTES)
    return legacy_entry_crc(p, b.size_in_bytes)


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


cdef RecordBatch new_batch(_Buffer buf, Py_ssize_t offset, Py_ssize_t size, ReadOptions options):
    cdef RecordBatch b = RecordBatch.__new__(RecordBatch)
    cdef const uint8_t *p = buf.ptr + offset
    b._buf = buf
    b.position = buf.origin + offset
    b.size_in_bytes = size
    b.batch_length = <int32_t>kr_load_be32(p + OFF_LENGTH)
    b.magic = <int8_t>p[OFF_MAGIC]
    b.options = options
    b._verify_crc = options.verify_crc
    b._strict = options.strict
    b._max_decompressed = options.max_decompressed_bytes
    b._crc_state = -1
    if b.magic >= 2:
        parse_v2_header(b, p)
    else:
        parse_legacy_header(b, p)
    return b


cdef int parse_v2_header(RecordBatch b, const uint8_t *p) except -1:
    cdef list problems
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
        problems = v2_header_errors(b)
        if problems:
            raise problems[0]
    return 0


cdef list v2_header_errors(RecordBatch b):
    """What the v2 format forbids in a batch header but Kafka's reader lets through: strict
    reading refuses the first (parse_v2_header), ``RecordBatch.header_errors`` lists them all
    (kafkarec verify reports them).  Empty for a sound header."""
    cdef list out = []
    cdef int codec = b.attributes & ATTR_CODEC_MASK
    if codec > CODEC_ZSTD:
        out.append(UnsupportedCodecError(f"Unknown compression type id: {codec}", b.position))
    if b.attributes & ATTR_V2_UNUSED:
        out.append(CorruptBatchError(
            f"unused attribute bits set (attributes = 0x{<uint16_t>b.attributes:04x})", b.position))
    if b._record_count < 0:
        out.append(CorruptBatchError(f"Found invalid record count {b._record_count} in magic v2 batch",
                                     b.position))
    if b._last_offset_delta < 0 or (b._record_count > 0 and
                                    <int64_t>b._record_count > <int64_t>b._last_offset_delta + 1):
        out.append(CorruptBatchError(
            f"record count {b._record_count} does not fit last offset delta {b._last_offset_delta}",
            b.position))
    return out


cdef enum:
    SPANS_RUN = 1024        # batches a walk of spans() takes without the GIL at a time


cdef inline Py_ssize_t framed_v2_size(const uint8_t *p, Py_ssize_t remaining) noexcept nogil:
    """The size of the batch at p when a lenient read's next() frames it without a word: a whole v2
    batch (magic 2, all of it in the `remaining` bytes) at least a v2 header long, whose length
    does not overflow (_next_batch's checks, then parse_v2_header's one outside strict reading),
    compressed or not; else 0 (next() then frames it or says why not)."""
    cdef int32_t length
    if remaining < V2_HEADER_SIZE or p[OFF_MAGIC] != 2:
        return 0
    length = <int32_t>kr_load_be32(p + OFF_LENGTH)
    if (length < V2_HEADER_SIZE - LOG_OVERHEAD or length > INT32_MAX - LOG_OVERHEAD
            or <Py_ssize_t>length > remaining - LOG_OVERHEAD):
        return 0
    return <Py_ssize_t>length + LOG_OVERHEAD


@cython.final
cdef class BatchIterator:
    """Iterates the batches of a buffer without copying it.

    A partial batch at the end ends iteration, as in Kafka's readers (fetch
    responses are cut mid-batch); ``trailing_bytes`` then tells how many bytes
    were left over, and ``strict=True`` raises TruncatedError instead.

    Once iteration has ended, the iterator says where and why, so no caller
    needs to frame the bytes again: ``position`` is where the next batch would
    start (the end of the last whole batch; a file position, ``origin`` plus
    the offset in the buffer, as every position reported), ``stop_reason`` is ``"end"`` (every
    byte framed), ``"truncated"`` (``trailing_bytes`` that do not hold a whole
    batch; ``next_batch_size`` is then the whole size of the batch they begin,
    0 while even its size field is cut off - how much a reader of a growing
    file or a ranged read must fetch) or ``"error"`` (``stop_error``, the
    DecodeError raised, ended it).
    After an error in one batch's own header (``resumable``), ``resume()`` goes
    on with the batch after it: the frame already told where that starts.
    """
    cdef _Buffer _buf
    cdef readonly ReadOptions options
    cdef Py_ssize_t _offset             # where the next batch starts in _buf
    cdef readonly Py_ssize_t trailing_bytes
    cdef readonly bint exhausted
    cdef readonly str stop_reason
    cdef readonly object stop_error
    cdef readonly Py_ssize_t next_batch_size
    cdef bint _verify_crc
    cdef bint _strict
    cdef bint _file_rules
    cdef Py_ssize_t _max_decompressed
    cdef Py_ssize_t _end                # offsets in _buf, as _offset
    cdef Py_ssize_t _resume_at          # after a header error: where the next batch starts; else -1

    def __init__(self, *args, **kwargs):
        raise TypeError("use kafkarec.iter_batches()")

    def __iter__(self):
        return self

    @property
    def origin(self) -> int:
        """The file position of the buffer's byte 0 (``iter_batches(origin=...)``)."""
        return self._buf.origin

    @property
    def position(self) -> int:
        return self._buf.origin + self._offset

    def __next__(self):
        cdef RecordBatch batch
        if self.exhausted:
            raise StopIteration
        batch = self._advance()
        if batch is None:
            raise StopIteration
        return batch

    cdef RecordBatch _advance(self):
        """The next batch, or None at the end; where and why it stopped is recorded (the one
        step of next() and spans())."""
        cdef RecordBatch batch
        try:
            batch = self._next_batch()
        except DecodeError as exc:
            self.exhausted = True
            if self.stop_reason is None:
                self.stop_reason = "error"
            self.stop_error = exc
            raise
        except BaseException:
            self.exhausted = True
            raise
        if batch is None:
            self.exhausted = True
        return batch

    def spans(self, Py_ssize_t until=-1):
        """``[(position, size), ...]`` of the batches next() would yield from here on, up to
        where it would stop or raise (not raised here: ``stop_reason`` and ``stop_error`` say so)
        or to a batch whose magic is outside 0..2 (which file rules frame and no reader decodes;
        the iterator is then past it).  No batch object is handed out: a planner cutting a
        file at batch starts walks its headers in one loop here.  With ``until`` (a position),
        the walk also stops before a batch that starts there or later, and the next call goes on
        from it: a planner cuts a large file a window at a time."""
        cdef list out = []
        cdef RecordBatch batch
        cdef Py_ssize_t sizes[SPANS_RUN]
        cdef Py_ssize_t n, i, at, size
        cdef Py_ssize_t stop = until - self._buf.origin if until >= 0 else PY_SSIZE_T_MAX
        cdef Py_ssize_t end = self._end
        cdef const uint8_t *base = self._buf.ptr
        cdef bint strict = self._strict
        while not self.exhausted:
            if self._offset >= stop:
                break
            # A run of whole v2 batches walked without the GIL, as next() frames them without a
            # word: any a lenient read frames (framed_v2_size), the uncompressed data batches a
            # strict one does (run_batch_size: those the runs of _runs.pxi take).  A walk of a
            # broker's 1 GiB segment faults a page in at each batch (and made an object of each):
            # with the GIL held the read's other threads (a decode pool starting) waited for it.
            # Any other batch by next()'s step.
            at = self._offset
            n = 0
            with nogil:
                while n < SPANS_RUN and at < stop:
                    size = run_batch_size(base + at, end - at) if strict else framed_v2_size(base + at, end - at)
                    if size == 0:
                        break
                    sizes[n] = size
                    n += 1
                    at += size
            if n:
                for i in range(n):
                    out.append((self._buf.origin + self._offset, sizes[i]))
                    self._offset += sizes[i]
                continue
            try:
                batch = self._advance()
            except DecodeError:
                break
            if batch is None or not 0 <= batch.magic <= 2:
                break
            out.append((batch.position, batch.size_in_bytes))
        return out

    @property
    def resumable(self) -> bool:
        """Whether the error that stopped iteration was in one batch's own header,
        so that ``resume()`` can go on after that batch."""
        return self.exhausted and self._resume_at >= 0

    def resume(self) -> None:
        """Go on after the batch whose header could not be read (see ``resumable``)."""
        if not self.resumable:
            raise ValueError("nothing to resume: iteration did not stop at a batch's header")
        self._offset = self._resume_at
        self._resume_at = -1
        self.exhausted = False
        self.stop_reason = None
        self.stop_error = None

    cdef RecordBatch _next_batch(self):
        # Follows ByteBufferLogInputStream.nextBatchSize check for check, or with
        # file_rules FileLogInputStream.nextBatch (no magic range check there).
        cdef Py_ssize_t remaining = self._end - self._offset
        cdef Py_ssize_t position = self._buf.origin + self._offset     # reported
        cdef const uint8_t *p = self._buf.ptr + self._offset
        cdef int32_t length
        cdef int8_t magic
        cdef Py_ssize_t size
        cdef RecordBatch batch
        if remaining < LOG_OVERHEAD or (self._file_rules and remaining <= HEADER_SIZE_UP_TO_MAGIC):
            return self._stop(remaining)
        length = <int32_t>kr_load_be32(p + OFF_LENGTH)
        if length < RECORD_OVERHEAD_V0:
            if self._file_rules:
                raise CorruptBatchError(
                    f"Found record size {length} smaller than minimum record overhead "
                    f"({RECORD_OVERHEAD_V0})", position)
            raise CorruptBatchError(
                f"Record size {length} is less than the minimum record overhead ({RECORD_OVERHEAD_V0})",
                position)
        if remaining < HEADER_SIZE_UP_TO_MAGIC:
            return self._stop(remaining)
        magic = <int8_t>p[OFF_MAGIC]
        if (magic < 0 or magic > 2) and not self._file_rules:
            raise CorruptBatchError(f"Invalid magic found in record: {magic}", position)
        if length > INT32_MAX - LOG_OVERHEAD and not self._file_rules:
            # Java adds LOG_OVERHEAD in an int: the size wraps negative and the
            # in-memory reader fails on it (FileLogInputStream instead stops).
            raise CorruptBatchError(
                f"Batch size {length} + {LOG_OVERHEAD} overflows a 32-bit size "
                f"(Kafka: newLimit < 0)", position)
        size = <Py_ssize_t>length + LOG_OVERHEAD
        if remaining < size:
            self.next_batch_size = size
            return self._stop(remaining)
        # From here on the frame is known: an error in this batch's header
        # leaves the next batch's start known too (resume()).
        self._resume_at = self._offset + size
        if magic < 0:
            # FileLogInputStream frames a negative magic as legacy; no legacy header has one.
            raise CorruptBatchError(f"Invalid magic found in record: {magic}", position)
        batch = new_batch(self._buf, self._offset, size, self.options)
        self._resume_at = -1
        self._offset += size
        return batch

    cdef RecordBatch _stop(self, Py_ssize_t remaining):
        self.trailing_bytes = remaining
        self.stop_reason = "truncated" if remaining else "end"
        if remaining and self._strict:
            raise TruncatedError(
                f"{remaining} trailing bytes do not hold a complete batch", self._buf.origin + self._offset)
        return None


def iter_batches(data, /, options=None, *, verify_crc=None, strict=None,
                 max_decompressed_bytes=None, start=None, end=None, file_rules=None,
                 Py_ssize_t origin=0):
    """Iterate the record batches in ``data`` (bytes, bytearray, memoryview, mmap).

    ``data`` is never copied.  Headers are parsed as batches are yielded;
    records are decoded when a batch is iterated.  How bytes are read is a
    :class:`ReadOptions` (``options``), or its fields given as keywords on top
    of it: with ``verify_crc`` (default True) a batch whose CRC does not match
    raises ChecksumError before yielding any record; ``strict`` rejects what
    the format forbids even where Kafka's Java reader is lenient;
    ``max_decompressed_bytes`` caps what one compressed batch may inflate to;
    ``file_rules`` frames as Kafka's FileLogInputStream does for .log files
    (no magic range check, a 17-byte tail ignored).

    ``origin`` is the file position of ``data[0]``, for ``data`` that is a piece
    of a file (a ranged read of an object, a slice of a segment): every
    position taken or reported - ``start``/``end``, ``RecordBatch.position``,
    the iterator's ``position``, ``DecodeError.position``/``batch_position`` -
    is then ``origin`` plus the offset in ``data``.  ``start``/``end`` bound
    the region read (default: all of ``data``, ``origin`` to ``origin +
    len(data)``).
    """
    cdef BatchIterator it = BatchIterator.__new__(BatchIterator)
    cdef ReadOptions opts = resolve_options(options, verify_crc, strict, max_decompressed_bytes,
                                            file_rules)
    cdef Py_ssize_t first, stop
    it._buf = buffer_of(data)
    if origin < 0 or origin > PY_SSIZE_T_MAX - it._buf.size:
        raise ValueError(f"origin={origin} is not a file position a buffer of {it._buf.size} bytes "
                         f"can start at")
    first = origin if start is None else start
    stop = origin + it._buf.size if end is None else end
    if first < origin or stop < first or stop > origin + it._buf.size:
        raise ValueError(f"start={start}, end={end} do not fit a buffer of {it._buf.size} bytes"
                         + (f" at origin {origin}" if origin else ""))
    it._buf.origin = origin
    it._offset = first - origin
    it._end = stop - origin
    it._resume_at = -1
    it.options = opts
    it._file_rules = opts.file_rules
    it._verify_crc = opts.verify_crc
    it._strict = opts.strict
    it._max_decompressed = opts.max_decompressed_bytes
    return it


cdef ReadOptions PLAUSIBILITY_OPTIONS = ReadOptions(verify_crc=False, strict=True)


def is_plausible_batch(data, /, Py_ssize_t position, end=None) -> bool:
    """Whether a whole batch that a Kafka writer could have produced starts at
    ``position`` (before ``end``): it frames (size, magic 0..2), its header
    passes the strict checks (codec id, unused attribute bits, record count
    against last offset delta), producer epoch and base sequence are -1 or
    more, and its CRC matches.  Resynchronising after a corrupt region asks
    this; the cheap checks come first so random bytes rarely cost a CRC."""
    cdef BatchIterator it
    cdef RecordBatch b
    cdef int attributes
    try:
        it = iter_batches(data, PLAUSIBILITY_OPTIONS, start=position, end=end)
        b = next(it, None)
    except (DecodeError, ValueError):
        return False
    if b is None:
        return False
    if b.magic >= 2:
        if b.producer_epoch < -1 or b.base_sequence < -1:
            return False
    else:
        attributes = <uint8_t>b.attributes
        # no zstd before magic 2; no timestamp type bit on magic 0
        if (attributes & ATTR_CODEC_MASK) >= CODEC_ZSTD or attributes & (
                LEGACY_V0_UNUSED if b.magic == 0 else LEGACY_V1_UNUSED):
            return False
        # room for the key and value length fields
        if b.size_in_bytes < (LEGACY_V0_KEY_LENGTH if b.magic == 0 else LEGACY_V1_KEY_LENGTH) + 8:
            return False
    return b.crc_valid


#: the first bytes of a batch that say how it is stored (stored_codec): a v2 header up to its
#: attributes, which hold more than a legacy entry's
STORED_CODEC_BYTES = OFF_ATTRIBUTES + 2


def stored_codec(data, /) -> int:
    """The codec id (its attributes' low bits) of the batch that starts ``data``, from its first
    :data:`STORED_CODEC_BYTES` bytes, or -1 when there are fewer or its magic is not 0..2.  Nothing
    is checked past that: a read weighs a piece by it before reading the piece (a compressed
    batch's records take several times its bytes to decode)."""
    cdef const uint8_t[::1] view = data
    cdef int8_t magic
    if view.shape[0] < STORED_CODEC_BYTES:
        return -1
    magic = <int8_t>view[OFF_MAGIC]
    if magic == 2:
        return kr_load_be16(&view[OFF_ATTRIBUTES]) & ATTR_CODEC_MASK
    if magic == 0 or magic == 1:
        return view[OFF_MAGIC + 1] & ATTR_CODEC_MASK
    return -1
