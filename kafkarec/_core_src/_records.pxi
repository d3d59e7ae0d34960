# v2 records.
#
# Record (all varints zig-zag):
#   length varint | attributes int8 (unused; one raw byte, not a varint)
#   timestampDelta varlong | offsetDelta varint
#   keyLength varint | key | valueLength varint | value
#   headerCount varint | [headerKeyLength varint | key (UTF-8)
#                         | headerValueLength varint | value] ...
# A negative key/value length is null (Kafka reads any negative length as
# null; strict mode accepts only -1).  Records keep offsets into the batch's
# buffer and make bytes objects only when a field is read.

cdef struct RecordView:
    # One decoded record, pointing into its batch's buffer (no Python objects).
    int64_t offset
    int64_t timestamp
    int32_t sequence
    int8_t attributes
    int32_t key_len          # < 0: null
    int32_t value_len        # < 0: null
    int32_t header_count
    const uint8_t *key
    const uint8_t *value
    const uint8_t *headers
    const uint8_t *headers_end     # the end of the record
    Py_ssize_t error_position



cdef inline object nullable_bytes(const uint8_t *p, int32_t n):
    """A key or value: bytes, or None for a negative (null) length."""
    if n < 0:
        return None
    return PyBytes_FromStringAndSize(<const char *>p, n)


@cython.final
@cython.no_gc          # no reference cycles are possible: skip GC tracking per record
@cython.freelist(64)
cdef class Record:
    """One record.  ``key``/``value`` are bytes or None; ``headers`` a list of
    ``(str, bytes | None)`` in wire order, duplicates kept."""
    cdef _Buffer _buf                     # owns the bytes _v points into
    cdef RecordView _v                    # filled in place by the parser
    cdef int8_t _timestamp_type
    cdef int8_t _magic
    cdef bint _is_control
    cdef bint _strict
    cdef bint _has_checksum
    cdef uint32_t _checksum               # legacy records: their own CRC-32
    cdef Py_ssize_t _entry                # legacy records: where the message starts in _buf
    cdef Py_ssize_t _entry_size           # ... and its size with the log overhead
    cdef int32_t _control_version         # -1 until the control key is parsed
    cdef int32_t _control_type_id

    def __init__(self, *args, **kwargs):
        raise TypeError("Record objects come from iterating a RecordBatch")

    def __getattribute__(self, name):
        # The five fields every consumer reads answer here, before CPython's
        # generic lookup and descriptor call (which cost more than the fields
        # themselves); everything else, and these names too, stay properties.
        if name is "offset":
            return self._v.offset
        if name is "timestamp":
            return self._v.timestamp
        if name is "value":
            return nullable_bytes(self._v.value, self._v.value_len)
        if name is "key":
            return nullable_bytes(self._v.key, self._v.key_len)
        if name is "headers":
            return record_headers(self)
        return PyObject_GenericGetAttr(self, name)

    @property
    def offset(self) -> int:
        return self._v.offset

    @property
    def timestamp(self) -> int:
        return self._v.timestamp

    @property
    def sequence(self) -> int:
        return self._v.sequence

    @property
    def attributes(self) -> int:
        return self._v.attributes

    @property
    def key(self):
        return nullable_bytes(self._v.key, self._v.key_len)

    @property
    def value(self):
        return nullable_bytes(self._v.value, self._v.value_len)

    @property
    def headers(self) -> list:
        return record_headers(self)

    @property
    def timestamp_type(self):
        return _TIMESTAMP_TYPES[self._timestamp_type]

    @property
    def magic(self) -> int:
        return self._magic

    @property
    def checksum(self):
        """The message's own CRC-32 for magic 0/1; None for v2 (whose records have none)."""
        return self._checksum if self._has_checksum else None

    @property
    def crc_valid(self):
        """Whether a magic 0/1 message's own CRC-32 matches its bytes (Kafka's
        LegacyRecord.isValid); None for v2 records, which the batch's CRC covers."""
        if not self._has_checksum:
            return None
        return legacy_entry_crc(self._buf.ptr + self._entry, self._entry_size) == self._checksum

    @property
    def key_size(self) -> int:
        return self._v.key_len if self._v.key_len >= 0 else -1

    @property
    def value_size(self) -> int:
        return self._v.value_len if self._v.value_len >= 0 else -1

    @property
    def is_control(self) -> bool:
        return self._is_control

    # --- control records (``None`` for data records) ---------------------
    @property
    def control_type(self):
        if not self._is_control:
            return None
        return ControlRecordType.from_id(self._control_key()[1])

    @property
    def control_type_id(self):
        if not self._is_control:
            return None
        return self._control_key()[1]

    @property
    def control_key_version(self):
        if not self._is_control:
            return None
        return self._control_key()[0]

    @property
    def coordinator_epoch(self):
        """For ABORT/COMMIT markers, the coordinator epoch from the marker value."""
        if not self._is_control or self._control_key()[1] not in (0, 1):
            return None
        return parse_end_txn_marker(self.value, self._v.error_position, self._strict)[1]

    @property
    def control_value(self):
        """The decoded value of a control record (a dict with Kafka's JSON field names, see
        kafkarec.control), or None for data records."""
        if not self._is_control:
            return None
        return parse_control_value(self._control_key()[1], self.value, self._v.error_position,
                                   self._strict)

    cdef tuple _control_key(self):
        if self._control_version < 0:
            self._control_version, self._control_type_id = parse_control_key(
                self.key, self._v.error_position, self._strict)
        return (self._control_version, self._control_type_id)

    def __repr__(self):
        return (f"Record(offset={self.offset}, timestamp={self.timestamp}, key={self.key!r}, "
                f"value={self.value!r}, headers={self.headers!r})")


