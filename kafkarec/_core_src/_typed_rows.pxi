# Typed values (Avro, Protobuf) into nested Arrow columns: the one column builder and the one driver.
#
# _Column builds one Arrow column of any shape a typed reader produces: fixed-width values, bits,
# binary, decimals, structs and lists (a map is a list of key/value structs).  A format's steps write
# into it with col_put_* / col_ok / col_null / col_close_list; a row that fails midway is cut out of every
# column with col_truncate; col_finish hands the buffers to Arrow and starts over empty.
#
# decode_typed_column is the one loop over a column of record values: nulls (tombstones, and values the
# registry left without a writer), the writer lookup by schema id, where the body starts, and a row that
# fails becoming a null row with its reason worded once (value_problem).  The format supplies a
# _TypedRows step that decodes one value's body into the root column.

# Column kinds: Arrow's physical layouts, numbered here only (cpdef: also kafkarec._core.ColumnKind,
# which kafkarec/avro/program.py emits).
cpdef enum ColumnKind:
    CK_NULL = 0
    CK_BOOL = 1
    CK_I32 = 2
    CK_I64 = 3
    CK_F32 = 4
    CK_F64 = 5
    CK_BIN = 6
    CK_DEC16 = 7
    CK_DEC32 = 8
    CK_STRUCT = 9
    CK_LIST = 10

cdef const char *_TYPED_EMPTY = b""     # a non-NULL pointer to nothing


@cython.final
cdef class _Column:
    """One Arrow column being built: values (fixed width, bits or binary data), offsets (binary and
    list), validity and child columns.  A column that cannot be null (Spark's non-nullable fields)
    keeps no validity bitmap."""
    cdef readonly int kind          # ColumnKind
    cdef readonly int role          # the format's own kind for its steps (Protobuf's PBC_*), else 0
    cdef readonly object arrow_type
    cdef int width                  # bytes per value of a fixed-width column
    cdef int precision              # decimal columns: at most this many digits
    cdef bint nullable
    cdef Py_ssize_t length
    cdef _Growable values
    cdef _Growable offsets
    cdef _Bits bits
    cdef _Bits valid
    cdef list children

    def __len__(self):
        return self.length

    def to_arrow(self):
        """The Arrow array of the rows so far; the builder starts over empty."""
        return col_finish(self)


cdef int col_width(int kind) noexcept:
    if kind == CK_I32 or kind == CK_F32:
        return 4
    if kind == CK_I64 or kind == CK_F64:
        return 8
    if kind == CK_DEC16:
        return 16
    if kind == CK_DEC32:
        return 32
    return 0


cdef int col_reset(_Column col) except -1:
    col.length = 0
    col.valid = _Bits()
    if col.kind == CK_BOOL:
        col.bits = _Bits()
    elif col.kind == CK_BIN or col.kind == CK_LIST:
        col.offsets = _ArrowGrowable()
        put_i32(col.offsets, 0)
        if col.kind == CK_BIN:
            col.values = _ArrowGrowable()
    elif col.width:
        col.values = _ArrowGrowable()
    return 0


cdef _Column new_column(int kind, object arrow_type, bint nullable, list children=None, int role=0):
    if not CK_NULL <= kind <= CK_LIST:
        raise ValueError(f"unknown column kind {kind}")
    cdef _Column col = _Column.__new__(_Column)
    col.kind = kind
    col.role = role
    col.arrow_type = arrow_type
    col.nullable = nullable
    col.width = col_width(kind)
    col.children = list(children or ())
    if kind == CK_DEC16 or kind == CK_DEC32:
        col.precision = arrow_type.precision
    col_reset(col)
    return col


def typed_column(int kind, arrow_type, bint nullable=True, list children=None, int role=0):
    """A builder of one column of `kind` (ColumnKind) and Arrow type; children: a struct's columns in
    order, or a list's one element column; role: the format's own kind, for its steps."""
    if kind == CK_LIST and (not children or len(children) != 1):
        raise ValueError("a list column has one child column")
    return new_column(kind, arrow_type, nullable, children, role)


cdef inline int col_ok(_Column col) except -1:
    """A valid row at the end of col (its value, items or fields already written)."""
    if col.nullable:
        col.valid.append(True)
    col.length += 1
    return 0


