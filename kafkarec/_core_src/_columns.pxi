# Columnar output: records decoded straight into Arrow buffers (no Python
# object per record), in the schema of Spark's Kafka source:
#   key binary, value binary, topic string, partition int32, offset int64,
#   timestamp timestamp[ms], timestampType int32,
#   headers list<struct<key string, value binary>> (null when a record has none)
# plus opt-in batch-level columns, each built by the one column builder
# (_column.pxi).  pyarrow is imported on first use.
#
# Projection (iter_arrow's ``columns``): a read that asks for none of key, value and headers
# builds none of them ("lean" columns: v2 records are walked for their offsets and timestamps by
# their lengths and deltas alone, their bytes not copied; add_v2_meta over walk_v2_meta, which
# leaves any record it does not accept to the scanner); other projections build the full row and leave out what
# was not asked for when a chunk is finished.  A compressed batch is decompressed either way:
# its records' offset and timestamp deltas are inside the compressed records.
#
# Keys (iter_arrow's ``keys``, the readers' key pushdown): a record whose key is not one of the
# set is scanned (its offset still checked) and never copied, so other keys' values, headers
# and rows are never built; a null key is in no set.

from libc.string cimport memcmp
from cpython.mem cimport PyMem_Malloc, PyMem_Free


cdef dict _schemas = {}
# the columns a lean read does not build
cdef frozenset _RECORD_BYTES_COLUMNS = frozenset({"key", "value", "headers"})


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
            pa.field("batchSize", pa.int32()), pa.field("deleteHorizonMs", pa.int64()),
        ]
    schema = _schemas[bool(batch_columns)] = pa.schema(fields)
    return schema


#: up to this many keys are compared one by one; more are looked up in a set
cdef Py_ssize_t _KEYS_COMPARED = 16


def checked_keys(keys, str where="iter_arrow"):
    """``keys`` as a frozenset of bytes (a bytearray or memoryview copied): the one rule for a set
    of keys a read keeps (``iter_arrow(keys=...)``, :class:`kafkarec.scan.Bounds`); one key
    given bare, a key that is not bytes, or no iterable at all is a UsageError naming ``where``."""
    if isinstance(keys, (bytes, bytearray, str)):
        raise UsageError(f"{where}: keys is a set of keys, not one {type(keys).__name__}")
    try:
        items = iter(keys)
    except TypeError:
        raise UsageError(f"{where}: keys is a set of keys, not {type(keys).__name__}") from None
    out = []
    for k in items:
        if not isinstance(k, (bytes, bytearray, memoryview)):
            raise UsageError(f"{where}: a key is bytes, not {type(k).__name__} ({k!r})")
        out.append(bytes(k))
    return frozenset(out)


cdef struct KeyTable:
    # The keys of a _KeySet as C sees them, so that a record's key is tested without the GIL: the
    # keys sorted as Python sorts bytes (memcmp over the shorter length, then the shorter first),
    # their bytes the _KeySet's own bytes objects' (alive as long as it is).
    Py_ssize_t n
    uint64_t lengths            # a bit per key length (mod 64)
    const uint8_t **data
    int32_t *size


cdef inline int key_order(const uint8_t *a, int32_t an, const uint8_t *b, int32_t bn) noexcept nogil:
    cdef int c = memcmp(a, b, an if an < bn else bn) if an and bn else 0
    if c:
        return c
    return (an > bn) - (an < bn)


cdef bint key_table_has(const KeyTable *t, const uint8_t *p, int32_t n) noexcept nogil:
    """Whether the n bytes at p are one of t's keys: a bit per key length rejects most other
    keys before any byte is compared; a few keys are compared one by one, more by bisection."""
    cdef Py_ssize_t lo = 0, hi = t.n, mid
    cdef int c
    if n < 0 or not ((t.lengths >> (n & 63)) & 1):
        return False
    if t.n <= _KEYS_COMPARED:
        for mid in range(t.n):
            if t.size[mid] == n and (n == 0 or memcmp(t.data[mid], p, n) == 0):
                return True
        return False
    while lo < hi:
        mid = (lo + hi) >> 1
        c = key_order(t.data[mid], t.size[mid], p, n)
        if c == 0:
            return True
        if c < 0:
            lo = mid + 1
        else:
            hi = mid
    return False


@cython.final
cdef class _KeySet:
    """The keys a read keeps: whether a record's key bytes are one of them (``table``, tested
    without the GIL by the record loops)."""
    cdef tuple keys                 # bytes, sorted: the table's bytes
    cdef KeyTable table

    def __cinit__(self, keys):
        cdef bytes k
        cdef Py_ssize_t i
        self.keys = tuple(sorted(checked_keys(keys)))
        self.table.n = len(self.keys)
        self.table.lengths = 0
        self.table.data = <const uint8_t **>PyMem_Malloc(max(self.table.n, 1) * sizeof(uint8_t *))
        self.table.size = <int32_t *>PyMem_Malloc(max(self.table.n, 1) * sizeof(int32_t))
        if self.table.data == NULL or self.table.size == NULL:
            raise MemoryError()
        for i, k in enumerate(self.keys):
            if len(k) > INT32_MAX:
                raise UsageError("a key of the keys bound is over 2 GiB")
            self.table.data[i] = <const uint8_t *><const char *>k
            self.table.size[i] = <int32_t>len(k)
            self.table.lengths |= (<uint64_t>1) << (len(k) & 63)

    def __dealloc__(self):
        PyMem_Free(self.table.data)
        PyMem_Free(self.table.size)

    cdef inline bint has(self, const uint8_t *p, int32_t n) noexcept:
        return key_table_has(&self.table, p, n)


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
    # whether the full decode's loop copies each record's key, value and headers: a projection
    # without one of them leaves that column empty (rows of b"" or null), dropped by finish
    cdef bint want_key, want_value, want_headers

    def __cinit__(self, bint batch_columns, bint lean=False, _KeySet keys=None, object projection=None):
        pa = pyarrow()
        self.keys = keys
        self.want_key = projection is None or "key" in projection
        self.want_value = projection is None or "value" in projection
        self.want_headers = projection is None or "headers" in projection
        header_type = arrow_schema().field("headers").type
        self.batch_columns = batch_columns
        self.lean = lean
        self.key = new_column(CK_BIN, pa.binary(), True)
        self.value = new_column(CK_BIN, pa.binary(), True)
        self.offset = new_column(CK_I64, pa.int64(), False)
        self.timestamp = new_column(CK_I64, pa.timestamp("ms"), False)
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
        if self.keys is not None and not self.keys.has(v.key, v.key_len):
            return 0
        if not self.lean:
            # a null key or value has no pointer: no arithmetic on it (undefined in C even by 0)
            col_put_bin(self.key, v.key, v.key_len, (v.key + v.key_len) if v.key_len > 0 else v.key)
            col_put_bin(self.value, v.value, v.value_len,
                        (v.value + v.value_len) if v.value_len > 0 else v.value)
        col_put_int(self.offset, v.offset)
        col_put_int(self.timestamp, v.timestamp)
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
            col_truncate(col, rows)
        self.rows = rows
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
        return 0

    cdef Py_ssize_t data_bytes(self) noexcept:
        return (self.key.values.size + self.value.values.size + self.header_key.values.size
                + self.header_value.values.size)

    cdef object finish(self, object topic, object partition, list projection=None):
        """The chunk as a RecordBatch: every column of the schema, or those of ``projection``."""
        pa = pyarrow()
        cdef Py_ssize_t n = self.rows
        cdef list columns
        cdef int at = 0 if self.lean else 2        # where topic and partition go
        schema = arrow_schema(batch_columns=self.batch_columns)
        if self.lean and projection:        # ([]: the rows alone, counted by the select below)
            # only the projected columns: the others' arrays (topic and partition nulls, zeroed
            # buffers) cost as much as a projection's whole walk of offsets and timestamps
            return pa.RecordBatch.from_arrays(
                [self.lean_column(name, n, topic, partition) for name in projection],
                schema=pa.schema([schema.field(name) for name in projection]))
        columns = [col_finish(col) for col in self.columns()]
        columns[at:at] = [pa.nulls(n, pa.string()) if topic is None else constant_string_column(topic, n),
                          pa.nulls(n, pa.int32()) if partition is None else constant_int32_column(partition, n)]
        if self.batch_columns:
            columns[at + 11] = pa.array(_CODEC_NAMES, pa.string()).take(columns[at + 11])
        if self.lean:
            schema = pa.schema([f for f in schema if f.name not in _RECORD_BYTES_COLUMNS])
        rb = pa.RecordBatch.from_arrays(columns, schema=schema)
        return rb if projection is None else rb.select(projection)

    cdef object lean_column(self, str name, Py_ssize_t n, object topic, object partition):
        """One column of a lean chunk, by its name in the schema."""
        pa = pyarrow()
        if name == "topic":
            return pa.nulls(n, pa.string()) if topic is None else constant_string_column(topic, n)
        if name == "partition":
            return pa.nulls(n, pa.int32()) if partition is None else constant_int32_column(partition, n)
        if name == "offset":
            return col_finish(self.offset)
        if name == "timestamp":
            return col_finish(self.timestamp)
        return col_finish(self.timestamp_type)


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


