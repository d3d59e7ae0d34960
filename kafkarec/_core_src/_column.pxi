# The one Arrow column builder (nanoarrow's appender as the model): record columns (_row_columns.pxi),
# internal-topic columns (_kmsg.pxi) and typed values (_typed_rows.pxi) all build their columns here.
#
# _Column builds one Arrow column of any shape: fixed-width values, bits, binary, decimals, structs
# and lists (a map is a list of key/value structs).  Rows are appended with col_put_* / col_ok /
# col_null / col_close_list; the bulk writers (a whole batch of records, a whole column of internal
# records) reserve room (reserve_tail, reserve_bits), write through the pointers and count the rows
# with col_commit.  col_truncate cuts rows off again (a record or batch that failed midway);
# col_finish hands the buffers to Arrow without a copy and starts over empty.  Buffers come from
# Arrow's memory pool (_ArrowGrowable).

from kafkarec._extras import require

cdef object _pa = None


cdef object pyarrow():
    global _pa
    if _pa is None:
        _pa = require("pyarrow")
    return _pa


cdef enum:
    INT32_LIMIT = 0x7FFFFFFF


cdef enum:
    SPARE_MIN = 1 << 18         # the smallest column buffer SpareBuffers keeps by default (256 KiB)


@cython.final
@cython.auto_pickle(False)
cdef class SpareBuffers:
    """Column buffers kept for the next chunks' columns once Arrow let go of them: a read's chunk
    after chunk, and a registered source's query after query, write their rows into memory
    already faulted in.  Arrow's memory pool (mimalloc) hands freed memory back to the kernel
    after a few milliseconds: a query that follows another engine's, or a pause, faulted every
    column page in afresh and the kernel zeroed it (issue 80: 15-20% of DuckDB's whole-rows
    query).  At most ``limit`` bytes are kept; buffers under ``min_bytes`` (256 KiB) are left to
    the pool, whose small pages it reuses anyway (the fuzzers keep every one).  Used
    with the GIL held (a buffer comes back when the Arrow array holding it is released, which
    takes the GIL to let go of its Python owner)."""
    cdef readonly Py_ssize_t limit
    cdef readonly Py_ssize_t held
    cdef readonly Py_ssize_t min_bytes
    cdef list _caps             # the capacity of each buffer kept
    cdef list _bufs             # pyarrow.ResizableBuffer, resized to that capacity

    def __cinit__(self, Py_ssize_t limit, *, Py_ssize_t min_bytes=SPARE_MIN):
        if limit < 0 or min_bytes < 0:
            raise ValueError(f"SpareBuffers: limit {limit} or min_bytes {min_bytes} is negative")
        self.limit = limit
        self.min_bytes = min_bytes
        self._caps = []
        self._bufs = []

    def clear(self) -> None:
        """Every buffer kept handed back to Arrow's memory pool."""
        self._caps = []
        self._bufs = []
        self.held = 0

    def close(self) -> None:
        """Every buffer kept handed back, and none kept from now on (its owner is done with it)."""
        self.limit = 0
        self.clear()

    def __len__(self):
        return len(self._bufs)

    cdef object take(self, Py_ssize_t want, Py_ssize_t *cap):
        """The smallest buffer kept of at least ``want`` bytes (not much larger: a small column
        does not take a big one), its capacity in cap; None if none fits."""
        cdef Py_ssize_t i, best = -1, c, best_cap = 0
        for i in range(len(self._caps)):
            c = self._caps[i]
            if want <= c <= 2 * want + self.min_bytes and (best < 0 or c < best_cap):
                best, best_cap = i, c
        if best < 0:
            return None
        self._caps.pop(best)
        self.held -= best_cap
        cap[0] = best_cap
        return self._bufs.pop(best)

    cdef bint give(self, object buf, Py_ssize_t cap):
        """``buf`` (of ``cap`` bytes, no longer used by anyone) kept, unless small or over the limit."""
        if cap < self.min_bytes or self.held + cap > self.limit:
            return False
        self._caps.append(cap)
        self._bufs.append(buf)
        self.held += cap
        return True