cdef list record_headers(Record r):
    cdef list out = []
    cdef Cursor c
    cdef int32_t i, klen, vlen
    cdef const uint8_t *kp
    cdef object hkey, hval
    if r._v.header_count == 0:
        return out
    # The headers were validated when the record was read; walk them again.
    cursor_init(&c, r._v.headers, r._v.headers_end - r._v.headers,
                r._v.error_position, False, r._strict)
    for i in range(r._v.header_count):
        read_varint(&c, &klen, "header key length")
        kp = cursor_take(&c, klen, "header key")
        hkey = java_utf8(kp, klen)
        read_varint(&c, &vlen, "header value length")
        if vlen < 0:
            hval = None
        else:
            hval = PyBytes_FromStringAndSize(<const char *>cursor_take(&c, vlen, "header value"), vlen)
        out.append((hkey, hval))
    return out


# What scan_v2_record found wrong.  Varint faults use the VarintStatus numbers.
cdef enum RecordFault:
    FAULT_SHORT = 16            # a field needs more bytes than remain
    FAULT_PREMATURE_EOF
    FAULT_SIZE_PAST_END
    FAULT_NEGATIVE_HEADER_COUNT
    FAULT_HEADER_COUNT_PAST_END
    FAULT_NEGATIVE_HEADER_KEY
    FAULT_NEGATIVE_HEADER_VALUE
    FAULT_SIZE_MISMATCH
    FAULT_ATTRIBUTES
    FAULT_NEGATIVE_LENGTH
    FAULT_OFFSET_ORDER
    FAULT_LEFTOVER
    FAULT_HEADER_KEY_UTF8


# Record fields, for error messages.
cdef enum RecordField:
    FIELD_LENGTH
    FIELD_ATTRIBUTES
    FIELD_TIMESTAMP_DELTA
    FIELD_OFFSET_DELTA
    FIELD_KEY_LENGTH
    FIELD_KEY
    FIELD_VALUE_LENGTH
    FIELD_VALUE
    FIELD_HEADER_COUNT
    FIELD_HEADER_KEY_LENGTH
    FIELD_HEADER_KEY
    FIELD_HEADER_VALUE_LENGTH
    FIELD_HEADER_VALUE


cdef tuple RECORD_FIELD_NAMES = (
    "record length", "record attributes", "record timestamp delta", "record offset delta",
    "record key length", "record key", "record value length", "record value",
    "record header count", "header key length", "header key", "header value length",
    "header value")


cdef struct RecordFaultInfo:
    int kind                     # VarintStatus or RecordFault
    int field                    # RecordField
    const uint8_t *at            # where the error is reported
    const uint8_t *record_start
    int64_t a
    int64_t b


@cython.final
@cython.no_gc          # holds buffers and ints only: no cycles possible
cdef class _RecordIterator:
    cdef _Buffer _buf
    cdef Cursor _cur
    cdef int32_t _remaining
    cdef int64_t _base_offset
    cdef int64_t _base_timestamp
    cdef int64_t _max_timestamp
    cdef int32_t _base_sequence
    cdef int32_t _last_offset_delta
    cdef int64_t _prev_offset_delta
    cdef int8_t _timestamp_type
    cdef bint _is_control
    cdef bint _strict
    cdef Py_ssize_t _batch_position
    cdef RecordFaultInfo _fault

    def __iter__(self):
        return self

    def __next__(self):
        if self._remaining <= 0:
            raise StopIteration
        return read_v2_record(self)


cdef extern from "Python.h":
    # The raw C API (NULL on error, nothing raised), for scan_v2_record.
    PyObject *decode_utf8_raw "PyUnicode_DecodeUTF8"(const char *s, Py_ssize_t size,
                                                      const char *errors)
    void PyErr_Clear()
    void decref_raw "Py_DECREF"(PyObject *o)


