# Columnar output: records decoded straight into Arrow buffers (no Python
# object per record), in the schema of Spark's Kafka source:
#   key binary, value binary, topic string, partition int32, offset int64,
#   timestamp timestamp[ms], timestampType int32,
#   headers list<struct<key string, value binary>> (null when a record has none)
# plus opt-in batch-level columns.  pyarrow is imported on first use; the
# buffers are handed to pa.Array.from_buffers without a copy.

from kafkarec._extras import require

cdef object _pa = None


cdef object pyarrow():
    global _pa
    if _pa is None:
        _pa = require("pyarrow")
    return _pa


cdef enum:
    INT32_LIMIT = 0x7FFFFFFF


cdef class _ArrowGrowable(_Growable):
    """A _Growable whose memory comes from Arrow's memory pool (mimalloc or
    jemalloc), which keeps freed pages: column buffers of one table after
    another then reuse memory instead of faulting fresh pages in."""
    cdef object _arrow_buffer

    def __dealloc__(self):
        self.data = NULL            # owned by the Arrow buffer, not by malloc

    cdef int reserve(self, Py_ssize_t extra) except -1:
        cdef Py_ssize_t want = self.size + extra
        cdef Py_ssize_t cap
        if want <= self.capacity:
            return 0
        if self._exports:
            raise BufferError("buffer is exported and cannot grow")
        cap = max(want, self.capacity * 2, 4096)
        if self._arrow_buffer is None:
            self._arrow_buffer = pyarrow().allocate_buffer(cap, resizable=True)
        else:
            self._arrow_buffer.resize(cap)
        self.data = <uint8_t *><uintptr_t>self._arrow_buffer.address
        self.capacity = cap
        return 0


cdef inline int grow_put(_Growable g, const void *src, Py_ssize_t n) except -1:
    if g.size + n > g.capacity:
        g.reserve(n)
    if n:                       # (g.data may still be NULL when n is 0)
        memcpy(g.data + g.size, src, n)
    g.size += n
    return 0


cdef inline int put_i64(_Growable g, int64_t v) except -1:
    return grow_put(g, &v, 8)


cdef inline int put_i32(_Growable g, int32_t v) except -1:
    return grow_put(g, &v, 4)


cdef inline int put_i16(_Growable g, int16_t v) except -1:
    return grow_put(g, &v, 2)


cdef inline int put_u8(_Growable g, uint8_t v) except -1:
    return grow_put(g, &v, 1)


@cython.final
cdef class _Bits:
    """A validity bitmap (LSB first), with its count of zeros."""
    cdef _Growable bytes
    cdef Py_ssize_t length
    cdef Py_ssize_t zeros

    def __cinit__(self):
        self.bytes = _ArrowGrowable()

    cdef inline int append(self, bint bit) except -1:
        if (self.length & 7) == 0:
            put_u8(self.bytes, 0)
        if bit:
            self.bytes.data[self.length >> 3] |= <uint8_t>(1 << (self.length & 7))
        else:
            self.bytes.data[self.length >> 3] &= <uint8_t>~(1 << (self.length & 7))
            self.zeros += 1
        self.length += 1
        return 0

    cdef int truncate(self, Py_ssize_t length) except -1:
        cdef Py_ssize_t i
        for i in range(length, self.length):
            if not (self.bytes.data[i >> 3] >> (i & 7)) & 1:
                self.zeros -= 1
        self.length = length
        self.bytes.size = (length + 7) >> 3
        if length & 7:
            self.bytes.data[length >> 3] &= <uint8_t>((1 << (length & 7)) - 1)
        return 0


@cython.final
cdef class _BinaryColumn:
    """offsets (int32) + data + validity of an Arrow binary/string column."""
    cdef _Growable offsets
    cdef _Growable data
    cdef _Bits valid

    def __cinit__(self):
        self.offsets = _ArrowGrowable()
        self.data = _ArrowGrowable()
        self.valid = _Bits()
        put_i32(self.offsets, 0)

    cdef inline int append(self, const uint8_t *p, int32_t n) except -1:
        if n >= 0:
            if self.data.size + n > INT32_LIMIT:
                raise ColumnOverflowError("binary column over 2 GiB")
            grow_put(self.data, p, n)
            self.valid.append(True)
        else:
            self.valid.append(False)
        return put_i32(self.offsets, <int32_t>self.data.size)

    cdef int truncate(self, Py_ssize_t rows) except -1:
        self.offsets.size = (rows + 1) * 4
        self.data.size = (<int32_t *>self.offsets.data)[rows]
        self.valid.truncate(rows)
        return 0

    cdef object to_arrow(self, object arrow_type):
        pa = pyarrow()
        cdef Py_ssize_t n = self.valid.length
        validity = pa.py_buffer(self.valid.bytes) if self.valid.zeros else None
        return pa.Array.from_buffers(arrow_type, n, [validity, pa.py_buffer(self.offsets),
                                                     pa.py_buffer(self.data)],
                                     null_count=self.valid.zeros)