# What the full decode's record loop (full_rows) stops for.
cdef enum:
    ROWS_DONE = 0       # the batch's records read (or the rows reserved for it used up)
    ROWS_FAULT = 1      # a record the scanner refuses (described in it._fault)
    ROWS_SLOW = 2       # a record left to the GIL's path (full_row_gil), not moved past: a column
                        # needs more room, or a header key is not UTF-8 (Java's replacement is a str)


cdef struct FullRows:
    # One v2 batch's records going into the full row's columns (add_v2_records): where the loop
    # is and the raw room reserved in each column, so that the loop (full_rows) touches no Python
    # object and runs without the GIL.  The rows are committed when the batch is complete; the
    # header columns' entries are appended as they come (headers_out writes their sizes back).
    const uint8_t *pos
    const uint8_t *end
    Py_ssize_t row
    Py_ssize_t end_row
    int32_t ts_type
    bint strict
    bint want_key           # (_ArrowColumns'): a column not wanted is left empty
    bint want_value
    bint want_headers
    const KeyTable *keys    # a key bound's keys (NULL: every record): others are read, not written
    int32_t *ko
    int32_t *vo
    int64_t *offs
    int64_t *tss
    int32_t *tts
    int32_t *hoff
    uint8_t *kvalid
    uint8_t *vvalid
    uint8_t *hvalid
    uint8_t *kdata
    uint8_t *vdata
    Py_ssize_t kpos
    Py_ssize_t kcap
    Py_ssize_t vpos
    Py_ssize_t vcap
    Py_ssize_t key_nulls
    Py_ssize_t value_nulls
    Py_ssize_t with_headers
    # the header columns: header_key (string, never null) and header_value (binary, nullable),
    # one entry each per header, and their struct (header_entries), as long as both
    Py_ssize_t entries
    uint8_t *hk_data
    Py_ssize_t hk_size
    Py_ssize_t hk_cap
    uint8_t *hk_offs
    Py_ssize_t hk_offs_size
    Py_ssize_t hk_offs_cap
    uint8_t *hv_data
    Py_ssize_t hv_size
    Py_ssize_t hv_cap
    uint8_t *hv_offs
    Py_ssize_t hv_offs_size
    Py_ssize_t hv_offs_cap
    uint8_t *hv_valid
    Py_ssize_t hv_valid_cap
    Py_ssize_t hv_nulls


cdef inline void headers_in(_ArrowColumns cols, FullRows *st) noexcept:
    """The header columns' room as they are now, into st."""
    cdef _Column hk = cols.header_key, hv = cols.header_value
    st.entries = cols.header_entries.length
    st.hk_data = hk.values.data
    st.hk_size = hk.values.size
    st.hk_cap = hk.values.capacity
    st.hk_offs = hk.offsets.data
    st.hk_offs_size = hk.offsets.size
    st.hk_offs_cap = hk.offsets.capacity
    st.hv_data = hv.values.data
    st.hv_size = hv.values.size
    st.hv_cap = hv.values.capacity
    st.hv_offs = hv.offsets.data
    st.hv_offs_size = hv.offsets.size
    st.hv_offs_cap = hv.offsets.capacity
    st.hv_valid = hv.valid.data
    st.hv_valid_cap = hv.valid.capacity
    st.hv_nulls = hv.nulls


cdef inline void headers_out(_ArrowColumns cols, FullRows *st) noexcept:
    """The header entries full_rows appended, counted in the header columns."""
    cdef _Column hk = cols.header_key, hv = cols.header_value
    hk.values.size = st.hk_size
    hk.offsets.size = st.hk_offs_size
    hk.length = st.entries
    hv.values.size = st.hv_size
    hv.offsets.size = st.hv_offs_size
    hv.valid.size = (st.entries + 7) >> 3
    hv.nulls = st.hv_nulls
    hv.length = st.entries
    cols.header_entries.length = st.entries


