# The row columns of a chunk (the column builder of iter_arrow's schema, _arrow_schema.pxi): one
# _Column (_column.pxi) per column, a record appended by the GIL's path (_ArrowColumns.add: legacy
# records; a v2 batch's records go in by _full_rows.pxi's and _meta_rows.pxi's loops, which write
# into the columns' reserved room), and a chunk finished into a pyarrow.RecordBatch.
#
# Timestamps in another unit than Kafka's milliseconds (iter_arrow's timestamp_unit: DuckDB's
# microseconds) are put in it by each writer as it finishes a batch (batch_timestamps_in_unit),
# while the batch's values are in cache: no Arrow cast runs over the column afterwards.  A batch
# with a value the unit cannot hold (Arrow's safe cast's range, ts_unit.h) leaves the rest of its
# chunk in milliseconds, and the chunk is finished so (the batches before it put back): the
# caller's Arrow cast then raises Arrow's own error, as it did before the core wrote the unit.

cdef extern from "ts_unit.h":
    int kr_timestamps_in_unit(int64_t *timestamps, Py_ssize_t n, int64_t scale) nogil

# _ArrowColumns.ts_ms_from when every row is in the chunk's unit
cdef Py_ssize_t TS_ALL_IN_UNIT = PY_SSIZE_T_MAX


cdef inline void batch_timestamps_in_unit(int64_t *tss, Py_ssize_t n, Py_ssize_t first_row, int64_t scale,
                                          Py_ssize_t *ms_from) noexcept nogil:
    """The timestamps of a batch's rows (`n` from row `first_row`, at tss) in the chunk's unit,
    unless the chunk has a row left in milliseconds already; a value out of range leaves them, and
    the chunk's rows from first_row on, in milliseconds (*ms_from)."""
    if scale == 1 or ms_from[0] != TS_ALL_IN_UNIT or n == 0:
        return
    if not kr_timestamps_in_unit(tss, n, scale):
        ms_from[0] = first_row

cdef inline void batch_timestamp_types(int32_t *tts, Py_ssize_t n, int32_t ts_type, bint wanted) noexcept nogil:
    """The timestampType of a batch's `n` rows (the batch's, the same for each), written once the
    rows are; not at all for a read that does not want it (_ArrowColumns.want_timestamp_type)."""
    cdef Py_ssize_t i
    if wanted:
        for i in range(n):
            tts[i] = ts_type