cdef dict _schemas = {}


def arrow_schema(*, batch_columns=False):
    """The Arrow schema of to_arrow's output (Spark's Kafka source layout)."""
    cached = _schemas.get(bool(batch_columns))
    if cached is not None:
        return cached
    pa = pyarrow()
    fields = [
        pa.field("key", pa.binary()), pa.field("value", pa.binary()),
        pa.field("topic", pa.string()), pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()), pa.field("timestamp", pa.timestamp("ms")),
        pa.field("timestampType", pa.int32()),
        pa.field("headers", pa.list_(pa.struct([pa.field("key", pa.string()),
                                                pa.field("value", pa.binary())]))),
    ]
    if batch_columns:
        fields += [
            pa.field("producerId", pa.int64()), pa.field("producerEpoch", pa.int16()),
            pa.field("sequence", pa.int32()), pa.field("isTransactional", pa.bool_()),
            pa.field("isControl", pa.bool_()), pa.field("compression", pa.string()),
            pa.field("batchPosition", pa.int64()), pa.field("batchBaseOffset", pa.int64()),
            pa.field("partitionLeaderEpoch", pa.int32()), pa.field("magic", pa.int8()),
        ]
    schema = _schemas[bool(batch_columns)] = pa.schema(fields)
    return schema


@cython.final
cdef class _ArrowColumns:
    cdef Py_ssize_t rows
    cdef bint batch_columns
    cdef _BinaryColumn key, value, header_key, header_value
    cdef _Growable offset, timestamp, timestamp_type
    cdef _Growable header_list_offsets
    cdef _Bits header_list_valid
    cdef Py_ssize_t header_rows
    # batch-level columns
    cdef _Growable producer_id, producer_epoch, sequence, compression, batch_position
    cdef _Growable batch_base_offset, partition_leader_epoch, magic
    cdef _Bits is_transactional, is_control

    def __cinit__(self, bint batch_columns):
        self.batch_columns = batch_columns
        self.key = _BinaryColumn()
        self.value = _BinaryColumn()
        self.header_key = _BinaryColumn()
        self.header_value = _BinaryColumn()
        self.offset = _ArrowGrowable()
        self.timestamp = _ArrowGrowable()
        self.timestamp_type = _ArrowGrowable()
        self.header_list_offsets = _ArrowGrowable()
        self.header_list_valid = _Bits()
        put_i32(self.header_list_offsets, 0)
        if batch_columns:
            self.producer_id = _Growable()
            self.producer_epoch = _Growable()
            self.sequence = _Growable()
            self.compression = _Growable()
            self.batch_position = _Growable()
            self.batch_base_offset = _Growable()
            self.partition_leader_epoch = _Growable()
            self.magic = _Growable()
            self.is_transactional = _Bits()
            self.is_control = _Bits()

    cdef int add(self, RecordView *v, int timestamp_type, RecordBatch b, bint strict) except -1:
        cdef Cursor c
        cdef int32_t i, klen, vlen
        cdef const uint8_t *kp
        cdef const uint8_t *vp
        self.key.append(v.key, v.key_len)
        self.value.append(v.value, v.value_len)
        put_i64(self.offset, v.offset)
        put_i64(self.timestamp, v.timestamp)
        put_i32(self.timestamp_type, timestamp_type)
        if v.header_count:
            add_headers(self, v, strict, v.headers_end)
            self.header_list_valid.append(True)
        else:
            self.header_list_valid.append(False)   # Spark's Kafka source gives null, not []
        put_i32(self.header_list_offsets, <int32_t>self.header_rows)
        if self.batch_columns:
            put_i64(self.producer_id, b.producer_id)
            put_i16(self.producer_epoch, b.producer_epoch)
            put_i32(self.sequence, v.sequence)
            self.is_transactional.append(b.is_transactional)
            self.is_control.append(b.is_control)
            put_u8(self.compression, b.attributes & ATTR_CODEC_MASK)
            put_i64(self.batch_position, b.position)
            put_i64(self.batch_base_offset, b._base_offset)
            put_i32(self.partition_leader_epoch, b.partition_leader_epoch)
            put_u8(self.magic, b.magic)
        self.rows += 1
        return 0

    cdef int truncate(self, Py_ssize_t rows) except -1:
        """Drop rows past `rows` (a batch that failed half way is all-or-nothing;
        its header entries may be there although its rows were not committed)."""
        self.key.truncate(rows)
        self.value.truncate(rows)
        self.offset.size = rows * 8
        self.timestamp.size = rows * 8
        self.timestamp_type.size = rows * 4
        self.header_list_offsets.size = (rows + 1) * 4
        self.header_rows = (<int32_t *>self.header_list_offsets.data)[rows]
        self.header_list_valid.truncate(rows)
        self.header_key.truncate(self.header_rows)
        self.header_value.truncate(self.header_rows)
        if self.batch_columns:
            for g, width in ((self.producer_id, 8), (self.producer_epoch, 2), (self.sequence, 4),
                             (self.compression, 1), (self.batch_position, 8),
                             (self.batch_base_offset, 8), (self.partition_leader_epoch, 4),
                             (self.magic, 1)):
                (<_Growable>g).size = rows * width
            self.is_transactional.truncate(rows)
            self.is_control.truncate(rows)
        self.rows = rows
        return 0

    cdef int expect(self, double scale) except -1:
        """After a chunk's first batch: grow every column to `scale` times its
        size now, plus that size again (room for one more batch like the
        first, as a chunk ends past its limits), in one step.  A column of N
        bytes grown by doubling would copy about N bytes more."""
        cdef _Growable g
        for g in (self.key.offsets, self.key.data, self.key.valid.bytes,
                  self.value.offsets, self.value.data, self.value.valid.bytes,
                  self.offset, self.timestamp, self.timestamp_type,
                  self.header_list_offsets, self.header_list_valid.bytes):
            g.reserve(<Py_ssize_t>(g.size * scale) + 64)
        return 0

    cdef Py_ssize_t data_bytes(self) noexcept:
        return (self.key.data.size + self.value.data.size + self.header_key.data.size
                + self.header_value.data.size)

    cdef object finish(self, object topic, object partition):
        pa = pyarrow()
        cdef Py_ssize_t n = self.rows
        header_struct = pa.StructArray.from_arrays(
            [self.header_key.to_arrow(pa.string()), self.header_value.to_arrow(pa.binary())],
            names=["key", "value"])
        headers = pa.Array.from_buffers(
            pa.list_(header_struct.type), n,
            [pa.py_buffer(self.header_list_valid.bytes) if self.header_list_valid.zeros else None,
             pa.py_buffer(self.header_list_offsets)],
            null_count=self.header_list_valid.zeros, children=[header_struct])
        topic_col = (pa.nulls(n, pa.string()) if topic is None
                     else constant_string_column(topic, n))
        partition_col = (pa.nulls(n, pa.int32()) if partition is None
                         else constant_int32_column(partition, n))
        columns = [
            self.key.to_arrow(pa.binary()), self.value.to_arrow(pa.binary()), topic_col, partition_col,
            pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(self.offset)]),
            pa.Array.from_buffers(pa.timestamp("ms"), n, [None, pa.py_buffer(self.timestamp)]),
            pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(self.timestamp_type)]),
            headers,
        ]
        if self.batch_columns:
            names = pa.array(_CODEC_NAMES, pa.string())
            columns += [
                pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(self.producer_id)]),
                pa.Array.from_buffers(pa.int16(), n, [None, pa.py_buffer(self.producer_epoch)]),
                pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(self.sequence)]),
                pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer(self.is_transactional.bytes)]),
                pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer(self.is_control.bytes)]),
                names.take(pa.Array.from_buffers(pa.int8(), n, [None, pa.py_buffer(self.compression)])),
                pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(self.batch_position)]),
                pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(self.batch_base_offset)]),
                pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(self.partition_leader_epoch)]),
                pa.Array.from_buffers(pa.int8(), n, [None, pa.py_buffer(self.magic)]),
            ]
        return pa.RecordBatch.from_arrays(columns, schema=arrow_schema(batch_columns=self.batch_columns))