@cython.auto_pickle(False)       # raw memory: _Growable.__reduce__ refuses
cdef class _ArrowGrowable(_Growable):
    """A _Growable whose memory comes from Arrow's memory pool (mimalloc or
    jemalloc), which keeps freed pages: column buffers of one table after
    another then reuse memory instead of faulting fresh pages in.  With
    ``spare`` set, its buffer comes from there when one fits, and goes back
    there when this object dies (no Arrow array holds it any more)."""
    cdef object _arrow_buffer
    cdef SpareBuffers spare

    def __dealloc__(self):
        if self.spare is not None and self._arrow_buffer is not None and not self._exports:
            self.spare.give(self._arrow_buffer, self.capacity)
        self.data = NULL            # owned by the Arrow buffer, not by malloc

    cdef int reserve(self, Py_ssize_t extra) except -1:
        cdef Py_ssize_t want = self.size + extra
        cdef Py_ssize_t cap, spare_cap = 0
        if want <= self.capacity:
            return 0
        if self._exports:
            raise BufferError("buffer is exported and cannot grow")
        cap = max(want, self.capacity * 2, 4096)
        if self.spare is not None and cap >= self.spare.min_bytes:
            kept = self.spare.take(cap, &spare_cap)
            if kept is not None:
                # every byte of the old room, as realloc keeps them: the record loops write rows
                # past `size` that a batch's commit counts later (full_row_fields grows the room
                # between them)
                if self.capacity:
                    memcpy(<uint8_t *><uintptr_t>kept.address, self.data, self.capacity)
                if self._arrow_buffer is not None:
                    self.spare.give(self._arrow_buffer, self.capacity)
                self._arrow_buffer = kept
                self.data = <uint8_t *><uintptr_t>kept.address
                self.capacity = spare_cap
                return 0
        if self._arrow_buffer is None:
            self._arrow_buffer = pyarrow().allocate_buffer(cap, resizable=True)
        else:
            self._arrow_buffer.resize(cap)
        self.data = <uint8_t *><uintptr_t>self._arrow_buffer.address
        self.capacity = cap
        return 0


cdef inline always_inline_int grow_put(_Growable g, const void *src, Py_ssize_t n) except -1:
    if g.size + n > g.capacity:
        g.reserve(n)
    if n:                       # (g.data may still be NULL when n is 0)
        memcpy(g.data + g.size, src, n)
    g.size += n
    return 0


cdef inline always_inline_int put_i32(_Growable g, int32_t v) except -1:
    return grow_put(g, &v, 4)


cdef inline uint8_t *reserve_tail(_Growable g, Py_ssize_t n, bint zero) except NULL:
    """Room for n more bytes at the end of g (zeroed if asked); returns where they start."""
    if g.size + n > g.capacity:
        g.reserve(n)
    if zero:
        memset(g.data + g.size, 0, n)
    return g.data + g.size


cdef extern from "copy_short.h":
    enum: KAFKAREC_COPY_SLACK
    void kafkarec_copy_short(uint8_t *dst, const uint8_t *src, Py_ssize_t n,
                             const uint8_t *src_end) noexcept nogil


# ---------------------------------------------------------------- bitmaps (LSB first)

cdef inline always_inline_int bits_put(_Growable g, Py_ssize_t i, bint bit) except -1:
    """Bit i, the one after the last, of a bitmap."""
    if (i & 7) == 0:
        if g.size + 1 > g.capacity:
            g.reserve(1)
        g.data[g.size] = 0
        g.size += 1
    if bit:
        g.data[i >> 3] |= <uint8_t>(1 << (i & 7))
    else:                       # (reserve_bits may have preset it)
        g.data[i >> 3] &= <uint8_t>~(1 << (i & 7))
    return 0


cdef Py_ssize_t bits_zeros(_Growable g, Py_ssize_t start, Py_ssize_t end) noexcept:
    cdef Py_ssize_t i, zeros = 0
    for i in range(start, end):
        if not (g.data[i >> 3] >> (i & 7)) & 1:
            zeros += 1
    return zeros