cdef int col_null(_Column col) except -1:
    """A null at the end of col; under a null parent, a column that cannot be null gets a valid
    placeholder (zero, empty)."""
    cdef _Column ch
    cdef uint8_t zero[32]
    if col.nullable:
        col.valid.append(False)
    col.length += 1
    if col.kind == CK_BOOL:
        col.bits.append(False)
    elif col.width:
        memset(zero, 0, 32)
        grow_put(col.values, zero, col.width)
    elif col.kind == CK_BIN:
        put_i32(col.offsets, <int32_t>col.values.size)
    elif col.kind == CK_LIST:
        put_i32(col.offsets, (<int32_t *>col.offsets.data)[col.length - 1])
    elif col.kind == CK_STRUCT:
        for ch in col.children:
            col_null(ch)
    return 0


cdef int col_truncate(_Column col, Py_ssize_t n) except -1:
    """Drop the rows of col after the first n (a record that failed midway)."""
    cdef _Column ch
    if n > col.length:
        return 0
    # a struct's own row is appended after its fields, a list's after its items: children may hold
    # rows past the parent's length, so recurse even when the parent has none to drop
    if col.nullable:
        col.valid.truncate(n)
    col.length = n
    if col.kind == CK_BOOL:
        col.bits.truncate(n)
    elif col.width:
        col.values.size = n * col.width
    elif col.kind == CK_BIN:
        col.offsets.size = (n + 1) * 4
        col.values.size = (<int32_t *>col.offsets.data)[n]
    elif col.kind == CK_LIST:
        col.offsets.size = (n + 1) * 4
        col_truncate(col.children[0], (<int32_t *>col.offsets.data)[n])
    elif col.kind == CK_STRUCT:
        for ch in col.children:
            col_truncate(ch, n)
    return 0


cdef inline int col_put_fixed(_Column col, const void *value) except -1:
    grow_put(col.values, value, col.width)
    return col_ok(col)


cdef inline int col_put_bool(_Column col, bint value) except -1:
    col.bits.append(value)
    return col_ok(col)


cdef inline void short_copy(uint8_t *dst, const uint8_t *src, int64_t n) noexcept nogil:
    """memcpy for the short strings typed values mostly are: fixed-size copies the compiler inlines
    (two overlapping ones cover 4..16 bytes) instead of a libc call per value."""
    if n > 16:
        memcpy(dst, src, n)
    elif n >= 8:
        memcpy(dst, src, 8)
        memcpy(dst + n - 8, src + n - 8, 8)
    elif n >= 4:
        memcpy(dst, src, 4)
        memcpy(dst + n - 4, src + n - 4, 4)
    else:
        while n > 0:
            n -= 1
            dst[n] = src[n]


cdef inline int col_put_bin(_Column col, const uint8_t *p, int64_t n) except -1:
    cdef _Growable v = col.values
    cdef _Growable o = col.offsets
    cdef int32_t end
    if unlikely(n > INT32_LIMIT - v.size):
        raise ColumnOverflowError("binary column over 2 GiB")
    if v.size + n > v.capacity:
        v.reserve(n)
    if n:                       # (data may still be NULL when n is 0)
        short_copy(v.data + v.size, p, n)
    v.size += n
    end = <int32_t>v.size
    if o.size + 4 > o.capacity:
        o.reserve(4)
    memcpy(o.data + o.size, &end, 4)
    o.size += 4
    return col_ok(col)


cdef inline int col_close_list(_Column col) except -1:
    """A valid list row holding the items appended to the child since the previous row."""
    cdef Py_ssize_t items = (<_Column>col.children[0]).length
    if unlikely(items > INT32_LIMIT):
        raise ColumnOverflowError("list column over 2^31 items")
    put_i32(col.offsets, <int32_t>items)
    return col_ok(col)


cdef object col_finish(_Column col):
    """The Arrow array of col's rows; col starts over empty."""
    pa = pyarrow()
    cdef _Column ch
    cdef Py_ssize_t n = col.length
    t = col.arrow_type
    validity = pa.py_buffer(col.valid.bytes) if col.valid.zeros else None
    nulls = col.valid.zeros
    if col.kind == CK_NULL:
        out = pa.nulls(n, t)
    elif col.kind == CK_BOOL:
        out = pa.Array.from_buffers(t, n, [validity, pa.py_buffer(col.bits.bytes)], null_count=nulls)
    elif col.width:
        out = pa.Array.from_buffers(t, n, [validity, pa.py_buffer(col.values)], null_count=nulls)
    elif col.kind == CK_BIN:
        out = pa.Array.from_buffers(t, n, [validity, pa.py_buffer(col.offsets), pa.py_buffer(col.values)],
                                    null_count=nulls)
    elif col.kind == CK_LIST:
        out = pa.Array.from_buffers(t, n, [validity, pa.py_buffer(col.offsets)], null_count=nulls,
                                    children=[col_finish(col.children[0])])
    else:
        out = pa.Array.from_buffers(t, n, [validity], null_count=nulls,
                                    children=[col_finish(ch) for ch in col.children])
    col_reset(col)
    return out