cdef object constant_int32_column(int32_t value, Py_ssize_t n):
    # pa.repeat copies the scalar element by element; a fill loop is several times faster.
    cdef _ArrowGrowable g = _ArrowGrowable()
    cdef int32_t *p = <int32_t *>reserve_tail(g, n * 4 + 4, False)
    cdef Py_ssize_t i
    for i in range(n):
        p[i] = value
    g.size = n * 4
    return pyarrow().Array.from_buffers(pyarrow().int32(), n, [None, pyarrow().py_buffer(g)])


cdef object constant_string_column(str value, Py_ssize_t n):
    cdef bytes utf8 = value.encode("utf-8")
    cdef Py_ssize_t width = len(utf8), i, filled
    cdef _ArrowGrowable offsets = _ArrowGrowable()
    cdef _ArrowGrowable data = _ArrowGrowable()
    cdef int32_t *o
    cdef uint8_t *d
    if width * n > INT32_LIMIT:
        raise ColumnOverflowError("topic column over 2 GiB")
    o = <int32_t *>reserve_tail(offsets, (n + 1) * 4, False)
    for i in range(n + 1):
        o[i] = <int32_t>(i * width)
    offsets.size = (n + 1) * 4
    d = reserve_tail(data, width * n + 1, False)
    if width and n:
        memcpy(d, PyBytes_AS_STRING(utf8), width)
        filled = width
        while filled < width * n:        # double the filled prefix
            memcpy(d + filled, d, min(filled, width * n - filled))
            filled += min(filled, width * n - filled)
    data.size = width * n
    pa = pyarrow()
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