cdef inline always_inline_int put_headers(FullRows *st, RecordView *v) noexcept nogil:
    """A record's headers appended to the header columns as add_headers appends them; 0, or
    ROWS_SLOW with nothing appended: a column lacks room (or would pass 2 GiB), or a header key is
    not UTF-8 outside strict reads (Java's replacement builds a str: the GIL's path does it).
    The scanner has read every varint and length of the headers, but the bytes may be a map of
    a file another process writes, read again without the GIL: every length is checked once
    more, and anything other than what the scanner saw goes to the GIL's path, whose checked
    cursor raises (nothing is read or written past the record or the room)."""

    cdef Py_ssize_t room = v.headers_end - v.headers     # keys and values together are shorter
    cdef Py_ssize_t n = v.header_count, e
    cdef const uint8_t *p = v.headers
    cdef const uint8_t *kp
    cdef int32_t i, klen, vlen, at
    cdef Py_ssize_t hk_size = st.hk_size, hk_offs_size = st.hk_offs_size
    cdef Py_ssize_t hv_size = st.hv_size, hv_offs_size = st.hv_offs_size, hv_nulls = st.hv_nulls
    if (hk_size + room + KAFKAREC_COPY_SLACK > st.hk_cap or hv_size + room + KAFKAREC_COPY_SLACK > st.hv_cap
            or hk_offs_size + 4 * n > st.hk_offs_cap or hv_offs_size + 4 * n > st.hv_offs_cap
            or ((st.entries + n + 7) >> 3) + 1 > st.hv_valid_cap
            or hk_size + room + KAFKAREC_COPY_SLACK > INT32_LIMIT
            or hv_size + room + KAFKAREC_COPY_SLACK > INT32_LIMIT):
        return ROWS_SLOW
    e = st.entries
    for i in range(n):
        if take_varint(&p, v.headers_end, False, &klen) != VARINT_OK or klen < 0 or klen > v.headers_end - p:
            return ROWS_SLOW
        kp = p
        p += klen
        if not st.strict and not is_utf8(kp, klen):     # (strict: the scanner refused it)
            return ROWS_SLOW        # nothing counted yet: st's sizes are as they were
        kafkarec_copy_short(st.hk_data + hk_size, kp, klen, st.end)
        hk_size += klen
        at = <int32_t>hk_size
        memcpy(st.hk_offs + hk_offs_size, &at, 4)
        hk_offs_size += 4
        if (take_varint(&p, v.headers_end, False, &vlen) != VARINT_OK
                or (vlen >= 0 and vlen > v.headers_end - p)):
            return ROWS_SLOW
        if (e & 7) == 0:
            st.hv_valid[e >> 3] = 0
        if vlen >= 0:
            kafkarec_copy_short(st.hv_data + hv_size, p, vlen, st.end)
            p += vlen
            hv_size += vlen
            st.hv_valid[e >> 3] |= <uint8_t>(1 << (e & 7))
        else:
            # cleared, not left as found: a batch of a run that failed after its headers were
            # written is put back (take_run) without cutting this bitmap, so the bit may be set
            st.hv_valid[e >> 3] &= <uint8_t>~(1 << (e & 7))
            hv_nulls += 1
        at = <int32_t>hv_size
        memcpy(st.hv_offs + hv_offs_size, &at, 4)
        hv_offs_size += 4
        e += 1
    st.entries = e
    st.hk_size = hk_size
    st.hk_offs_size = hk_offs_size
    st.hv_size = hv_size
    st.hv_offs_size = hv_offs_size
    st.hv_nulls = hv_nulls
    return 0


cdef int full_rows(_RecordIterator it, FullRows *st) noexcept nogil:
    """The records of st's batch into the full row's columns, through raw pointers into the room
    reserved for them, until the batch's records are read (ROWS_DONE), a record is refused
    (ROWS_FAULT) or one is left to the GIL's path (ROWS_SLOW, not moved past).  No Python object
    is touched: a reader decoding windows on several threads decodes them at once.  A key bound
    takes a loop of its own (full_rows_keyed), so the common one tests nothing for it."""
    if st.keys != NULL:
        return full_rows_keyed(it, st)
    return full_rows_loop(it, st, False)


cdef int full_rows_keyed(_RecordIterator it, FullRows *st) noexcept nogil:
    return full_rows_loop(it, st, True)


cdef inline always_inline_int full_rows_loop(_RecordIterator it, FullRows *st, bint keyed) noexcept nogil:
    cdef RecordView v
    cdef const uint8_t *pos = st.pos
    cdef const uint8_t *end = st.end
    cdef const uint8_t *start
    cdef int32_t remaining
    cdef int64_t prev_delta
    cdef int status = ROWS_DONE
    cdef Py_ssize_t row = st.row, end_row = st.end_row
    cdef Py_ssize_t kpos = st.kpos, vpos = st.vpos, kcap = st.kcap, vcap = st.vcap
    cdef uint8_t *kdata = st.kdata
    cdef uint8_t *vdata = st.vdata
    cdef int32_t *ko = st.ko
    cdef int32_t *vo = st.vo
    cdef int64_t *offs = st.offs
    cdef int64_t *tss = st.tss
    cdef int32_t *tts = st.tts
    cdef int32_t *hoff = st.hoff
    cdef int32_t ts_type = st.ts_type
    cdef bint want_key = st.want_key, want_value = st.want_value, want_headers = st.want_headers
    while it._remaining > 0 and row < end_row:
        start = pos
        remaining = it._remaining
        prev_delta = it._prev_offset_delta
        if unlikely(scan_v2_record(it, &v, &pos, end) != 0):
            status = ROWS_FAULT
            break
        if keyed and not key_table_has(st.keys, v.key, v.key_len):
            continue                    # read (and checked), not kept: no row
        if not want_key:                # an empty key: nothing copied (the column is dropped)
            v.key = start
            v.key_len = 0
        if not want_value:
            v.value = start
            v.value_len = 0
        if not want_headers:
            v.header_count = 0
        if unlikely((v.key_len >= 0 and kpos + v.key_len + KAFKAREC_COPY_SLACK > kcap)
                    or (v.value_len >= 0 and vpos + v.value_len + KAFKAREC_COPY_SLACK > vcap)
                    or (v.header_count != 0 and put_headers(st, &v) != 0)):
            # (the headers are put last of these tests: when they are put the row is written)
            pos = start                     # the record again, by the GIL's path
            it._remaining = remaining
            it._prev_offset_delta = prev_delta
            status = ROWS_SLOW
            break
        if likely(v.key_len >= 0):
            kafkarec_copy_short(kdata + kpos, v.key, v.key_len, end)
            kpos += v.key_len
        else:
            st.kvalid[row >> 3] &= <uint8_t>~(1 << (row & 7))
            st.key_nulls += 1
        if likely(v.value_len >= 0):
            kafkarec_copy_short(vdata + vpos, v.value, v.value_len, end)
            vpos += v.value_len
        else:
            st.vvalid[row >> 3] &= <uint8_t>~(1 << (row & 7))
            st.value_nulls += 1
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
            st.hvalid[row >> 3] |= <uint8_t>(1 << (row & 7))
            st.with_headers += 1
        hoff[0] = <int32_t>st.entries
        hoff += 1
        row += 1
    st.pos = pos
    st.row = row
    st.kpos = kpos
    st.vpos = vpos
    st.ko = ko
    st.vo = vo
    st.offs = offs
    st.tss = tss
    st.tts = tts
    st.hoff = hoff
    return status