cdef inline int bits_cut(_Growable g, Py_ssize_t n) noexcept:
    """Keep the first n bits."""
    g.size = (n + 7) >> 3
    if n & 7:
        g.data[n >> 3] &= <uint8_t>((1 << (n & 7)) - 1)
    return 0


cdef inline uint8_t *reserve_bits(_Growable g, Py_ssize_t length, Py_ssize_t n, bint ones) except NULL:
    """Room for n more bits after the first `length`, preset to `ones` (the common value), so a
    row only touches its bit when it has the other one.  Also resets the unused bits of the last
    byte, which a batch that failed half way may have changed."""
    cdef Py_ssize_t want = bits_room(length, n)
    if want > g.capacity:
        g.reserve(want - g.size)
    preset_bits(g.data, length, n, ones)
    return g.data


cdef inline Py_ssize_t bits_room(Py_ssize_t length, Py_ssize_t n) noexcept nogil:
    """The bytes a bitmap of `length` bits needs for n more preset by preset_bits."""
    return ((length + n + 7) >> 3) + 1


cdef inline void preset_bits(uint8_t *data, Py_ssize_t length, Py_ssize_t n, bint ones) noexcept nogil:
    """reserve_bits on room already there (bits_room(length, n) bytes)."""
    cdef Py_ssize_t used = (length + 7) >> 3
    if length & 7:
        if ones:
            data[length >> 3] |= <uint8_t>(0xFF << (length & 7))
        else:
            data[length >> 3] &= <uint8_t>((1 << (length & 7)) - 1)
    memset(data + used, 0xFF if ones else 0, bits_room(length, n) - used)


# ---------------------------------------------------------------- the builder

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
    CK_I8 = 11
    CK_I16 = 12


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
    cdef Py_ssize_t nulls
    cdef _Growable values           # fixed-width values, a bool column's bits, binary data
    cdef _Growable offsets          # binary and list columns: int32, one more than the rows
    cdef _Growable valid            # validity bits of a nullable column
    cdef list children

    def __len__(self):
        return self.length

    def to_arrow(self):
        """The Arrow array of the rows so far; the builder starts over empty."""
        return col_finish(self)


cdef int col_width(int kind) noexcept:
    if kind == CK_I8:
        return 1
    if kind == CK_I16:
        return 2
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
    col.nulls = 0
    col.valid = _ArrowGrowable()
    col.values = _ArrowGrowable()
    if col.kind == CK_BIN or col.kind == CK_LIST:
        col.offsets = _ArrowGrowable()
        put_i32(col.offsets, 0)
    return 0


cdef int col_take_spare(_Column col, SpareBuffers spare) except -1:
    """col's buffers (not its children's) taken from, and given back to, ``spare`` (SpareBuffers)."""
    cdef _Growable g
    for g in (col.values, col.offsets, col.valid):
        if isinstance(g, _ArrowGrowable):
            (<_ArrowGrowable>g).spare = spare
    return 0


cdef _Column new_column(int kind, object arrow_type, bint nullable, list children=None, int role=0):
    if not CK_NULL <= kind <= CK_I16:
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


cdef inline always_inline_int col_ok(_Column col) except -1:
    """A valid row at the end of col (its value, items or fields already written)."""
    if col.nullable:
        bits_put(col.valid, col.length, True)
    col.length += 1
    return 0


cdef int col_null(_Column col) except -1:
    """A null at the end of col; under a null parent, a column that cannot be null gets a valid
    placeholder (zero, empty)."""
    cdef _Column ch
    cdef uint8_t zero[32]
    if col.nullable:
        bits_put(col.valid, col.length, False)
        col.nulls += 1
    if col.kind == CK_BOOL:
        bits_put(col.values, col.length, False)
    elif col.width:
        memset(zero, 0, 32)
        grow_put(col.values, zero, col.width)
    elif col.kind == CK_BIN:
        put_i32(col.offsets, <int32_t>col.values.size)
    elif col.kind == CK_LIST:
        put_i32(col.offsets, (<int32_t *>col.offsets.data)[col.length])
    elif col.kind == CK_STRUCT:
        for ch in col.children:
            col_null(ch)
    col.length += 1
    return 0