cdef inline uint8_t *reserve_tail(_Growable g, Py_ssize_t n, bint zero) except NULL:
    """Room for n more bytes at the end of g (zeroed if asked); returns where they start."""
    if g.size + n > g.capacity:
        g.reserve(n)
    if zero:
        memset(g.data + g.size, 0, n)
    return g.data + g.size


cdef inline uint8_t *reserve_bits(_Bits bits, Py_ssize_t n, bint ones) except NULL:
    """Room for n more bits, preset to `ones` (the common value), so a row only
    touches its bit when it has the other one.  Also resets the unused bits of
    the last byte, which a batch that failed half way may have changed."""
    cdef Py_ssize_t length = bits.length
    cdef Py_ssize_t used = (length + 7) >> 3
    cdef Py_ssize_t want = ((length + n + 7) >> 3) + 1
    cdef _Growable g = bits.bytes
    if want > g.capacity:
        g.reserve(want - g.size)
    if length & 7:
        if ones:
            g.data[length >> 3] |= <uint8_t>(0xFF << (length & 7))
        else:
            g.data[length >> 3] &= <uint8_t>((1 << (length & 7)) - 1)
    memset(g.data + used, 0xFF if ones else 0, want - used)
    return g.data


cdef extern from "copy_short.h":
    enum: KAFKAREC_COPY_SLACK
    void kafkarec_copy_short(uint8_t *dst, const uint8_t *src, Py_ssize_t n,
                             const uint8_t *src_end) noexcept nogil