cdef int full_row_gil(_ArrowColumns cols, _RecordIterator it, FullRows *st) except -1:
    """The batch's next record by the GIL's path: its fault raised, a key bound's test, columns
    grown, a header key replaced as Java decodes it (add_headers); then st as full_rows leaves it."""
    cdef RecordView v
    cdef _Column key = cols.key, value = cols.value
    cdef Py_ssize_t row = st.row
    parse_v2_record_at(it, &v, &st.pos, st.end)
    if cols.keys is not None and not cols.keys.has(v.key, v.key_len):
        return 0
    if not st.want_key:
        v.key = st.pos
        v.key_len = 0
    if not st.want_value:
        v.value = st.pos
        v.value_len = 0
    if not st.want_headers:
        v.header_count = 0
    if v.key_len >= 0:
        if st.kpos + v.key_len + KAFKAREC_COPY_SLACK > st.kcap:
            # (rows are committed per batch: reserve counts from kpos)
            key.values.reserve(st.kpos - key.values.size + v.key_len + KAFKAREC_COPY_SLACK)
            st.kdata = key.values.data
            st.kcap = key.values.capacity
        kafkarec_copy_short(st.kdata + st.kpos, v.key, v.key_len, st.end)
        st.kpos += v.key_len
    else:
        st.kvalid[row >> 3] &= <uint8_t>~(1 << (row & 7))
        st.key_nulls += 1
    if v.value_len >= 0:
        if st.vpos + v.value_len + KAFKAREC_COPY_SLACK > st.vcap:
            value.values.reserve(st.vpos - value.values.size + v.value_len + KAFKAREC_COPY_SLACK)
            st.vdata = value.values.data
            st.vcap = value.values.capacity
        kafkarec_copy_short(st.vdata + st.vpos, v.value, v.value_len, st.end)
        st.vpos += v.value_len
    else:
        st.vvalid[row >> 3] &= <uint8_t>~(1 << (row & 7))
        st.value_nulls += 1
    st.ko[0] = <int32_t>st.kpos
    st.vo[0] = <int32_t>st.vpos
    st.offs[0] = v.offset
    st.tss[0] = v.timestamp
    st.tts[0] = st.ts_type
    st.ko += 1
    st.vo += 1
    st.offs += 1
    st.tss += 1
    st.tts += 1
    if v.header_count != 0:
        headers_out(cols, st)
        add_headers(cols, &v, st.strict, st.end)
        headers_in(cols, st)
        st.hvalid[row >> 3] |= <uint8_t>(1 << (row & 7))
        st.with_headers += 1
    st.hoff[0] = <int32_t>st.entries
    st.hoff += 1
    st.row = row + 1
    return 0