@cython.final
cdef class _ArrowColumns:
    cdef Py_ssize_t rows
    cdef bint batch_columns
    cdef bint lean                  # key, value and headers are not built
    cdef _Column key, value, offset, timestamp, timestamp_type
    cdef _Column headers                                # list<struct<key, value>>
    cdef _Column header_entries, header_key, header_value   # its struct and the struct's fields
    # batch-level columns
    cdef _Column producer_id, producer_epoch, sequence, is_transactional, is_control, compression
    cdef _Column batch_position, batch_base_offset, partition_leader_epoch, magic
    cdef _Column batch_size, delete_horizon_ms       # the batch's bytes; the cleaner's horizon or null
    cdef _KeySet keys               # the keys kept (None: every record)
    cdef str ts_unit                # the timestamps' unit (a key of _TIMESTAMP_SCALES)
    cdef int64_t ts_scale           # how many of it a millisecond holds
    cdef Py_ssize_t ts_ms_from      # the first row left in milliseconds (TS_ALL_IN_UNIT: none)
    # whether the full decode's loop copies each record's key, value and headers: a projection
    # without one of them leaves that column empty (rows of b"" or null), dropped by finish.  A
    # full decode's projection without the timestamp, timestampType or headers leaves their
    # per-row values unwritten too (timestamps, the batch's timestamp type, the headers' list
    # offsets): finish never builds them, and a whole-rows read in DuckDB, which asks for key and
    # value alone, wrote 16 bytes a row for nothing (issue 80)
    cdef bint want_key, want_value, want_headers, want_timestamp, want_timestamp_type
    # the view layout (_views.pxi): key and value as binary_view, a long one of an uncompressed
    # batch a view into `sources` (variadic buffer 1: the window read, `window`, added when a row
    # first points into it), any other (a compressed batch's, decompressed into the one scratch
    # buffer; a legacy record's) copied into key_copied and value_copied (buffer 0); key_bytes and
    # value_bytes count the bytes referred to.  Without a window (copies: the bytes are a memory
    # map, which may shrink under a batch an engine holds) every long key and value is copied
    cdef bint views
    cdef bint copies
    cdef object window
    cdef int32_t window_index
    cdef list sources
    cdef _ArrowGrowable key_copied, value_copied
    cdef Py_ssize_t key_bytes, value_bytes

    def __cinit__(self, bint batch_columns, bint lean=False, _KeySet keys=None, object projection=None,
                  str ts_unit="ms", object window=None, SpareBuffers spare=None, bint views=False):
        pa = pyarrow()
        # (lean: no key or value column to lay out)
        self.views = views and not lean
        self.copies = self.views and window is None
        if self.views:
            self.window = window
            self.window_index = -1
            self.sources = []
            self.key_copied = _ArrowGrowable()
            self.value_copied = _ArrowGrowable()
        self.keys = keys
        self.ts_unit = ts_unit
        self.want_timestamp = projection is None or "timestamp" in projection
        # (timestamps no read wants are not put in the unit: nothing to convert)
        self.ts_scale = _TIMESTAMP_SCALES[ts_unit] if self.want_timestamp else 1
        self.ts_ms_from = TS_ALL_IN_UNIT
        self.want_key = projection is None or "key" in projection
        self.want_value = projection is None or "value" in projection
        self.want_headers = projection is None or "headers" in projection
        self.want_timestamp_type = projection is None or "timestampType" in projection
        header_type = arrow_schema().field("headers").type
        self.batch_columns = batch_columns
        self.lean = lean
        self.key = new_column(CK_BIN, pa.binary(), True)
        self.value = new_column(CK_BIN, pa.binary(), True)
        self.offset = new_column(CK_I64, pa.int64(), False)
        self.timestamp = new_column(CK_I64, pa.timestamp(ts_unit), False)
        self.timestamp_type = new_column(CK_I32, pa.int32(), False)
        self.header_key = new_column(CK_BIN, pa.string(), False)
        self.header_value = new_column(CK_BIN, pa.binary(), True)
        self.header_entries = new_column(CK_STRUCT, header_type.value_type, False,
                                         [self.header_key, self.header_value])
        self.headers = new_column(CK_LIST, header_type, True, [self.header_entries])
        if batch_columns:
            self.producer_id = new_column(CK_I64, pa.int64(), False)
            self.producer_epoch = new_column(CK_I16, pa.int16(), False)
            self.sequence = new_column(CK_I32, pa.int32(), False)
            self.is_transactional = new_column(CK_BOOL, pa.bool_(), False)
            self.is_control = new_column(CK_BOOL, pa.bool_(), False)
            self.compression = new_column(CK_I8, pa.int8(), False)
            self.batch_position = new_column(CK_I64, pa.int64(), False)
            self.batch_base_offset = new_column(CK_I64, pa.int64(), False)
            self.partition_leader_epoch = new_column(CK_I32, pa.int32(), False)
            self.magic = new_column(CK_I8, pa.int8(), False)
            self.batch_size = new_column(CK_I32, pa.int32(), False)
            self.delete_horizon_ms = new_column(CK_I64, pa.int64(), True)
        if spare is not None:
            for col in self.columns() + [self.header_entries, self.header_key, self.header_value]:
                col_take_spare(col, spare)
            if self.views:
                self.key_copied.spare = spare
                self.value_copied.spare = spare

    cdef list columns(self):
        """The columns built, in the schema's order (without topic and partition)."""
        cdef list out
        if self.lean:
            out = [self.offset, self.timestamp, self.timestamp_type]
        else:
            out = [self.key, self.value, self.offset, self.timestamp, self.timestamp_type,
                   self.headers]
        if self.batch_columns:
            out += [self.producer_id, self.producer_epoch, self.sequence, self.is_transactional,
                    self.is_control, self.compression, self.batch_position, self.batch_base_offset,
                    self.partition_leader_epoch, self.magic, self.batch_size, self.delete_horizon_ms]
        return out

    cdef int add(self, RecordView *v, int timestamp_type, RecordBatch b, bint strict) except -1:
        cdef int64_t ts = v.timestamp
        if self.keys is not None and not self.keys.has(v.key, v.key_len):
            return 0
        if self.views:
            view_put_copy(self.key, self.key_copied, &self.key_bytes, v.key, v.key_len)
            view_put_copy(self.value, self.value_copied, &self.value_bytes, v.value, v.value_len)
        elif not self.lean:
            # a null key or value has no pointer: no arithmetic on it (undefined in C even by 0)
            col_put_bin(self.key, v.key, v.key_len, (v.key + v.key_len) if v.key_len > 0 else v.key)
            col_put_bin(self.value, v.value, v.value_len,
                        (v.value + v.value_len) if v.value_len > 0 else v.value)
        col_put_int(self.offset, v.offset)
        batch_timestamps_in_unit(&ts, 1, self.rows, self.ts_scale, &self.ts_ms_from)
        col_put_int(self.timestamp, ts)
        col_put_int(self.timestamp_type, timestamp_type)
        if self.lean:
            pass
        elif v.header_count:
            add_headers(self, v, strict, v.headers_end)
            col_close_list(self.headers)
        else:
            col_null(self.headers)      # Spark's Kafka source gives null, not []
        if self.batch_columns:
            col_put_int(self.producer_id, b.producer_id)
            col_put_int(self.producer_epoch, b.producer_epoch)
            col_put_int(self.sequence, v.sequence)
            col_put_bool(self.is_transactional, b.is_transactional)
            col_put_bool(self.is_control, b.is_control)
            col_put_int(self.compression, b.attributes & ATTR_CODEC_MASK)
            col_put_int(self.batch_position, b.position)
            col_put_int(self.batch_base_offset, b._base_offset)
            col_put_int(self.partition_leader_epoch, b.partition_leader_epoch)
            col_put_int(self.magic, b.magic)
            col_put_int(self.batch_size, b.size_in_bytes)
            if b.magic >= 2 and (b.attributes & ATTR_DELETE_HORIZON):
                col_put_int(self.delete_horizon_ms, b.base_timestamp)
            else:
                col_null(self.delete_horizon_ms)
        self.rows += 1
        return 0

    cdef int truncate(self, Py_ssize_t rows) except -1:
        """Drop rows past `rows` (a batch that failed half way is all-or-nothing;
        its header entries may be there although its rows were not committed)."""
        cdef _Column col
        for col in self.columns():
            if self.views and (col is self.key or col is self.value):
                continue
            if col is self.headers and not self.want_headers:
                continue        # its list offsets were never written: nothing in them to read
            col_truncate(col, rows)
        if self.views:      # (a null's view is zeros: length 0)
            view_truncate(self.key, rows, &self.key_bytes)
            view_truncate(self.value, rows, &self.value_bytes)
        self.rows = rows
        if self.ts_ms_from >= rows:     # (the rows left in milliseconds are gone)
            self.ts_ms_from = TS_ALL_IN_UNIT
        return 0

    cdef int expect(self, double scale) except -1:
        """After a chunk's first batch: grow every column to `scale` times its
        size now, plus that size again (room for one more batch like the
        first, as a chunk ends past its limits), in one step.  A column of N
        bytes grown by doubling would copy about N bytes more."""
        cdef _Growable g
        for g in (self.key.offsets, self.key.values, self.key.valid,
                  self.value.offsets, self.value.values, self.value.valid,
                  self.offset.values, self.timestamp.values, self.timestamp_type.values,
                  self.headers.offsets, self.headers.valid):
            g.reserve(<Py_ssize_t>(g.size * scale) + 64)
        if self.copies:
            for g in (self.key_copied, self.value_copied):
                g.reserve(<Py_ssize_t>(g.size * scale) + 64)
        return 0

    cdef Py_ssize_t data_bytes(self) noexcept:
        if self.views:
            return (self.key_bytes + self.value_bytes + self.header_key.values.size
                    + self.header_value.values.size)
        return (self.key.values.size + self.value.values.size + self.header_key.values.size
                + self.header_value.values.size)

    cdef int32_t window_source(self) except -1:
        """The variadic buffer index of the window (added when a row first points into it)."""
        if self.window_index < 0:
            self.sources.append(self.window)
            self.window_index = len(self.sources)
        return self.window_index

    cdef object finish(self, object topic, object partition, list projection=None):
        """The chunk as a RecordBatch: every column of the schema, or those of ``projection``."""
        pa = pyarrow()
        cdef Py_ssize_t n = self.rows
        cdef str unit = self.ts_unit
        cdef int64_t *tss
        cdef Py_ssize_t i
        if self.ts_ms_from < n:
            # a row out of the unit's range: the chunk in milliseconds, the rows before it put back
            tss = <int64_t *>self.timestamp.values.data
            for i in range(self.ts_ms_from):
                tss[i] = tss[i] // self.ts_scale
            unit = "ms"
            self.timestamp.arrow_type = pa.timestamp(unit)      # (the chunk's last use of it)
        schema = arrow_schema(batch_columns=self.batch_columns, timestamp_unit=unit,
                              value_layout="view" if self.views else "copy")
        # only the columns asked for finished (all of them without a projection): the others'
        # arrays (topic and partition filled, the headers' list, a lean read's zeroed buffers) cost
        # a whole-rows read in DuckDB, which asks for key and value alone, about 2% of its CPU
        # (issue 80); no column at all ([]): the rows alone, as one column with none selected
        names = schema.names if projection is None else projection or ["offset"]
        rb = pa.RecordBatch.from_arrays([self.column_named(name, n, topic, partition) for name in names],
                                        schema=schema if projection is None
                                        else pa.schema([schema.field(name) for name in names]))
        return rb.select([]) if projection == [] else rb

    cdef object column_named(self, str name, Py_ssize_t n, object topic, object partition):
        """One finished column of the chunk, by its name in the schema."""
        pa = pyarrow()
        if name == "topic":
            return pa.nulls(n, pa.string()) if topic is None else constant_string_column(topic, n)
        if name == "partition":
            return pa.nulls(n, pa.int32()) if partition is None else constant_int32_column(partition, n)
        if name == "key":
            return view_finish(self.key, self.key_copied, self.sources) if self.views else col_finish(self.key)
        if name == "value":
            return view_finish(self.value, self.value_copied, self.sources) if self.views else col_finish(self.value)
        if name == "offset":
            return col_finish(self.offset)
        if name == "timestamp":
            return col_finish(self.timestamp)
        if name == "timestampType":
            return col_finish(self.timestamp_type)
        if name == "headers":
            return col_finish(self.headers)
        # a batch column (the wide layout): the columns' last ones, in the schema's order
        names = arrow_schema(batch_columns=True).names
        column = col_finish(self.columns()[names.index(name) - len(names)])
        return pa.array(_CODEC_NAMES, pa.string()).take(column) if name == "compression" else column