cdef int add_v2_records(_ArrowColumns cols, _RecordIterator it, int ts_type, RecordBatch b,
                        bint strict, bint crc_after) except -1:
    """All records of one v2 batch, written through raw pointers: the per-row
    columns into space reserved up front (a batch cannot hold more rows than
    its payload has 7-byte minimal records), key and value bytes into space
    checked per record.  Sizes
    are committed when the batch is complete, so a batch that fails half way
    leaves the columns as they were (headers, appended as they come, are cut
    back by _ArrowColumns.truncate).  With crc_after the CRC is checked after
    decoding, before the commit: decoding then pulls the bytes into cache
    and the CRC runs over cached bytes."""
    cdef RecordView v
    cdef const uint8_t *payload_end = it._cur.end
    cdef Py_ssize_t payload = payload_end - it._cur.pos
    cdef Py_ssize_t rows = min(<Py_ssize_t>it._remaining, payload // 7 + 1)
    cdef Py_ssize_t row = cols.rows, r0 = cols.rows, end_row
    cdef Py_ssize_t key_nulls = 0, value_nulls = 0, with_headers = 0
    cdef int32_t *ko
    cdef int32_t *vo
    cdef uint8_t *kvalid
    cdef uint8_t *vvalid
    cdef uint8_t *hvalid
    cdef int64_t *offs
    cdef int64_t *tss
    cdef int32_t *tts
    cdef int32_t *hoff
    cdef uint8_t *kdata
    cdef uint8_t *vdata
    cdef Py_ssize_t kpos, vpos, kcap, vcap
    cdef const uint8_t *pos = it._cur.pos
    if cols.key.data.size + payload > INT32_LIMIT or cols.value.data.size + payload > INT32_LIMIT:
        raise ColumnOverflowError("binary column over 2 GiB")
    if cols.batch_columns:
        # The rare wide layout keeps the general path.
        while it._remaining > 0:
            parse_v2_record(it, &v)
            cols.add(&v, ts_type, b, strict)
        return 0
    ko = <int32_t *>reserve_tail(cols.key.offsets, rows * 4, False)
    vo = <int32_t *>reserve_tail(cols.value.offsets, rows * 4, False)
    offs = <int64_t *>reserve_tail(cols.offset, rows * 8, False)
    tss = <int64_t *>reserve_tail(cols.timestamp, rows * 8, False)
    tts = <int32_t *>reserve_tail(cols.timestamp_type, rows * 4, False)
    hoff = <int32_t *>reserve_tail(cols.header_list_offsets, rows * 4, False)
    kdata = cols.key.data.data            # indexed by absolute column position
    vdata = cols.value.data.data
    kcap = cols.key.data.capacity
    vcap = cols.value.data.capacity
    kvalid = reserve_bits(cols.key.valid, rows, True)
    vvalid = reserve_bits(cols.value.valid, rows, True)
    hvalid = reserve_bits(cols.header_list_valid, rows, False)
    kpos = cols.key.data.size
    vpos = cols.value.data.size
    end_row = r0 + rows
    while it._remaining > 0 and row < end_row:
        # parse_v2_record_at, spelled out so the scanner inlines into this loop
        if unlikely(scan_v2_record(it, &v, &pos, payload_end) != 0):
            raise_record_fault(it)
        if likely(v.key_len >= 0):
            if unlikely(kpos + v.key_len + KAFKAREC_COPY_SLACK > kcap):
                # (sizes are committed per batch: reserve counts from kpos)
                cols.key.data.reserve(kpos - cols.key.data.size + v.key_len + KAFKAREC_COPY_SLACK)
                kdata = cols.key.data.data
                kcap = cols.key.data.capacity
            kafkarec_copy_short(kdata + kpos, v.key, v.key_len, payload_end)
            kpos += v.key_len
        else:
            kvalid[row >> 3] &= <uint8_t>~(1 << (row & 7))
            key_nulls += 1
        if likely(v.value_len >= 0):
            if unlikely(vpos + v.value_len + KAFKAREC_COPY_SLACK > vcap):
                cols.value.data.reserve(vpos - cols.value.data.size + v.value_len
                                        + KAFKAREC_COPY_SLACK)
                vdata = cols.value.data.data
                vcap = cols.value.data.capacity
            kafkarec_copy_short(vdata + vpos, v.value, v.value_len, payload_end)
            vpos += v.value_len
        else:
            vvalid[row >> 3] &= <uint8_t>~(1 << (row & 7))
            value_nulls += 1
        ko[0] = <int32_t>kpos
        vo[0] = <int32_t>vpos
        ko += 1
        vo += 1
        offs[0] = v.offset
        tss[0] = v.timestamp
        tts[0] = ts_type
        offs += 1
        tss += 1
        tts += 1
        if unlikely(v.header_count != 0):
            add_headers(cols, &v, strict, payload_end)
            hvalid[row >> 3] |= <uint8_t>(1 << (row & 7))
            with_headers += 1
        hoff[0] = <int32_t>cols.header_rows
        hoff += 1
        row += 1
    if it._remaining > 0:
        # More declared records than the payload can hold: let the parser say why.
        parse_v2_record_at(it, &v, &pos, payload_end)
    if crc_after:
        check_crc(b)
    # commit the batch
    it._cur.pos = pos
    rows = row - r0
    cols.key.data.size = kpos
    cols.value.data.size = vpos
    cols.key.offsets.size += rows * 4
    cols.value.offsets.size += rows * 4
    cols.offset.size += rows * 8
    cols.timestamp.size += rows * 8
    cols.timestamp_type.size += rows * 4
    cols.header_list_offsets.size += rows * 4
    cols.key.valid.zeros += key_nulls
    cols.value.valid.zeros += value_nulls
    cols.header_list_valid.zeros += rows - with_headers
    for bitmap in (cols.key.valid, cols.value.valid, cols.header_list_valid):
        (<_Bits>bitmap).length = row
        (<_Bits>bitmap).bytes.size = (row + 7) >> 3
    cols.rows = row
    return 0


# Called through a pointer so the compiler keeps the decode loop a function of
# its own instead of inlining it into the (huge) generator below, where its
# loop variables would spill to the stack.
ctypedef int (*AddV2Records)(_ArrowColumns, _RecordIterator, int, RecordBatch, bint,
                             bint) except -1
cdef AddV2Records add_v2_records_out_of_line = add_v2_records


cdef inline int append_reserved(_Growable data, _Growable offsets, _Bits valid,
                                const uint8_t *p, int32_t n, const uint8_t *src_end) except -1:
    """Append to a binary column whose data has room for n bytes +
    KAFKAREC_COPY_SLACK and whose offsets have room for one more entry
    (add_headers reserves both).  Parts passed apart: no reference counting
    per call."""
    if n >= 0:
        kafkarec_copy_short(data.data + data.size, p, n, src_end)
        data.size += n
    valid.append(n >= 0)
    (<int32_t *>(offsets.data + offsets.size))[0] = <int32_t>data.size
    offsets.size += 4
    return 0


cdef int add_headers(_ArrowColumns cols, RecordView *v, bint strict,
                     const uint8_t *payload_end) except -1:
    cdef Cursor c
    cdef int32_t i, klen, vlen
    cdef const uint8_t *kp
    cdef const uint8_t *vp
    cdef _BinaryColumn keys = cols.header_key
    cdef _BinaryColumn values = cols.header_value
    cdef _Growable key_data = keys.data, key_offsets = keys.offsets
    cdef _Growable value_data = values.data, value_offsets = values.offsets
    cdef _Bits key_valid = keys.valid, value_valid = values.valid
    # A record's header keys and values together are shorter than its header
    # section: room for all of them at once, then no check per header.
    cdef Py_ssize_t room = v.headers_end - v.headers + KAFKAREC_COPY_SLACK
    if key_data.size + room > INT32_LIMIT or value_data.size + room > INT32_LIMIT:
        raise ColumnOverflowError("header column over 2 GiB")
    reserve_tail(key_data, room, False)
    reserve_tail(value_data, room, False)
    reserve_tail(key_offsets, v.header_count * 4, False)
    reserve_tail(value_offsets, v.header_count * 4, False)
    # Headers were validated when the record was parsed; walk them again.
    cursor_init(&c, v.headers, v.headers_end - v.headers, v.error_position, False, strict)
    for i in range(v.header_count):
        read_varint(&c, &klen, "header key length")
        kp = cursor_take(&c, klen, "header key")
        if strict or is_utf8(kp, klen):       # strict: checked by the scanner
            append_reserved(key_data, key_offsets, key_valid, kp, klen, payload_end)
        else:
            append_utf8_replaced(keys, kp, klen)
            reserve_tail(key_data, room, False)   # a replaced key may be longer
        read_varint(&c, &vlen, "header value length")
        vp = cursor_take(&c, vlen, "header value") if vlen >= 0 else NULL
        append_reserved(value_data, value_offsets, value_valid, vp, vlen, payload_end)
    cols.header_rows += v.header_count
    return 0


cdef int append_utf8_replaced(_BinaryColumn col, const uint8_t *p, int32_t n) except -1:
    # A header key that is not UTF-8: Kafka decodes keys leniently (U+FFFD for
    # bad bytes), and Arrow strings must be UTF-8.
    cdef bytes fixed = java_utf8(p, n).encode("utf-8")
    return col.append(<const uint8_t *>PyBytes_AS_STRING(fixed), len(fixed))


cdef set aborted_batch_positions(object data, ReadOptions options, BatchIterator region):
    """Positions of the batches a read_committed consumer would not see in what
    ``region`` has still to read (the rule lives in _transactions.pxi), reported as
    ``region`` reports them.  With verify_crc a marker whose CRC fails decides
    nothing (and the decoding pass reports it)."""
    batches = iter_batches(data, options.replace(strict=False), start=region.position,
                           end=region.origin + region._end, origin=region.origin)
    try:
        return aborted_batches(_until_framing_error(batches),
                               trusted=_crc_ok if options.verify_crc else None)
    except DecodeError:
        return set()


def _crc_ok(RecordBatch b):
    return b.crc_valid


def _until_framing_error(batches):
    # The decoding pass reports errors; this pass just stops at a framing error.
    try:
        yield from batches
    except DecodeError:
        return


@cython.final
cdef class ArrowBatchIterator:
    """The ``pyarrow.RecordBatch`` stream of :func:`iter_arrow`, which, once it
    has ended, says where framing stopped and why, as :class:`BatchIterator`
    does (``position``, ``trailing_bytes``, ``stop_reason``, ``stop_error``):
    with ``errors="skip"`` a framing error ends the data without raising, and
    the caller learns here how many bytes could not be framed."""
    cdef BatchIterator _batches
    cdef object _chunks

    def __init__(self, *args, **kwargs):
        raise TypeError("use kafkarec.iter_arrow()")

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._chunks)

    @property
    def options(self) -> ReadOptions:
        return self._batches.options

    @property
    def origin(self) -> int:
        return self._batches.origin

    @property
    def position(self) -> int:
        return self._batches.position

    @property
    def trailing_bytes(self) -> int:
        return self._batches.trailing_bytes

    @property
    def stop_reason(self):
        return self._batches.stop_reason

    @property
    def stop_error(self):
        return self._batches.stop_error