cdef int col_null_rows(_Column col, Py_ssize_t n) except -1:
    """n nulls at the end of a nullable binary column: col_null's rows in one pass."""
    cdef int32_t end = <int32_t>col.values.size
    cdef int32_t *o = <int32_t *>reserve_tail(col.offsets, n * 4, False)
    cdef Py_ssize_t k
    reserve_bits(col.valid, col.length, n, False)
    for k in range(n):
        o[k] = end
    return col_commit(col, n, n)


cdef int col_truncate(_Column col, Py_ssize_t n) except -1:
    """Drop the rows of col after the first n (a record that failed midway)."""
    cdef _Column ch
    if n > col.length:
        return 0
    # a struct's own row is appended after its fields, a list's after its items: children may hold
    # rows past the parent's length, so recurse even when the parent has none to drop
    if col.nullable:
        col.nulls -= bits_zeros(col.valid, n, col.length)
        bits_cut(col.valid, n)
    col.length = n
    if col.kind == CK_BOOL:
        bits_cut(col.values, n)
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


cdef inline always_inline_int col_put_fixed(_Column col, const void *value) except -1:
    grow_put(col.values, value, col.width)
    return col_ok(col)


cdef inline always_inline_int col_put_int(_Column col, int64_t v) except -1:
    """An integer into a column of 1, 2, 4 or 8 bytes (narrowed to its width)."""
    cdef int32_t v32
    cdef int16_t v16
    cdef int8_t v8
    if col.width == 8:
        grow_put(col.values, &v, 8)
    elif col.width == 4:
        v32 = <int32_t>v
        grow_put(col.values, &v32, 4)
    elif col.width == 2:
        v16 = <int16_t>v
        grow_put(col.values, &v16, 2)
    else:
        v8 = <int8_t>v
        grow_put(col.values, &v8, 1)
    return col_ok(col)


cdef inline always_inline_int col_put_bool(_Column col, bint value) except -1:
    bits_put(col.values, col.length, value)
    return col_ok(col)


cdef inline always_inline_int col_put_bin(_Column col, const uint8_t *p, int64_t n, const uint8_t *src_end) except -1:
    """The one binary append: n bytes at p, or a null when n < 0.  src_end: how far the bytes at
    p may be read (the copy reads whole blocks when it may)."""
    # (col.values and col.offsets through col: typed locals would cost reference counting)
    cdef int32_t end
    if n < 0:
        return col_null(col)
    if unlikely(n > INT32_LIMIT - col.values.size):
        raise ColumnOverflowError("binary column over 2 GiB")
    if unlikely(col.values.size + n + KAFKAREC_COPY_SLACK > col.values.capacity):
        col.values.reserve(n + KAFKAREC_COPY_SLACK)
    kafkarec_copy_short(col.values.data + col.values.size, p, n, src_end)
    col.values.size += n
    end = <int32_t>col.values.size
    if unlikely(col.offsets.size + 4 > col.offsets.capacity):
        col.offsets.reserve(4)
    memcpy(col.offsets.data + col.offsets.size, &end, 4)
    col.offsets.size += 4
    return col_ok(col)


cdef inline always_inline_int col_put_bytes(_Column col, bytes b) except -1:
    """col_put_bin of a bytes object's bytes."""
    cdef const uint8_t *p = <const uint8_t *>PyBytes_AS_STRING(b)
    return col_put_bin(col, p, len(b), p + len(b))


cdef inline always_inline_int col_close_list(_Column col) except -1:
    """A valid list row holding the items appended to the child since the previous row."""
    cdef Py_ssize_t items = (<_Column>col.children[0]).length
    if unlikely(items > INT32_LIMIT):
        raise ColumnOverflowError("list column over 2^31 items")
    put_i32(col.offsets, <int32_t>items)
    return col_ok(col)


cdef int col_commit(_Column col, Py_ssize_t rows, Py_ssize_t nulls) noexcept:
    """Count `rows` rows, `nulls` of them null, that a bulk writer put straight into col's reserved
    room (values, offsets and validity; a binary column's data size is the writer's to set)."""
    col.length += rows
    col.nulls += nulls
    if col.nullable:
        col.valid.size = (col.length + 7) >> 3
    if col.kind == CK_BIN or col.kind == CK_LIST:
        col.offsets.size += rows * 4
    elif col.kind == CK_BOOL:
        col.values.size = (col.length + 7) >> 3
    else:
        col.values.size += rows * col.width
    return 0