cdef bint utf8_well_formed(const uint8_t *p, Py_ssize_t n) noexcept nogil:
    """Well-formed UTF-8 past ASCII: no overlong forms, no surrogates, nothing
    above U+10FFFF - the set Python's strict decoder and Java's decoder accept."""
    cdef Py_ssize_t i = 0
    cdef uint8_t b
    cdef int need, k
    cdef uint32_t cp
    while i < n:
        b = p[i]
        if b < 0x80:
            i += 1
            continue
        if 0xC2 <= b <= 0xDF:
            need = 1
            cp = b & 0x1F
        elif 0xE0 <= b <= 0xEF:
            need = 2
            cp = b & 0x0F
        elif 0xF0 <= b <= 0xF4:
            need = 3
            cp = b & 0x07
        else:
            return False
        if need >= n - i:
            return False
        for k in range(1, need + 1):
            if (p[i + k] & 0xC0) != 0x80:
                return False
            cp = (cp << 6) | (p[i + k] & 0x3F)
        if need == 2 and (cp < 0x800 or 0xD800 <= cp <= 0xDFFF):
            return False
        if need == 3 and (cp < 0x10000 or cp > 0x10FFFF):
            return False
        i += need + 1
    return True


cdef inline always_inline_bint is_utf8(const uint8_t *p, Py_ssize_t n) noexcept nogil:
    """Whether p[:n] is valid UTF-8 (the one validator of the core; ASCII, the
    common case, is decided by one pass of ORs, eight bytes at a time)."""
    cdef Py_ssize_t i = 0
    cdef uint64_t word, seen8 = 0
    cdef uint8_t seen = 0
    while i + 8 <= n:
        memcpy(&word, p + i, 8)
        seen8 |= word
        i += 8
    while i < n:
        seen |= p[i]
        i += 1
    if seen < 0x80 and (seen8 & 0x8080808080808080ULL) == 0:
        return True
    return utf8_well_formed(p, n)


cdef inline bint not_continuation(int b) noexcept:
    return (b & 0xC0) != 0x80