def iter_arrow(data, /, options=None, *, topic=None, partition=None, bint include_control=False,
               bint batch_columns=False, bint read_committed=False, verify_crc=None,
               strict=None, max_decompressed_bytes=None,
               Py_ssize_t max_rows=65536, Py_ssize_t max_bytes=64 * 1024 * 1024,
               str errors="raise", list error_sink=None, start=None, end=None,
               Py_ssize_t origin=0):
    """Decode ``data`` into a stream of ``pyarrow.RecordBatch`` of at most about
    ``max_rows`` rows / ``max_bytes`` of key+value+header bytes each.

    How bytes are read is a :class:`ReadOptions` (``options``) or its fields
    as keywords, as for :func:`iter_batches`; ``origin`` is the file position of
    ``data[0]`` (``data`` a piece of a file) and ``start``/``end`` bound the
    region read, as there: every position taken or reported (``start``/``end``,
    errors raised or put in ``error_sink``, ``batchPosition``, where framing
    stopped) is ``origin`` plus the offset in ``data``.  Control records are left out
    unless ``include_control``; ``read_committed`` leaves out what a
    read_committed consumer would not see, judged from the markers in ``data``
    (kafkarec.transactions): aborted transactions, and everything from a
    transaction still open at the end (the LSO) on.  ``errors="raise"`` raises
    the first DecodeError; ``errors="skip"`` leaves a bad batch out whole and
    appends a description of it to ``error_sink`` (a framing error ends the
    data, as it leaves no next batch to go to).  The returned
    :class:`ArrowBatchIterator` tells where framing stopped once it has ended.
    """
    cdef ReadOptions opts = resolve_options(options, verify_crc, strict, max_decompressed_bytes, None)
    cdef ArrowBatchIterator out
    if errors not in ("raise", "skip"):
        raise ValueError("errors must be 'raise' or 'skip'")
    if errors == "skip" and error_sink is None:
        raise ValueError("errors='skip' needs an error_sink list, so nothing is dropped silently")
    if max_rows <= 0 or max_bytes <= 0:
        raise ValueError("max_rows and max_bytes must be positive")
    if topic is not None and not isinstance(topic, str):
        raise TypeError(f"topic must be a str or None, not {type(topic).__name__}")
    if partition is not None and not (-2**31 <= partition < 2**31):
        raise ValueError(f"partition {partition} does not fit the int32 partition column")
    out = ArrowBatchIterator.__new__(ArrowBatchIterator)
    out._batches = iter_batches(data, opts, start=start, end=end, origin=origin)
    out._chunks = _arrow_batches(data, out._batches, topic, partition, include_control,
                                 batch_columns, read_committed, max_rows, max_bytes, errors,
                                 error_sink)
    return out