cdef object col_finish(_Column col):
    """The Arrow array of col's rows; col starts over empty."""
    pa = pyarrow()
    cdef _Column ch
    cdef Py_ssize_t n = col.length
    t = col.arrow_type
    validity = pa.py_buffer(col.valid) if col.nulls else None
    nulls = col.nulls
    if col.kind == CK_NULL:
        out = pa.nulls(n, t)
    elif col.kind == CK_BOOL or col.width:
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


# ---------------------------------------------------------------- raw room, without the GIL

cdef enum:
    ROOM_VALUES = 0
    ROOM_OFFSETS = 1
    ROOM_VALID = 2


cdef struct ColRoom:
    # A _Column's buffers as raw pointers, for a writer whose rows run without the GIL (a typed
    # decode: _avro.pxi).  room_load takes them from the column; the writer appends through the
    # room_* calls below (col_*'s layouts, the same rules); room_store hands the lengths back
    # before any _Column call touches the column again.  Growing a buffer is the one step that
    # takes the GIL back (Arrow's memory pool is reached through pyarrow).
    PyObject *col               # the _Column (kept alive by its owner)
    int kind
    int width
    int precision
    bint nullable
    Py_ssize_t length
    Py_ssize_t nulls
    uint8_t *v                  # values (fixed width, a bool column's bits, binary data)
    Py_ssize_t vsize
    Py_ssize_t vcap
    uint8_t *o                  # offsets: binary and list columns
    Py_ssize_t osize
    Py_ssize_t ocap
    uint8_t *b                  # validity bits
    Py_ssize_t bsize
    Py_ssize_t bcap
    ColRoom **kids              # a struct's fields or a list's element, rooms of the same writer
    Py_ssize_t nkids


cdef int room_load(ColRoom *r) except -1:
    """r: its column's buffers as they are now (r.col and r.kids set by the owner)."""
    cdef _Column col = <_Column>r.col
    r.kind = col.kind
    r.width = col.width
    r.precision = col.precision
    r.nullable = col.nullable
    r.length = col.length
    r.nulls = col.nulls
    r.v, r.vsize, r.vcap = col.values.data, col.values.size, col.values.capacity
    if col.offsets is not None:
        r.o, r.osize, r.ocap = col.offsets.data, col.offsets.size, col.offsets.capacity
    else:
        r.o, r.osize, r.ocap = NULL, 0, 0
    r.b, r.bsize, r.bcap = col.valid.data, col.valid.size, col.valid.capacity
    return 0


cdef int room_store(ColRoom *r) except -1:
    """The rows written through r, counted in its column."""
    cdef _Column col = <_Column>r.col
    col.length = r.length
    col.nulls = r.nulls
    col.values.size = r.vsize
    if col.offsets is not None:
        col.offsets.size = r.osize
    col.valid.size = r.bsize
    return 0


cdef int room_reserve(ColRoom *r, int which, Py_ssize_t extra) except -1:
    cdef _Column col = <_Column>r.col
    cdef _Growable g
    if which == ROOM_VALUES:
        g = col.values
        g.size = r.vsize
        g.reserve(extra)
        r.v, r.vcap = g.data, g.capacity
    elif which == ROOM_OFFSETS:
        g = col.offsets
        g.size = r.osize
        g.reserve(extra)
        r.o, r.ocap = g.data, g.capacity
    else:
        g = col.valid
        g.size = r.bsize
        g.reserve(extra)
        r.b, r.bcap = g.data, g.capacity
    return 0


cdef int room_grow(ColRoom *r, int which, Py_ssize_t extra) except -1 nogil:
    """Room for `extra` more bytes in one of r's buffers: the rare path, with the GIL."""
    with gil:
        room_reserve(r, which, extra)
    return 0