cdef int add_v2_records(_ArrowColumns cols, _RecordIterator it, int ts_type, RecordBatch b,
                        bint strict, bint crc_after) except -1:
    """All records of one v2 batch, written through raw pointers: the per-row
    columns into space reserved up front (a batch cannot hold more rows than
    its payload has 7-byte minimal records), key, value and header bytes into
    space checked per record.  The record loop (full_rows) runs without the GIL
    for a batch worth it; a record it cannot take (a column to grow, a header key
    to replace) and a key bound's test go by the GIL's path (full_row_gil).  The
    rows are committed (col_commit) when the batch is complete, so a batch that
    fails half way leaves the columns as they were (headers, appended as they
    come, are cut back by _ArrowColumns.truncate).  With crc_after the CRC is
    checked after decoding, before the commit: decoding then pulls the bytes into
    cache and the CRC runs over cached bytes."""
    cdef RecordView v
    cdef FullRows st
    cdef _Column key = cols.key, value = cols.value
    cdef const uint8_t *payload_end = it._cur.end
    cdef Py_ssize_t payload = payload_end - it._cur.pos
    cdef Py_ssize_t rows = min(<Py_ssize_t>it._remaining, payload // 7 + 1)
    cdef Py_ssize_t r0 = cols.rows
    cdef int status
    cdef bint nogil_walk = payload >= WALK_NOGIL_MIN_BYTES
    if key.values.size + payload > INT32_LIMIT or value.values.size + payload > INT32_LIMIT:
        raise ColumnOverflowError("binary column over 2 GiB")
    st.ko = <int32_t *>reserve_tail(key.offsets, rows * 4, False)
    st.vo = <int32_t *>reserve_tail(value.offsets, rows * 4, False)
    st.offs = <int64_t *>reserve_tail(cols.offset.values, rows * 8, False)
    st.tss = <int64_t *>reserve_tail(cols.timestamp.values, rows * 8, False)
    st.tts = <int32_t *>reserve_tail(cols.timestamp_type.values, rows * 4, False)
    st.hoff = <int32_t *>reserve_tail(cols.headers.offsets, rows * 4, False)
    st.kdata = key.values.data             # indexed by absolute column position
    st.vdata = value.values.data
    st.kcap = key.values.capacity
    st.vcap = value.values.capacity
    st.kvalid = reserve_bits(key.valid, r0, rows, True)
    st.vvalid = reserve_bits(value.valid, r0, rows, True)
    st.hvalid = reserve_bits(cols.headers.valid, r0, rows, False)
    st.kpos = key.values.size
    st.vpos = value.values.size
    st.key_nulls = st.value_nulls = st.with_headers = 0
    st.pos = it._cur.pos
    st.end = payload_end
    st.row = r0
    st.end_row = r0 + rows
    st.ts_type = ts_type
    st.strict = strict
    st.want_key = cols.want_key
    st.want_value = cols.want_value
    st.want_headers = cols.want_headers
    st.keys = &cols.keys.table if cols.keys is not None else NULL
    headers_in(cols, &st)
    try:
        while it._remaining > 0 and st.row < st.end_row:
            if nogil_walk:
                with nogil:
                    status = full_rows(it, &st)
            else:
                status = full_rows(it, &st)
            if status == ROWS_FAULT:
                raise_record_fault(it)
            if status == ROWS_SLOW:
                full_row_gil(cols, it, &st)
    finally:
        headers_out(cols, &st)      # (a batch that failed: truncate cuts its entries back)
    if it._remaining > 0:
        # More declared records than the payload can hold: let the parser say why.
        parse_v2_record_at(it, &v, &st.pos, payload_end)
    if crc_after:
        check_crc(b)
    # commit the batch
    it._cur.pos = st.pos
    rows = st.row - r0
    key.values.size = st.kpos
    value.values.size = st.vpos
    col_commit(key, rows, st.key_nulls)
    col_commit(value, rows, st.value_nulls)
    col_commit(cols.offset, rows, 0)
    col_commit(cols.timestamp, rows, 0)
    col_commit(cols.timestamp_type, rows, 0)
    col_commit(cols.headers, rows, rows - st.with_headers)
    if cols.batch_columns:
        put_batch_columns(cols, b, r0, rows, nogil_walk)
    cols.rows = st.row
    return 0


cdef struct BatchRows:
    # The batch-level columns of one v2 batch's rows (put_batch_columns): where each column's
    # room starts and the batch's values, so that batch_rows fills them without the GIL.
    Py_ssize_t rows
    const int64_t *offsets      # the rows' offsets, as the record loop wrote them
    int64_t base_offset
    int32_t base_sequence
    int64_t producer_id
    int16_t producer_epoch
    int8_t codec
    int64_t position
    int32_t partition_leader_epoch
    int8_t magic
    int32_t size_in_bytes
    int64_t horizon             # the delete horizon, or 0 under a null
    int64_t *producer_ids
    int16_t *producer_epochs
    int32_t *sequences
    int8_t *codecs
    int64_t *positions
    int64_t *base_offsets
    int32_t *leader_epochs
    int8_t *magics
    int32_t *sizes
    int64_t *horizons


cdef void batch_rows(BatchRows *br) noexcept nogil:
    """The batch's values repeated over its rows, and each record's sequence from its offset:
    the offset is the base offset plus the record's offset delta (wrapping), so the delta comes
    back exactly, and DefaultRecord's sequence is incrementSequence(baseSequence, delta)."""
    cdef Py_ssize_t i
    cdef int32_t delta
    for i in range(br.rows):
        br.producer_ids[i] = br.producer_id
        br.producer_epochs[i] = br.producer_epoch
        br.codecs[i] = br.codec
        br.positions[i] = br.position
        br.base_offsets[i] = br.base_offset
        br.leader_epochs[i] = br.partition_leader_epoch
        br.magics[i] = br.magic
        br.sizes[i] = br.size_in_bytes
        br.horizons[i] = br.horizon
    if br.base_sequence < 0:
        for i in range(br.rows):
            br.sequences[i] = -1
    else:
        for i in range(br.rows):
            delta = <int32_t>(<uint64_t>br.offsets[i] - <uint64_t>br.base_offset)
            br.sequences[i] = increment_sequence(br.base_sequence, delta)


cdef int put_batch_columns(_ArrowColumns cols, RecordBatch b, Py_ssize_t r0, Py_ssize_t rows,
                           bint release) except -1:
    """The batch columns of a v2 batch's `rows` rows that add_v2_records committed from row r0,
    as _ArrowColumns.add writes them record by record: room reserved here, filled by batch_rows
    (with the GIL released when `release`: the record loop ran without it), then committed."""
    cdef BatchRows br
    cdef bint horizon = (b.attributes & ATTR_DELETE_HORIZON) != 0
    if rows == 0:
        return 0
    br.rows = rows
    br.offsets = (<const int64_t *>cols.offset.values.data) + r0
    br.base_offset = b._base_offset
    br.base_sequence = b.base_sequence
    br.producer_id = b.producer_id
    br.producer_epoch = b.producer_epoch
    br.codec = <int8_t>(b.attributes & ATTR_CODEC_MASK)
    br.position = b.position
    br.partition_leader_epoch = b.partition_leader_epoch
    br.magic = b.magic
    br.size_in_bytes = <int32_t>b.size_in_bytes
    br.horizon = b.base_timestamp if horizon else 0
    br.producer_ids = <int64_t *>reserve_tail(cols.producer_id.values, rows * 8, False)
    br.producer_epochs = <int16_t *>reserve_tail(cols.producer_epoch.values, rows * 2, False)
    br.sequences = <int32_t *>reserve_tail(cols.sequence.values, rows * 4, False)
    br.codecs = <int8_t *>reserve_tail(cols.compression.values, rows, False)
    br.positions = <int64_t *>reserve_tail(cols.batch_position.values, rows * 8, False)
    br.base_offsets = <int64_t *>reserve_tail(cols.batch_base_offset.values, rows * 8, False)
    br.leader_epochs = <int32_t *>reserve_tail(cols.partition_leader_epoch.values, rows * 4, False)
    br.magics = <int8_t *>reserve_tail(cols.magic.values, rows, False)
    br.sizes = <int32_t *>reserve_tail(cols.batch_size.values, rows * 4, False)
    br.horizons = <int64_t *>reserve_tail(cols.delete_horizon_ms.values, rows * 8, False)
    # the booleans and the horizon's validity: one value for the batch, preset bit by bit
    reserve_bits(cols.is_transactional.values, cols.is_transactional.length, rows,
                 (b.attributes & ATTR_TRANSACTIONAL) != 0)
    reserve_bits(cols.is_control.values, cols.is_control.length, rows, (b.attributes & ATTR_CONTROL) != 0)
    reserve_bits(cols.delete_horizon_ms.valid, cols.delete_horizon_ms.length, rows, horizon)
    if release:
        with nogil:
            batch_rows(&br)
    else:
        batch_rows(&br)
    col_commit(cols.producer_id, rows, 0)
    col_commit(cols.producer_epoch, rows, 0)
    col_commit(cols.sequence, rows, 0)
    col_commit(cols.is_transactional, rows, 0)
    col_commit(cols.is_control, rows, 0)
    col_commit(cols.compression, rows, 0)
    col_commit(cols.batch_position, rows, 0)
    col_commit(cols.batch_base_offset, rows, 0)
    col_commit(cols.partition_leader_epoch, rows, 0)
    col_commit(cols.magic, rows, 0)
    col_commit(cols.batch_size, rows, 0)
    col_commit(cols.delete_horizon_ms, rows, 0 if horizon else rows)
    return 0


cdef Py_ssize_t scanned_meta(_RecordIterator it, const uint8_t **pos, const uint8_t *end, Py_ssize_t room,
                             int64_t *offs, int64_t *tss, const KeyTable *keys, bint *fault) noexcept nogil:
    """The offsets and timestamps of the batch's records, each read by the scanner (a strict read's
    rules, a key bound's key), at most `room` of them; with `keys`, only those whose key is one of
    them; how many were kept.  *fault: a record the scanner refuses (described in it._fault, raised
    by the caller), where the reading stopped."""
    cdef RecordView v
    cdef Py_ssize_t kept = 0
    while it._remaining > 0 and kept < room:
        if unlikely(scan_v2_record(it, &v, pos, end) != 0):
            fault[0] = True
            break
        if keys == NULL or key_table_has(keys, v.key, v.key_len):
            offs[kept] = v.offset
            tss[kept] = v.timestamp
            kept += 1
    return kept


cdef Py_ssize_t meta_rows(_RecordIterator it, const uint8_t **pos, const uint8_t *end, Py_ssize_t room,
                          int64_t *offs, int64_t *tss, const KeyTable *keys, bint *fault) noexcept nogil:
    """The offsets and timestamps of the batch's records from pos[0], at most `room` of them (with
    `keys`, only those whose key is one of them); how many were written.  A key bound (every
    record's key is compared) or a strict read (the scanner's further rules) takes the scanner for
    every record; otherwise the meta-only walker walks, and a record it stops at is read by the
    scanner, which finds its fault (*fault: described in it._fault, raised by the caller, where
    the reading stopped) or reads it, and the walk goes on after it."""
    cdef RecordView v
    cdef Py_ssize_t row = 0
    if keys != NULL or it._cur.strict:
        return scanned_meta(it, pos, end, room, offs, tss, keys, fault)
    while it._remaining > 0 and row < room:
        row += walk_v2_meta(it, pos, end, room - row, offs + row, tss + row)
        if it._remaining > 0 and row < room:
            if unlikely(scan_v2_record(it, &v, pos, end) != 0):
                fault[0] = True
                break
            offs[row] = v.offset
            tss[row] = v.timestamp
            row += 1
    return row


cdef int add_v2_meta(_ArrowColumns cols, _RecordIterator it, int ts_type, RecordBatch b,
                     bint strict, bint crc_after) except -1:
    """The offsets and timestamps of one v2 batch's records (lean columns), by the meta-only
    walker (meta_rows, walk_v2_meta): nothing of a record's key, value or headers is read past its length.
    A record the walker stops at is read by the scanner, which raises its fault or returns it
    (and the walk goes on after it).  Committed when the batch is complete, as add_v2_records
    does."""
    cdef RecordView v
    cdef _KeySet keys = cols.keys
    cdef const uint8_t *payload_end = it._cur.end
    cdef Py_ssize_t payload = payload_end - it._cur.pos
    cdef Py_ssize_t rows = min(<Py_ssize_t>it._remaining, payload // 7 + 1)
    cdef Py_ssize_t row = cols.rows, r0 = cols.rows, end_row = cols.rows + rows, walked, i
    cdef const uint8_t *pos = it._cur.pos
    cdef int64_t *offs = <int64_t *>reserve_tail(cols.offset.values, rows * 8, False)
    cdef int64_t *tss = <int64_t *>reserve_tail(cols.timestamp.values, rows * 8, False)
    cdef int32_t *tts = <int32_t *>reserve_tail(cols.timestamp_type.values, rows * 4, False)
    cdef bint fault = False
    cdef const KeyTable *table = &keys.table if keys is not None else NULL
    if payload >= WALK_NOGIL_MIN_BYTES:
        with nogil:
            row += meta_rows(it, &pos, payload_end, end_row - row, offs, tss, table, &fault)
    else:
        row += meta_rows(it, &pos, payload_end, end_row - row, offs, tss, table, &fault)
    if fault:
        raise_record_fault(it)
    for i in range(row - r0):
        tts[i] = ts_type
    if it._remaining > 0:
        parse_v2_record_at(it, &v, &pos, payload_end)
    if crc_after:
        check_crc(b)
    it._cur.pos = pos
    rows = row - r0
    col_commit(cols.offset, rows, 0)
    col_commit(cols.timestamp, rows, 0)
    col_commit(cols.timestamp_type, rows, 0)
    cols.rows = row
    return 0


# ---------------------------------------------------------------- runs of batches without the GIL

# A window of a log is mostly whole, uncompressed v2 data batches.  Read one by one, each batch
# takes the GIL to be framed (a RecordBatch, its record iterator) and lets it go for its records,
# then for its CRC: at 1,000 records a batch the GIL changes hands thousands of times a window,
# and the read's other threads (and any busy Python thread beside them) queue for it each time.
# A run reads such batches one after the other in one nogil section (framing, records, CRC),
# each batch kept only when whole and sound.  It ends before the first batch it does not take:
# compressed, control or legacy, a header the format or a strict read forbids, a record the loops
# refuse or leave to the GIL's path, a CRC that does not match, a column without room, a chunk
# full.  The batch-by-batch path then reads that batch as it always does (raising, reporting,
# growing the columns): a run takes only batches that path reads to the same rows without a word,
# so every rule and every error stays there.

cdef struct V2Run:
    const uint8_t *buf          # the batch iterator's buffer
    Py_ssize_t origin           # the file position of buf[0]
    Py_ssize_t offset           # where the next batch starts in buf (past each batch taken)
    Py_ssize_t end
    bint verify_crc
    bint strict
    Py_ssize_t room_end         # the rows the per-row columns have room for (a run grows nothing)
    Py_ssize_t kvalid_cap       # the bitmaps' room, in bytes (full rows)
    Py_ssize_t vvalid_cap
    Py_ssize_t hvalid_cap
    Py_ssize_t max_rows         # the chunk's limits: the run ends with the batch that reaches one
    Py_ssize_t max_bytes
    Py_ssize_t batches          # taken


cdef struct MetaRows:
    # the lean columns' room from the next row on (meta_rows_run)
    Py_ssize_t row
    int64_t *offs
    int64_t *tss
    int32_t *tts


cdef inline Py_ssize_t run_batch_size(const uint8_t *p, Py_ssize_t remaining) noexcept nogil:
    """The size of the batch at p when a run may take it, else 0: a whole v2 batch, neither
    compressed nor control, that declares records and whose header holds nothing the format
    forbids (so BatchIterator frames it and a strict read takes its header, as they would)."""
    cdef int32_t length, count, last_delta
    cdef uint16_t attributes
    if remaining < V2_HEADER_SIZE or p[OFF_MAGIC] != 2:
        return 0
    length = <int32_t>kr_load_be32(p + OFF_LENGTH)
    if (length < V2_HEADER_SIZE - LOG_OVERHEAD or length > INT32_LIMIT - LOG_OVERHEAD
            or <Py_ssize_t>length > remaining - LOG_OVERHEAD):
        return 0
    attributes = kr_load_be16(p + OFF_ATTRIBUTES)
    if attributes & (ATTR_CODEC_MASK | ATTR_CONTROL | ATTR_V2_UNUSED):
        return 0
    count = <int32_t>kr_load_be32(p + OFF_RECORDS_COUNT)
    last_delta = <int32_t>kr_load_be32(p + OFF_LAST_OFFSET_DELTA)
    if count <= 0 or last_delta < 0 or <int64_t>count > <int64_t>last_delta + 1:
        return 0
    return <Py_ssize_t>length + LOG_OVERHEAD


cdef inline Py_ssize_t run_batch_rows(const uint8_t *p, Py_ssize_t size) noexcept nogil:
    """The most rows the batch at p can give (as add_v2_records reserves: its declared count, at
    most one per 7 payload bytes, the smallest record)."""
    return min(<Py_ssize_t>kr_load_be32(p + OFF_RECORDS_COUNT), (size - V2_HEADER_SIZE) // 7 + 1)


cdef inline void run_iterator(_RecordIterator it, const uint8_t *p, Py_ssize_t size, Py_ssize_t position,
                              bint strict) noexcept nogil:
    """`it` as v2_record_iterator sets it for the uncompressed batch at p (run_batch_size's)."""
    cursor_init(&it._cur, p + V2_HEADER_SIZE, size - V2_HEADER_SIZE, position + V2_HEADER_SIZE,
                False, strict)
    it._remaining = <int32_t>kr_load_be32(p + OFF_RECORDS_COUNT)
    it._base_offset = <int64_t>kr_load_be64(p)
    it._base_timestamp = <int64_t>kr_load_be64(p + OFF_BASE_TIMESTAMP)
    it._max_timestamp = <int64_t>kr_load_be64(p + OFF_MAX_TIMESTAMP)
    it._base_sequence = <int32_t>kr_load_be32(p + OFF_BASE_SEQUENCE)
    it._last_offset_delta = <int32_t>kr_load_be32(p + OFF_LAST_OFFSET_DELTA)
    it._prev_offset_delta = -1
    it._timestamp_type = TS_LOG_APPEND if (kr_load_be16(p + OFF_ATTRIBUTES) & ATTR_LOG_APPEND_TIME) else TS_CREATE
    it._is_control = False
    it._strict = strict
    it._batch_position = position


cdef inline bint run_crc_ok(const V2Run *run, const uint8_t *p, Py_ssize_t size) noexcept nogil:
    return (not run.verify_crc
            or crc32c_nogil(p + OFF_ATTRIBUTES, size - OFF_ATTRIBUTES) == kr_load_be32(p + OFF_CRC))


cdef void full_rows_run(_RecordIterator it, FullRows *st, V2Run *run) noexcept nogil:
    """Whole batches from run.offset into st's columns, as add_v2_records writes them, each kept
    when whole and sound; st is left as after the last batch kept."""
    cdef FullRows done
    cdef const uint8_t *p
    cdef Py_ssize_t size, rows, payload
    cdef int status
    while True:
        p = run.buf + run.offset
        size = run_batch_size(p, run.end - run.offset)
        if size == 0:
            return
        rows = run_batch_rows(p, size)
        payload = size - V2_HEADER_SIZE
        if (st.row + rows > run.room_end or bits_room(st.row, rows) > run.kvalid_cap
                or bits_room(st.row, rows) > run.vvalid_cap or bits_room(st.row, rows) > run.hvalid_cap
                or st.kpos + payload > INT32_LIMIT or st.vpos + payload > INT32_LIMIT):
            return
        done = st[0]
        run_iterator(it, p, size, run.origin + run.offset, run.strict)
        preset_bits(st.kvalid, st.row, rows, True)
        preset_bits(st.vvalid, st.row, rows, True)
        preset_bits(st.hvalid, st.row, rows, False)
        st.pos = it._cur.pos
        st.end = it._cur.end
        st.end_row = st.row + rows
        st.ts_type = it._timestamp_type
        status = full_rows(it, st)
        if status != ROWS_DONE or it._remaining > 0 or not run_crc_ok(run, p, size):
            st[0] = done
            return
        run.offset += size
        run.batches += 1
        if st.row >= run.max_rows or st.kpos + st.vpos + st.hk_size + st.hv_size >= run.max_bytes:
            return


cdef void meta_rows_run(_RecordIterator it, MetaRows *st, const KeyTable *keys, V2Run *run) noexcept nogil:
    """Whole batches from run.offset into the lean columns, as add_v2_meta writes them, each kept
    when whole and sound."""
    cdef const uint8_t *p
    cdef const uint8_t *pos
    cdef Py_ssize_t size, rows, n, i
    cdef bint fault = False
    while True:
        p = run.buf + run.offset
        size = run_batch_size(p, run.end - run.offset)
        if size == 0:
            return
        rows = run_batch_rows(p, size)
        if st.row + rows > run.room_end:
            return
        run_iterator(it, p, size, run.origin + run.offset, run.strict)
        pos = it._cur.pos
        n = meta_rows(it, &pos, it._cur.end, rows, st.offs, st.tss, keys, &fault)
        if fault or it._remaining > 0 or not run_crc_ok(run, p, size):
            return
        for i in range(n):
            st.tts[i] = it._timestamp_type
        st.offs += n
        st.tss += n
        st.tts += n
        st.row += n
        run.offset += size
        run.batches += 1
        if st.row >= run.max_rows:
            return


cdef inline Py_ssize_t room_rows(_Growable g, Py_ssize_t width) noexcept:
    return (g.capacity - g.size) // width


cdef Py_ssize_t take_run(_ArrowColumns cols, BatchIterator batches, _RecordIterator it,
                         Py_ssize_t max_rows, Py_ssize_t max_bytes) except -1:
    """The batches a run takes from where `batches` is (see above), committed to `cols` and
    `batches` moved past them; how many.  The GIL is let go when the first of them can be taken
    and the input left is worth it (a few small batches are read with it held, as by the
    batch-by-batch path: the same run, without the release and retake)."""
    cdef V2Run run
    cdef FullRows st
    cdef MetaRows meta
    cdef _Column key = cols.key, value = cols.value
    cdef Py_ssize_t r0 = cols.rows, rows, size
    cdef bint release
    cdef const KeyTable *table = &cols.keys.table if cols.keys is not None else NULL
    run.buf = batches._buf.ptr
    run.origin = batches._buf.origin
    run.offset = batches._offset
    run.end = batches._end
    run.verify_crc = batches._verify_crc
    run.strict = batches._strict
    run.max_rows = max_rows
    run.max_bytes = max_bytes
    run.batches = 0
    run.room_end = r0 + min(room_rows(cols.offset.values, 8), room_rows(cols.timestamp.values, 8),
                            room_rows(cols.timestamp_type.values, 4))
    size = run_batch_size(run.buf + run.offset, run.end - run.offset)
    if size == 0 or r0 + run_batch_rows(run.buf + run.offset, size) > run.room_end:
        return 0
    release = run.end - run.offset >= WALK_NOGIL_MIN_BYTES
    if cols.lean:
        meta.row = r0
        meta.offs = <int64_t *>(cols.offset.values.data + cols.offset.values.size)
        meta.tss = <int64_t *>(cols.timestamp.values.data + cols.timestamp.values.size)
        meta.tts = <int32_t *>(cols.timestamp_type.values.data + cols.timestamp_type.values.size)
        if release:
            with nogil:
                meta_rows_run(it, &meta, table, &run)
        else:
            meta_rows_run(it, &meta, table, &run)
        rows = meta.row - r0
    else:
        run.room_end = min(run.room_end, r0 + min(room_rows(key.offsets, 4), room_rows(value.offsets, 4),
                                                  room_rows(cols.headers.offsets, 4)))
        run.kvalid_cap = key.valid.capacity
        run.vvalid_cap = value.valid.capacity
        run.hvalid_cap = cols.headers.valid.capacity
        if (r0 + run_batch_rows(run.buf + run.offset, size) > run.room_end
                or key.valid.data == NULL or value.valid.data == NULL or cols.headers.valid.data == NULL):
            return 0
        st.ko = <int32_t *>(key.offsets.data + key.offsets.size)
        st.vo = <int32_t *>(value.offsets.data + value.offsets.size)
        st.offs = <int64_t *>(cols.offset.values.data + cols.offset.values.size)
        st.tss = <int64_t *>(cols.timestamp.values.data + cols.timestamp.values.size)
        st.tts = <int32_t *>(cols.timestamp_type.values.data + cols.timestamp_type.values.size)
        st.hoff = <int32_t *>(cols.headers.offsets.data + cols.headers.offsets.size)
        st.kdata = key.values.data
        st.vdata = value.values.data
        st.kcap = key.values.capacity
        st.vcap = value.values.capacity
        st.kvalid = key.valid.data
        st.vvalid = value.valid.data
        st.hvalid = cols.headers.valid.data
        st.kpos = key.values.size
        st.vpos = value.values.size
        st.key_nulls = st.value_nulls = st.with_headers = 0
        st.row = r0
        st.strict = run.strict
        st.want_key = cols.want_key
        st.want_value = cols.want_value
        st.want_headers = cols.want_headers
        st.keys = table
        headers_in(cols, &st)
        if release:
            with nogil:
                full_rows_run(it, &st, &run)
        else:
            full_rows_run(it, &st, &run)
        rows = st.row - r0
        if run.batches:
            key.values.size = st.kpos
            value.values.size = st.vpos
            col_commit(key, rows, st.key_nulls)
            col_commit(value, rows, st.value_nulls)
            col_commit(cols.headers, rows, rows - st.with_headers)
            headers_out(cols, &st)
    if run.batches:
        col_commit(cols.offset, rows, 0)
        col_commit(cols.timestamp, rows, 0)
        col_commit(cols.timestamp_type, rows, 0)
        cols.rows = r0 + rows
        batches._offset = run.offset
    return run.batches


# Called through a pointer so the compiler keeps the decode loop a function of
# its own instead of inlining it into the (huge) generator below, where its
# loop variables would spill to the stack.
ctypedef int (*AddV2Records)(_ArrowColumns, _RecordIterator, int, RecordBatch, bint,
                             bint) except -1
cdef AddV2Records add_v2_records_out_of_line = add_v2_records
cdef AddV2Records add_v2_meta_out_of_line = add_v2_meta


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
               Py_ssize_t origin=0, columns=None, keys=None):
    """Decode ``data`` into a stream of ``pyarrow.RecordBatch`` of at most about
    ``max_rows`` rows / ``max_bytes`` of key+value+header bytes each (of those built: a
    projection without one of them counts none of its bytes).

    ``columns``: the names of the columns to return (in the schema's order; None: all).  A
    read of none of ``key``, ``value`` and ``headers`` does not build them: the records'
    bytes are not copied (a compressed batch is still decompressed: its records' offsets and
    timestamps are inside its compressed records).

    ``keys``: an iterable of ``bytes``; only the records whose key is one of them are returned,
    the others are scanned (their framing checked, as every record's) and nothing of them is
    copied (a null key is in no set; None: every record).

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
    cdef list projection = None
    if columns is not None:
        available = arrow_schema(batch_columns=batch_columns).names
        wanted = set(columns)
        unknown = sorted(wanted.difference(available))
        if unknown:
            raise UsageError(f"iter_arrow: column(s) {unknown} are not read; available: {available}")
        projection = [name for name in available if name in wanted]
    out = ArrowBatchIterator.__new__(ArrowBatchIterator)
    out._batches = iter_batches(data, opts, start=start, end=end, origin=origin)
    out._chunks = _arrow_batches(data, out._batches, topic, partition, include_control,
                                 batch_columns, read_committed, max_rows, max_bytes, errors,
                                 error_sink, projection, None if keys is None else _KeySet(keys))
    return out


cdef bint is_lean(object projection, bint batch_columns):
    """A projection without the records' bytes, on the v2 fast path (not the wide layout)."""
    return projection is not None and not batch_columns and _RECORD_BYTES_COLUMNS.isdisjoint(projection)


def meta_walk(columns, /, *, batch_columns=False, keys=None) -> bool:
    """Whether ``iter_arrow`` with these ``columns``, ``batch_columns`` and ``keys`` reads v2
    records by the meta-only walk (offsets and timestamps by the records' lengths alone)."""
    return keys is None and is_lean(columns, batch_columns)


def _arrow_batches(data, BatchIterator batches, topic, partition, bint include_control,
                   bint batch_columns, bint read_committed, Py_ssize_t max_rows,
                   Py_ssize_t max_bytes, str errors, list error_sink, list projection,
                   _KeySet keys=None):
    cdef bint lean = is_lean(projection, batch_columns)
    cdef AddV2Records add_v2 = add_v2_meta_out_of_line if lean else add_v2_records_out_of_line
    cdef _ArrowColumns cols = _ArrowColumns(batch_columns, lean, keys, projection)
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
    cdef bint runs
    cdef _RecordIterator run_it = _RecordIterator.__new__(_RecordIterator)
    # compressed batches decompress into one buffer: each batch's records are copied out (or
    # walked) before the next batch is read
    cdef _Scratch scratch = _Scratch.__new__(_Scratch)
    if read_committed:
        aborted = aborted_batch_positions(data, batches.options, batches)
    # runs of batches without the GIL (take_run): not for the wide layout (its batch columns are
    # written per batch), nor where a batch is left out by position, nor when the CRC can only be
    # computed with the GIL
    runs = (not batch_columns and not aborted and (not verify_crc or crc32c_nogil_fn != NULL))
    run_it._buf = batches._buf
    while True:
        if (runs and not batches.exhausted
                and take_run(cols, batches, run_it, max_rows, max_bytes)
                and (cols.rows >= max_rows or cols.data_bytes() >= max_bytes)):
            yield cols.finish(topic, partition, projection)
            yielded = True
            cols = _ArrowColumns(batch_columns, lean, keys, projection)
            chunk_start = batches._offset
            sized = False
            continue
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
        crc_after = (verify_crc and not left_out and b.magic >= 2
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
                    rit_obj = v2_record_iterator(b, scratch)
                    if isinstance(rit_obj, _RecordIterator):
                        rit = <_RecordIterator>rit_obj
                        rit_obj = None
                        try:
                            add_v2(cols, rit, ts_type, b, strict, crc_after)
                        finally:
                            rit = None      # its view of the scratch, before the next batch's
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
            yield cols.finish(topic, partition, projection)
            yielded = True
            cols = _ArrowColumns(batch_columns, lean, keys, projection)
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
        yield cols.finish(topic, partition, projection)


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