def _arrow_batches(data, BatchIterator batches, topic, partition, bint include_control,
                   bint batch_columns, bint read_committed, Py_ssize_t max_rows,
                   Py_ssize_t max_bytes, str errors, list error_sink):
    cdef _ArrowColumns cols = _ArrowColumns(batch_columns)
    cdef RecordBatch b
    cdef RecordView v
    cdef _RecordIterator rit
    cdef Record r
    cdef Py_ssize_t start_rows
    cdef int ts_type
    cdef bint left_out, crc_after
    cdef set aborted = None
    cdef bint yielded = False
    cdef bint sized = False
    # offsets in data (sizing only; positions reported are batches'/b.position)
    cdef Py_ssize_t data_size = batches._end
    cdef Py_ssize_t chunk_start = batches._offset, consumed
    cdef double expected
    cdef bint verify_crc = batches._verify_crc
    cdef bint strict = batches._strict
    if read_committed:
        aborted = aborted_batch_positions(data, batches.options, batches)
    while True:
        try:
            b = next(batches, None)
        except DecodeError as exc:
            if errors == "raise":
                raise
            error_sink.append(error_dict(exc, None))
            break
        if b is None:
            break
        left_out = (((b.attributes & ATTR_CONTROL) and b.magic >= 2 and not include_control)
                    or (aborted is not None and b.position in aborted))
        # Every batch is checked, as a consumer with check.crcs does, also the
        # ones left out (markers, aborted transactions).  An uncompressed v2
        # batch is checked right after its records are decoded (before they
        # count), when its bytes are in cache; a corrupt batch is reported as
        # corrupt whatever else is wrong with it.
        crc_after = (verify_crc and not left_out and b.magic >= 2 and not batch_columns
                     and (b.attributes & ATTR_CODEC_MASK) == CODEC_NONE)
        if verify_crc and not crc_after and not b.crc_valid:
            try:
                check_crc(b)
            except DecodeError as exc:
                if errors == "raise":
                    raise
                error_sink.append(error_dict(exc, b))
                continue
        if left_out:
            continue
        start_rows = cols.rows
        ts_type = batch_timestamp_type(b)
        try:
            try:
                if b.magic >= 2:
                    rit_obj = v2_record_iterator(b)
                    if isinstance(rit_obj, _RecordIterator):
                        rit = <_RecordIterator>rit_obj
                        add_v2_records_out_of_line(cols, rit, ts_type, b, strict, crc_after)
                    elif crc_after:
                        check_crc(b)
                else:
                    for r in b:
                        cols.add(&r._v, r._timestamp_type, b, strict)
            except DecodeError:
                if crc_after:
                    check_crc(b)
                raise
        except DecodeError as exc:
            cols.truncate(start_rows)
            if errors == "raise":
                raise
            error_sink.append(error_dict(exc, b))
            continue
        if cols.rows >= max_rows or cols.data_bytes() >= max_bytes:
            yield cols.finish(topic, partition)
            yielded = True
            cols = _ArrowColumns(batch_columns)
            chunk_start = batch_offset(b) + b.size_in_bytes
            sized = False
        elif not sized and cols.rows:
            # After the chunk's first batch, size the columns for the whole
            # chunk by extrapolation (how far the input or the chunk limits
            # reach), instead of growing them by doubling.
            sized = True
            consumed = batch_offset(b) + b.size_in_bytes - chunk_start
            expected = (data_size - chunk_start) / <double>max(consumed, 1)
            expected = min(expected, max_rows / <double>cols.rows,
                           max_bytes / <double>max(cols.data_bytes(), 1))
            if expected > 1.5:
                cols.expect(min(expected * 1.05, 1024.0))
    if cols.rows or not yielded:
        yield cols.finish(topic, partition)