# ---------------------------------------------------------------- the driver

cdef class _TypedRows:
    """A typed format's step: decodes one record value's body into the root column."""
    cdef dict writers               # writer schema id -> the format's compiled writer

    cdef int row(self, object writer, const uint8_t *value, Py_ssize_t length, Py_ssize_t body) except -1:
        """Append one row for `value` (its `length` bytes, framing included; the body starts at byte
        `body`) or raise a DecodeError / ColumnOverflowError with the position in the value."""
        raise NotImplementedError

    cdef void row_failed(self) noexcept:
        """Forget the state a failed row left behind."""
        pass


cdef object int_column(object column, object arrow_type, Py_ssize_t n, str name):
    pa = pyarrow()
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if not pa.types.is_integer(column.type):
        raise TypeError(f"{name} must be an integer array, not {column.type}")
    if len(column) != n:
        raise ValueError(f"{name} has {len(column)} items, values has {n}")
    return column.cast(arrow_type)


cdef inline bint bit_set(const uint8_t *bits, Py_ssize_t i) noexcept:
    return bits == NULL or (bits[i >> 3] >> (i & 7)) & 1


cdef tuple decode_typed_column(_TypedRows step, _Column root, object values, object writer_ids,
                               object body_offsets):
    """(root's array, string array of per-row errors) for a column of record values.  writer_ids
    (integers, None: all 0) pick the writer; body_offsets (None: all 0) say where each body starts.
    A null value or writer id is a null row without an error (the caller reports its framing)."""
    pa = pyarrow()
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if not (pa.types.is_binary(values.type) or pa.types.is_large_binary(values.type)
            or pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
        raise TypeError(f"values must be a binary array, not {values.type}")
    cdef Py_ssize_t n = len(values)
    cdef _BinaryInput input = binary_input(values, n, "values")
    cdef list keep = []
    cdef const uint8_t *ivalid = NULL
    cdef const int64_t *ids = NULL
    cdef const uint8_t *ovalid = NULL
    cdef const int32_t *offsets = NULL
    cdef Py_ssize_t ioff = 0, ooff = 0
    if writer_ids is not None:
        writer_ids = int_column(writer_ids, pa.int64(), n, "writer_ids")
        bufs = writer_ids.buffers()
        ivalid = <const uint8_t *>pyarrow_address(bufs[0])
        ids = <const int64_t *>pyarrow_address(bufs[1])
        ioff = writer_ids.offset
    if body_offsets is not None:
        body_offsets = int_column(body_offsets, pa.int32(), n, "body_offsets")
        bufs = body_offsets.buffers()
        ovalid = <const uint8_t *>pyarrow_address(bufs[0])
        offsets = <const int32_t *>pyarrow_address(bufs[1])
        ooff = body_offsets.offset
    cdef _BinaryColumn errors = _BinaryColumn()
    cdef Py_ssize_t i, length, body, before
    cdef const uint8_t *value
    cdef int64_t wid, last_wid = 0
    cdef object writer = None
    cdef bint looked_up = False
    cdef bytes why
    for i in range(n):
        input.get(i, &value, &length, keep)
        if length < 0 or not bit_set(ivalid, i + ioff):
            col_null(root)          # a tombstone, or a value the registry left undecoded
            errors.append(NULL, -1)
            continue
        if value == NULL:
            value = <const uint8_t *>_TYPED_EMPTY
        wid = ids[i + ioff] if ids != NULL else 0
        if not looked_up or wid != last_wid:
            writer = step.writers.get(wid)
            last_wid = wid
            looked_up = True
        body = offsets[i + ooff] if offsets != NULL and bit_set(ovalid, i + ooff) else 0
        before = root.length
        try:
            if writer is None:
                raise DecodeError(f"unknown writer schema id {wid}", body)
            if body < 0 or body > length:
                raise DecodeError(f"the body starts past the end of a {length}-byte value", body)
            step.row(writer, value, length, body)
        except (DecodeError, ColumnOverflowError) as exc:
            step.row_failed()
            col_truncate(root, before)
            col_null(root)
            why = value_problem(max(getattr(exc, "position", 0) or 0, body), getattr(exc, "reason", str(exc)))
            errors.append(<const uint8_t *>PyBytes_AS_STRING(why), len(why))
            continue
        errors.append(NULL, -1)
    return col_finish(root), errors.to_arrow(pa.string())