cdef inline always_inline_int room_put(ColRoom *r, const void *src, Py_ssize_t n) except -1 nogil:
    """n bytes at the end of r's values (col_put_fixed's write, without the row)."""
    if unlikely(r.vsize + n > r.vcap):
        room_grow(r, ROOM_VALUES, n)
    memcpy(r.v + r.vsize, src, n)
    r.vsize += n
    return 0


cdef inline always_inline_int room_put_offset(ColRoom *r, int32_t end) except -1 nogil:
    if unlikely(r.osize + 4 > r.ocap):
        room_grow(r, ROOM_OFFSETS, 4)
    memcpy(r.o + r.osize, &end, 4)
    r.osize += 4
    return 0


cdef inline always_inline_int room_bit(ColRoom *r, int which, bint bit) except -1 nogil:
    """Bit r.length of the validity bitmap or of a bool column's values (bits_put's rule)."""
    cdef Py_ssize_t i = r.length
    cdef uint8_t *bits
    if (i & 7) == 0:
        if which == ROOM_VALID:
            if unlikely(r.bsize + 1 > r.bcap):
                room_grow(r, ROOM_VALID, 1)
            r.b[r.bsize] = 0
            r.bsize += 1
        else:
            if unlikely(r.vsize + 1 > r.vcap):
                room_grow(r, ROOM_VALUES, 1)
            r.v[r.vsize] = 0
            r.vsize += 1
    bits = r.b if which == ROOM_VALID else r.v
    if bit:
        bits[i >> 3] |= <uint8_t>(1 << (i & 7))
    else:
        bits[i >> 3] &= <uint8_t>~(1 << (i & 7))
    return 0


cdef inline always_inline_int room_ok(ColRoom *r) except -1 nogil:
    """col_ok: a valid row at the end (its value, items or fields already written)."""
    if r.nullable:
        room_bit(r, ROOM_VALID, True)
    r.length += 1
    return 0


cdef int room_null(ColRoom *r) except -1 nogil:
    """col_null: a null at the end; a column that cannot be null gets a valid placeholder."""
    cdef uint8_t zero[32]
    cdef Py_ssize_t k
    if r.nullable:
        room_bit(r, ROOM_VALID, False)
        r.nulls += 1
    if r.kind == CK_BOOL:
        room_bit(r, ROOM_VALUES, False)
    elif r.width:
        memset(zero, 0, 32)
        room_put(r, zero, r.width)
    elif r.kind == CK_BIN:
        room_put_offset(r, <int32_t>r.vsize)
    elif r.kind == CK_LIST:
        room_put_offset(r, (<int32_t *>r.o)[r.length])
    elif r.kind == CK_STRUCT:
        for k in range(r.nkids):
            room_null(r.kids[k])
    r.length += 1
    return 0


cdef inline always_inline_int room_put_bool(ColRoom *r, bint value) except -1 nogil:
    room_bit(r, ROOM_VALUES, value)
    return room_ok(r)


cdef inline always_inline_int room_put_bin(ColRoom *r, const uint8_t *p, int64_t n,
                                           const uint8_t *src_end) except -1 nogil:
    """col_put_bin: n bytes at p (a null when n < 0); src_end: how far the bytes at p may be read."""
    if n < 0:
        return room_null(r)
    if unlikely(n > INT32_LIMIT - r.vsize):
        with gil:
            raise ColumnOverflowError("binary column over 2 GiB")
    if unlikely(r.vsize + n + KAFKAREC_COPY_SLACK > r.vcap):
        room_grow(r, ROOM_VALUES, n + KAFKAREC_COPY_SLACK)
    kafkarec_copy_short(r.v + r.vsize, p, n, src_end)
    r.vsize += n
    room_put_offset(r, <int32_t>r.vsize)
    return room_ok(r)


cdef inline always_inline_int room_close_list(ColRoom *r) except -1 nogil:
    """col_close_list: a valid list row of the items appended to its element since the last row."""
    cdef Py_ssize_t items = r.kids[0].length
    if unlikely(items > INT32_LIMIT):
        with gil:
            raise ColumnOverflowError("list column over 2^31 items")
    room_put_offset(r, <int32_t>items)
    return room_ok(r)