cdef inline void commit_rows(_ArrowColumns cols, Py_ssize_t rows) noexcept:
    """`rows` rows that a record loop wrote into the room after cols.rows counted in the per-row
    columns every layout has (offset, timestamp, timestampType) and in cols: the last step of a
    batch's full rows, its meta rows and a run's batches (each commits its other columns first)."""
    col_commit(cols.offset, rows, 0)
    col_commit(cols.timestamp, rows, 0)
    col_commit(cols.timestamp_type, rows, 0)
    cols.rows += rows


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


cdef int add_headers(_ArrowColumns cols, RecordView *v, bint strict,
                     const uint8_t *payload_end) except -1:
    cdef Cursor c
    cdef int32_t i, klen, vlen
    cdef const uint8_t *kp
    cdef const uint8_t *vp
    cdef _Column keys = cols.header_key, values = cols.header_value, entries = cols.header_entries
    # A record's header keys and values together are shorter than its header section.
    cdef Py_ssize_t room = v.headers_end - v.headers + KAFKAREC_COPY_SLACK
    if keys.values.size + room > INT32_LIMIT or values.values.size + room > INT32_LIMIT:
        raise ColumnOverflowError("header column over 2 GiB")
    # Headers were validated when the record was parsed; walk them again.
    cursor_init(&c, v.headers, v.headers_end - v.headers, v.error_position, False, strict)
    for i in range(v.header_count):
        read_varint(&c, &klen, "header key length")
        kp = cursor_take(&c, klen, "header key")
        if strict or is_utf8(kp, klen):       # strict: checked by the scanner
            col_put_bin(keys, kp, klen, payload_end)
        else:
            append_utf8_replaced(keys, kp, klen)
        read_varint(&c, &vlen, "header value length")
        vp = cursor_take(&c, vlen, "header value") if vlen >= 0 else NULL
        col_put_bin(values, vp, vlen, payload_end)
        col_ok(entries)
    return 0


cdef int append_utf8_replaced(_Column col, const uint8_t *p, int32_t n) except -1:
    # A header key that is not UTF-8: Kafka decodes keys leniently (U+FFFD for
    # bad bytes), and Arrow strings must be UTF-8.
    return col_put_bytes(col, java_utf8(p, n).encode("utf-8"))