def error_record(exc, RecordBatch batch=None, /) -> dict:
    """The description of a DecodeError that ``iter_arrow(errors="skip")`` puts in its
    error sink: ``position``, ``reason``, ``error`` (the class name), ``base_offset``
    (of ``batch``, v2 only, else None), ``batch_position`` and ``batch_size`` (where
    ``batch`` starts and its bytes, for keeping it whole; None for an error of framing,
    which no batch holds) and ``message``."""
    return error_dict(exc, batch)


cdef dict error_dict(object exc, RecordBatch b):
    return {
        "position": exc.position,
        "reason": exc.reason,
        "error": type(exc).__name__,
        "base_offset": b._base_offset if b is not None and b.magic >= 2 else None,
        "batch_position": b.position if b is not None else None,
        "batch_size": b.size_in_bytes if b is not None else None,
        "message": str(exc),
    }


def to_arrow(data, /, options=None, *, topic=None, partition=None, include_control=False,
             batch_columns=False, read_committed=False, verify_crc=None, strict=None,
             max_decompressed_bytes=None, str errors="raise", list error_sink=None,
             start=None, end=None, Py_ssize_t origin=0):
    """Decode every record in ``data`` into one ``pyarrow.Table`` (Spark Kafka source schema).

    ``options`` (a :class:`ReadOptions`, or its fields as keywords), ``origin``
    (the file position of ``data[0]``: positions reported, ``batchPosition`` and
    errors, are file positions), ``start``/``end`` (file positions too),
    ``errors`` and ``error_sink`` work as in ``iter_arrow``: ``errors="skip"``
    leaves a bad batch out whole and appends a description of it to
    ``error_sink``.
    """
    pa = pyarrow()
    batches = list(iter_arrow(data, options, topic=topic, partition=partition,
                              include_control=include_control, batch_columns=batch_columns,
                              read_committed=read_committed, verify_crc=verify_crc, strict=strict,
                              max_decompressed_bytes=max_decompressed_bytes, errors=errors,
                              error_sink=error_sink, start=start, end=end, origin=origin))
    return pa.Table.from_batches(batches, schema=arrow_schema(batch_columns=batch_columns))