cdef str java_utf8_replacing(const uint8_t *p, Py_ssize_t n):
    """Bytes that are not valid UTF-8, decoded as Java's ``new String(bytes, UTF_8)``
    decodes them (Kafka's Utils.utf8): each malformed sequence becomes one U+FFFD,
    sized by Java's rules, not Python's (``ed a0 80``, an encoded surrogate, is ONE
    replacement in Java and three in Python); a sequence cut off by the end of
    the input is one replacement and ends the string."""
    cdef list out = []
    cdef Py_ssize_t sp = 0
    cdef int b1, b2, b3, b4, c
    while sp < n:
        b1 = p[sp]
        sp += 1
        if b1 < 0x80:
            out.append(chr(b1))
        elif (b1 >> 5) == 0x6 and (b1 & 0x1E) != 0:            # 2 bytes: C2..DF
            if sp < n:
                b2 = p[sp]
                sp += 1
                if not_continuation(b2):
                    out.append("\ufffd")
                    sp -= 1
                else:
                    out.append(chr(((b1 & 0x1F) << 6) | (b2 & 0x3F)))
                continue
            out.append("\ufffd")
            break
        elif (b1 >> 4) == 0xE:                                  # 3 bytes: E0..EF
            if sp + 1 < n:
                b2 = p[sp]
                b3 = p[sp + 1]
                sp += 2
                if (b1 == 0xE0 and (b2 & 0xE0) == 0x80) or not_continuation(b2) or not_continuation(b3):
                    out.append("\ufffd")
                    sp -= 3
                    sp += 1 if ((b1 == 0xE0 and (b2 & 0xE0) == 0x80) or not_continuation(b2)) else 2
                else:
                    c = ((b1 & 0x0F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F)
                    out.append("\ufffd" if 0xD800 <= c <= 0xDFFF else chr(c))
                continue
            if sp < n and ((b1 == 0xE0 and (p[sp] & 0xE0) == 0x80) or not_continuation(p[sp])):
                out.append("\ufffd")
                continue
            out.append("\ufffd")
            break
        elif (b1 >> 3) == 0x1E:                                 # 4 bytes: F0..F7
            if sp + 2 < n:
                b2 = p[sp]
                b3 = p[sp + 1]
                b4 = p[sp + 2]
                sp += 3
                c = ((b1 & 0x07) << 18) | ((b2 & 0x3F) << 12) | ((b3 & 0x3F) << 6) | (b4 & 0x3F)
                if (not_continuation(b2) or not_continuation(b3) or not_continuation(b4)
                        or not 0x10000 <= c <= 0x10FFFF):
                    out.append("\ufffd")
                    sp -= 4
                    if (b1 > 0xF4 or (b1 == 0xF0 and (b2 < 0x90 or b2 > 0xBF))
                            or (b1 == 0xF4 and (b2 & 0xF0) != 0x80) or not_continuation(b2)):
                        sp += 1
                    elif not_continuation(b3):
                        sp += 2
                    else:
                        sp += 3
                else:
                    out.append(chr(c))
                continue
            if b1 > 0xF4 or (sp < n and ((b1 == 0xF0 and (p[sp] < 0x90 or p[sp] > 0xBF))
                                         or (b1 == 0xF4 and (p[sp] & 0xF0) != 0x80)
                                         or not_continuation(p[sp]))):
                out.append("\ufffd")
                continue
            sp += 1
            out.append("\ufffd")
            if sp < n and not_continuation(p[sp]):
                continue
            break
        else:
            out.append("\ufffd")
    return "".join(out)


cdef inline str java_utf8(const uint8_t *p, Py_ssize_t n):
    """A header key (or any Kafka string) decoded as Java decodes it: valid UTF-8
    (the same set for Python's strict decoder and Java's) the fast way, anything
    else by Java's replacement rules."""
    cdef PyObject *decoded = decode_utf8_raw(<const char *>p, n, "strict")
    cdef str text
    if decoded != NULL:
        text = <str>decoded
        decref_raw(decoded)
        return text
    PyErr_Clear()
    return java_utf8_replacing(p, n)


def java_utf8_decode(data, /) -> str:
    """``new String(data, UTF_8)`` as Java computes it (invalid sequences replaced by
    U+FFFD with Java's rules); used wherever Kafka decodes a string leniently."""
    cdef _Buffer buf = buffer_of(data)
    return java_utf8(buf.ptr, buf.size)


cdef int record_fault(RecordFaultInfo *f, int kind, int field, const uint8_t *at,
                      const uint8_t *record_start, int64_t a, int64_t b) noexcept nogil:
    f.kind = kind
    f.field = field
    f.at = at
    f.record_start = record_start
    f.a = a
    f.b = b
    return kind


cdef inline always_inline_int read_record_fields(_RecordIterator it, RecordView *v, const uint8_t *start,
                                   const uint8_t *p, const uint8_t *limit, bint strict) noexcept nogil:
    """The fields of the record at `start`, from its body at p up to `limit` at most, into v
    (offset and timestamp as their deltas; headers_end: where the fields end).  Returns 0, or
    a fault (described in it._fault).  Every length is taken by the one checked read."""
    cdef RecordFaultInfo *f = &it._fault
    cdef int status
    cdef int32_t offset_delta, hk, hv, i
    cdef const uint8_t *q = span_take(&p, limit, 1)
    if unlikely(q == NULL):
        return record_fault(f, FAULT_SHORT, FIELD_ATTRIBUTES, p, start, 1, 0)
    v.attributes = <int8_t>q[0]
    status = take_varlong(&p, limit, strict, &v.timestamp)
    if unlikely(status):
        return record_fault(f, status, FIELD_TIMESTAMP_DELTA, p, start, 0, 0)
    status = take_varint(&p, limit, strict, &offset_delta)
    if unlikely(status):
        return record_fault(f, status, FIELD_OFFSET_DELTA, p, start, 0, 0)
    v.offset = offset_delta
    status = take_varint(&p, limit, strict, &v.key_len)
    if unlikely(status):
        return record_fault(f, status, FIELD_KEY_LENGTH, p, start, 0, 0)
    v.key = NULL
    if v.key_len >= 0:
        v.key = span_take(&p, limit, v.key_len)
        if unlikely(v.key == NULL):
            return record_fault(f, FAULT_SHORT, FIELD_KEY, p, start, v.key_len, limit - p)
    status = take_varint(&p, limit, strict, &v.value_len)
    if unlikely(status):
        return record_fault(f, status, FIELD_VALUE_LENGTH, p, start, 0, 0)
    v.value = NULL
    if v.value_len >= 0:
        v.value = span_take(&p, limit, v.value_len)
        if unlikely(v.value == NULL):
            return record_fault(f, FAULT_SHORT, FIELD_VALUE, p, start, v.value_len, limit - p)
    status = take_varint(&p, limit, strict, &v.header_count)
    if unlikely(status):
        return record_fault(f, status, FIELD_HEADER_COUNT, p, start, 0, 0)
    if unlikely(v.header_count < 0):
        return record_fault(f, FAULT_NEGATIVE_HEADER_COUNT, 0, start, start, v.header_count, 0)
    if unlikely(v.header_count > limit - p):
        return record_fault(f, FAULT_HEADER_COUNT_PAST_END, 0, start, start, v.header_count, 0)
    v.headers = p
    for i in range(v.header_count):
        status = take_varint(&p, limit, strict, &hk)
        if unlikely(status):
            return record_fault(f, status, FIELD_HEADER_KEY_LENGTH, p, start, 0, 0)
        if unlikely(hk < 0):
            return record_fault(f, FAULT_NEGATIVE_HEADER_KEY, 0, start, start, hk, 0)
        q = span_take(&p, limit, hk)
        if unlikely(q == NULL):
            return record_fault(f, FAULT_SHORT, FIELD_HEADER_KEY, p, start, hk, limit - p)
        if unlikely(strict) and not is_utf8(q, hk):
            return record_fault(f, FAULT_HEADER_KEY_UTF8, 0, q, start, 0, 0)
        status = take_varint(&p, limit, strict, &hv)
        if unlikely(status):
            return record_fault(f, status, FIELD_HEADER_VALUE_LENGTH, p, start, 0, 0)
        if hv >= 0:
            if unlikely(span_take(&p, limit, hv) == NULL):
                return record_fault(f, FAULT_SHORT, FIELD_HEADER_VALUE, p, start, hv, limit - p)
        elif unlikely(hv != -1 and strict):
            return record_fault(f, FAULT_NEGATIVE_HEADER_VALUE, 0, start, start, hv, 0)
    v.headers_end = p
    return 0


cdef int record_overrun_fault(_RecordIterator it, const uint8_t *start, const uint8_t *body,
                              int32_t size, const uint8_t *end) noexcept nogil:
    """The fault of a record whose fields do not fit in its declared size (or whose size is
    negative), found as Kafka finds it: its reader reads the fields on past the record, into the
    rest of the batch, and then compares what it read with the size."""
    cdef RecordView fields
    cdef int status = read_record_fields(it, &fields, start, body, end, it._cur.strict)
    if status:
        return status
    return record_fault(&it._fault, FAULT_SIZE_MISMATCH, 0, start, start, size, fields.headers_end - body)


# Called through a pointer so the compiler keeps this cold path out of the record loops.
ctypedef int (*RecordOverrun)(_RecordIterator, const uint8_t *, const uint8_t *, int32_t,
                              const uint8_t *) noexcept nogil
cdef RecordOverrun record_overrun_out_of_line = record_overrun_fault


cdef inline always_inline_int scan_v2_record(_RecordIterator it, RecordView *v, const uint8_t **pos,
                               const uint8_t *end) noexcept nogil:
    """Read and validate the record at pos[0] (Kafka's DefaultRecord.readFrom
    rules) and move pos[0] past it.  Returns 0, or a fault (described in
    it._fault; pos[0] does not move).  Never raises, so the loops that call it
    stay small; parse_v2_record raises.  The position is passed apart from the
    iterator's cursor so a loop can keep it in a register."""
    cdef const Cursor *c = &it._cur
    cdef RecordFaultInfo *f = &it._fault
    cdef const uint8_t *start = pos[0]
    cdef const uint8_t *p = start
    cdef const uint8_t *body
    cdef bint strict = c.strict
    cdef int status
    cdef int32_t size, offset_delta
    # The fields as read (deltas), into v once the record is valid (kept apart, they stay
    # in registers).
    cdef RecordView r
    if unlikely(p >= end):
        return record_fault(f, FAULT_PREMATURE_EOF, 0, start, start, 0, 0)
    status = take_varint(&p, end, strict, &size)
    if unlikely(status):
        return record_fault(f, status, FIELD_LENGTH, p, start, 0, 0)
    # The body by the one checked read; the fields are read inside it.  (p is then
    # taken from the length prefix, so the next record's parse does not wait on
    # this record's chain of dependent loads.)
    body = span_take(&p, end, size)
    if unlikely(body == NULL and size >= 0):
        return record_fault(f, FAULT_SIZE_PAST_END, 0, start, start, size, end - p)
    if unlikely(body == NULL or read_record_fields(it, &r, start, body, p, strict) != 0):
        # (a negative size leaves p at the body)
        return record_overrun_out_of_line(it, start, p if body == NULL else body, size, end)
    if unlikely(r.headers_end != p):
        return record_fault(f, FAULT_SIZE_MISMATCH, 0, start, start, size, r.headers_end - body)
    offset_delta = <int32_t>r.offset
    if unlikely(strict):
        if r.attributes != 0:
            return record_fault(f, FAULT_ATTRIBUTES, 0, start, start, <uint8_t>r.attributes, 0)
        if r.key_len < -1 or r.value_len < -1:
            return record_fault(f, FAULT_NEGATIVE_LENGTH, 0, start, start, r.key_len, r.value_len)
        if offset_delta <= it._prev_offset_delta or offset_delta > it._last_offset_delta:
            return record_fault(f, FAULT_OFFSET_ORDER, 0, start, start, offset_delta,
                                it._last_offset_delta)
        it._prev_offset_delta = offset_delta
    # Kafka checks for leftover bytes when it reads the last declared record.
    if unlikely(it._remaining == 1 and p != end):
        return record_fault(f, FAULT_LEFTOVER, 0, p, start, 0, 0)
    it._remaining -= 1
    pos[0] = p
    v.offset = wrapping_add64(it._base_offset, offset_delta)
    if it._timestamp_type == TS_LOG_APPEND:
        v.timestamp = it._max_timestamp     # the stored deltas still hold create times
    else:
        v.timestamp = wrapping_add64(it._base_timestamp, r.timestamp)
    v.sequence = increment_sequence(it._base_sequence, offset_delta) if it._base_sequence >= 0 else -1
    v.attributes = r.attributes
    v.key_len = r.key_len
    v.value_len = r.value_len
    v.header_count = r.header_count
    v.key = r.key
    v.value = r.value
    v.headers = r.headers
    v.headers_end = p
    v.error_position = (c.origin if c.decompressed else c.origin + (start - c.start))
    return 0


# A batch's walk holds no Python object, so a batch worth it is walked without the GIL: a reader
# decoding windows on several threads (kafkarec.scan's ``threads``) then walks them at once.  Below
# this payload the GIL's release and retake cost more than they free.
cdef enum:
    WALK_NOGIL_MIN_BYTES = 16384


cdef extern from "prefetch.h":
    # the lines a record loop will read next asked for ahead of it (why: the header)
    void kr_prefetch_ahead(const void *at) nogil


cdef extern from "meta_walk.h":
    # the walk over the records that end well before the section's end (why it checks less than
    # the scanner and still accepts only what the scanner accepts: the header)
    Py_ssize_t kr_walk_meta_records(const uint8_t **pos, const uint8_t *end, Py_ssize_t count,
                                    int64_t *offsets, int64_t *timestamps, int64_t base_offset,
                                    int64_t base_timestamp) nogil


cdef inline Py_ssize_t walk_v2_meta(_RecordIterator it, const uint8_t **pos, const uint8_t *end,
                                     Py_ssize_t max_records, int64_t *offsets,
                                     int64_t *timestamps) noexcept nogil:
    """The meta-only walker: the offsets and timestamps of up to `max_records` of the iterator's
    records from pos[0], into `offsets` and `timestamps`; returns how many it walked (pos[0] and
    it._remaining moved past them).  Per record it reads the length, attributes, both deltas and
    the key, value and header lengths, skips the bytes between, and builds nothing else.

    It accepts only a record scan_v2_record accepts, giving the same offset and timestamp: every
    non-strict rule is checked here (each length against the record's end, no leftover after the
    last record).  At the first record it does not accept it stops without moving past it, and the
    caller lets scan_v2_record read that record, so a fault is found and worded by the one scanner
    (where it stops and why are the full read's).  Strict reads keep the scanner (its further
    rules, UTF-8 header keys among them, are not walked here: the caller's test, meta_rows).
    No Python object is touched: it runs in whatever GIL state its caller is in."""
    cdef Py_ssize_t n
    cdef int32_t remaining = it._remaining
    n = walk_v2_meta_records(pos, end, max_records, offsets, timestamps, &remaining,
                             it._base_offset, it._base_timestamp)
    log_append_times(it, timestamps, n)
    it._remaining = remaining
    return n


cdef inline void log_append_times(_RecordIterator it, int64_t *timestamps, Py_ssize_t n) noexcept nogil:
    """The n timestamps a walk wrote (base + delta) made the batch's max timestamp in a
    LOG_APPEND_TIME batch: its stored deltas still hold create times (as in scan_v2_record); one
    fill after the walk keeps the choice out of its loop (the meta-only walk, the walk into views)."""
    cdef Py_ssize_t i
    if it._timestamp_type == TS_LOG_APPEND:
        for i in range(n):
            timestamps[i] = it._max_timestamp


cdef inline Py_ssize_t walk_v2_meta_records(const uint8_t **pos, const uint8_t *end,
                                            Py_ssize_t max_records, int64_t *offsets,
                                            int64_t *timestamps, int32_t *remaining_io,
                                            int64_t base_offset, int64_t base_timestamp
                                            ) noexcept nogil:
    """walk_v2_meta's loop over the batch's fields alone (no Python object: run without the GIL);
    `remaining_io`: the records the batch still declares, moved past those walked.  Timestamps
    are base + delta whatever the batch's timestamp type.

    kr_walk_meta_records (meta_walk.h) takes every record it can; what it leaves, the batch's
    last record and those ending in its last KR_WALK_SLACK bytes, is read here with every read
    checked against the record's or the section's end (and any record it stopped at is then
    stopped at here too, or read and the fast walk resumed)."""
    cdef const uint8_t *p
    cdef const uint8_t *record_end
    cdef const uint8_t *body
    cdef int32_t size, offset_delta, key_len, value_len, header_count, hk, hv, i
    cdef int64_t timestamp_delta
    cdef int32_t remaining = remaining_io[0]
    cdef Py_ssize_t n = 0, walked
    while n < max_records and remaining > 0:
        if remaining > 1:
            walked = kr_walk_meta_records(pos, end, min(max_records - n, remaining - 1),
                                          offsets + n, timestamps + n, base_offset,
                                          base_timestamp)
            n += walked
            remaining -= <int32_t>walked
            if n >= max_records:
                break
        p = pos[0]
        if take_varint(&p, end, False, &size) != VARINT_OK:
            break
        body = span_take(&p, end, size)         # a negative size fails here too
        if body == NULL:
            break
        record_end = p
        p = body
        # attributes: one byte, unused outside strict reads
        if span_take(&p, record_end, 1) == NULL:
            break
        if take_varlong(&p, record_end, False, &timestamp_delta) != VARINT_OK:
            break
        if take_varint(&p, record_end, False, &offset_delta) != VARINT_OK:
            break
        if take_varint(&p, record_end, False, &key_len) != VARINT_OK:
            break
        if key_len >= 0 and span_take(&p, record_end, key_len) == NULL:
            break
        if take_varint(&p, record_end, False, &value_len) != VARINT_OK:
            break
        if value_len >= 0 and span_take(&p, record_end, value_len) == NULL:
            break
        if take_varint(&p, record_end, False, &header_count) != VARINT_OK:
            break
        # (the scanner's two header-count rules: not negative, not past the record's end)
        if header_count < 0 or header_count > record_end - p:
            break
        for i in range(header_count):
            if take_varint(&p, record_end, False, &hk) != VARINT_OK or hk < 0:
                break
            if span_take(&p, record_end, hk) == NULL:
                break
            if take_varint(&p, record_end, False, &hv) != VARINT_OK:
                break
            if hv >= 0 and span_take(&p, record_end, hv) == NULL:
                break
        else:
            # every field read, ending at the record's declared end; the last declared record
            # also ends the records section (Kafka's leftover check)
            if p == record_end and (remaining > 1 or p == end):
                offsets[n] = wrapping_add64(base_offset, offset_delta)
                timestamps[n] = wrapping_add64(base_timestamp, timestamp_delta)
                n += 1
                remaining -= 1
                pos[0] = p
                continue
        break
    remaining_io[0] = remaining
    return n


cdef int raise_record_fault(_RecordIterator it) except -1:
    """Raise the error scan_v2_record described; the iterator then ends."""
    cdef RecordFaultInfo *f = &it._fault
    cdef Cursor *c = &it._cur
    cdef str what = RECORD_FIELD_NAMES[f.field]
    cdef int kind = f.kind
    it._remaining = -1
    if kind < FAULT_SHORT:
        reason = f"{what}: {varint_problem(kind)}"
    elif kind == FAULT_SHORT:
        reason = f"{what} needs {f.a} bytes but only {f.b} remain in the batch"
    elif kind == FAULT_PREMATURE_EOF:
        reason = "Incorrect declared batch size, premature EOF reached"
    elif kind == FAULT_SIZE_PAST_END:
        reason = (f"Invalid record size: expected {f.a} bytes in record payload, but instead "
                  f"the buffer has only {f.b} remaining bytes.")
    elif kind == FAULT_NEGATIVE_HEADER_COUNT:
        reason = f"Found invalid number of record headers {f.a}"
    elif kind == FAULT_HEADER_COUNT_PAST_END:
        reason = (f"Found invalid number of record headers. {f.a} is larger than "
                  f"the remaining size of the buffer")
    elif kind == FAULT_NEGATIVE_HEADER_KEY:
        reason = f"Invalid negative header key size {f.a}"
    elif kind == FAULT_NEGATIVE_HEADER_VALUE:
        reason = f"negative header value length {f.a}"
    elif kind == FAULT_SIZE_MISMATCH:
        reason = (f"Invalid record size: expected to read {f.a} bytes in record payload, "
                  f"but instead read {f.b}")
    elif kind == FAULT_ATTRIBUTES:
        reason = f"unused record attributes set ({f.a})"
    elif kind == FAULT_NEGATIVE_LENGTH:
        reason = f"negative key/value length other than -1 ({f.a}, {f.b})"
    elif kind == FAULT_OFFSET_ORDER:
        reason = (f"offset delta {f.a} is out of order or past the last offset "
                  f"delta {f.b}")
    elif kind == FAULT_HEADER_KEY_UTF8:
        reason = "header key is not valid UTF-8"
    else:
        reason = "Incorrect declared batch size, records still remaining in file"
    return cursor_fail(c, f.at, InvalidRecordError, reason)


cdef inline always_inline_int parse_v2_record_at(_RecordIterator it, RecordView *v, const uint8_t **pos,
                                   const uint8_t *end) except -1:
    """The record at pos[0], validated (pos[0] moves past it); raises on a fault."""
    if unlikely(scan_v2_record(it, v, pos, end) != 0):
        return raise_record_fault(it)
    return 0


cdef inline always_inline_int parse_v2_record(_RecordIterator it, RecordView *v) except -1:
    """The iterator's next record, validated; raises on a fault."""
    return parse_v2_record_at(it, v, &it._cur.pos, it._cur.end)


cdef Record read_v2_record(_RecordIterator it):
    cdef Record r = Record.__new__(Record)
    parse_v2_record(it, &r._v)
    r._buf = it._buf
    r._timestamp_type = it._timestamp_type
    r._magic = 2
    r._is_control = it._is_control
    r._strict = it._strict
    r._control_version = -1
    return r


cdef object v2_record_iterator(RecordBatch b, _Scratch scratch=None):
    """The records of v2 batch ``b``; ``scratch``: where a compressed batch is decompressed
    (a read that copies every record out before its next batch), else a buffer of its own."""
    cdef _RecordIterator it
    cdef int codec = b.attributes & ATTR_CODEC_MASK
    cdef _Buffer payload
    cdef Py_ssize_t payload_size
    if codec > CODEC_ZSTD:
        raise UnsupportedCodecError(f"Unknown compression type id: {codec}", b.position)
    if b._record_count == 0:
        # Kafka reads no record, but its iterator opens the decompressor first:
        # gzip, snappy and lz4 streams read their header then, so an empty or
        # garbage payload fails (zstd opens lazily and is never read).
        # Strict: the records section must be empty, decompressed or not.
        if codec != CODEC_NONE and not b._strict:
            open_like_java(codec, 2, view_of(b._buf.ptr + batch_offset(b) + V2_HEADER_SIZE,
                                             b.size_in_bytes - V2_HEADER_SIZE),
                           b._max_decompressed, b.position)
            return iter(())
        if codec == CODEC_NONE:
            payload_size = b.size_in_bytes - V2_HEADER_SIZE
        else:
            payload_size = v2_payload(b, codec).size
        if b._strict and payload_size > 0:
            raise InvalidRecordError(
                f"batch declares 0 records but holds {payload_size} bytes of records"
                + (" (decompressed)" if codec != CODEC_NONE else ""), b.position)
        return iter(())
    if b._record_count < 0:
        raise InvalidRecordError(f"Found invalid record count {b._record_count} in magic v2 batch",
                                 b.position)
    it = _RecordIterator.__new__(_RecordIterator)
    if codec == CODEC_NONE:
        it._buf = b._buf
        cursor_init(&it._cur, b._buf.ptr + batch_offset(b) + V2_HEADER_SIZE,
                    b.size_in_bytes - V2_HEADER_SIZE, b.position + V2_HEADER_SIZE, False, b._strict)
    else:
        payload = v2_payload(b, codec, scratch)
        it._buf = payload
        cursor_init(&it._cur, payload.ptr, payload.size, b.position, True, b._strict)
    it._remaining = b._record_count
    it._base_offset = b._base_offset
    it._base_timestamp = b.base_timestamp
    it._max_timestamp = b.max_timestamp
    it._base_sequence = b.base_sequence
    it._last_offset_delta = b._last_offset_delta
    it._prev_offset_delta = -1
    it._timestamp_type = batch_timestamp_type(b)
    it._is_control = (b.attributes & ATTR_CONTROL) != 0
    it._strict = b._strict
    it._batch_position = b.position
    return it


cdef _Buffer v2_payload(RecordBatch b, int codec, _Scratch scratch=None):
    """The decompressed records section of a compressed batch (into ``scratch`` when given)."""
    cdef const uint8_t *start = b._buf.ptr + batch_offset(b) + V2_HEADER_SIZE
    cdef Py_ssize_t n = b.size_in_bytes - V2_HEADER_SIZE
    return buffer_of(decompress(codec, 2, view_of(start, n), b._max_decompressed, b.position,
                                b._strict, scratch))


def scan_records(RecordBatch batch, /) -> tuple:
    """``(record count, uncompressed records-section bytes)`` of ``batch``.

    Every record is read and validated by the same rules, and fails with the
    same errors, as iterating the batch (the CRC first when the batch was read
    with ``verify_crc``), but no Python object is made per v2 record: the
    command line's counting and deep checks ask this instead of re-deriving
    record sizes.
    """
    cdef RecordView v
    cdef _RecordIterator it
    cdef Py_ssize_t count = 0, size = 0
    cdef Record r
    if batch._verify_crc:
        check_crc(batch)
    if batch.magic < 2:
        for r in legacy_records(batch):
            count += 1
            size += (LOG_OVERHEAD + (RECORD_OVERHEAD_V0 if r._magic == 0 else RECORD_OVERHEAD_V0 + 8)
                     + max(r._v.key_len, 0) + max(r._v.value_len, 0))
        return count, size
    records = v2_record_iterator(batch)
    if not isinstance(records, _RecordIterator):
        return 0, 0                     # a batch of 0 records: Kafka reads nothing
    it = <_RecordIterator>records
    size = it._cur.end - it._cur.pos
    while it._remaining > 0:
        parse_v2_record(it, &v)
        count += 1
    return count, size
