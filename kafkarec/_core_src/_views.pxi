# The view layout of key and value (iter_arrow's value_layout="view"): Arrow's binary_view, where
# each row is a 16-byte view (the length; up to 12 bytes inline, zero padded; else the first 4
# bytes, a buffer index and an offset).  A long key or value of an uncompressed batch in bytes the
# array may hold (the window in memory) is not copied: its view points there (put_view).  One whose
# bytes the array may not hold is copied into the column's own buffer, the array's variadic buffer
# 0, and viewed there: a memory map's (which may shrink under a batch an engine holds: SIGBUS) and
# a compressed batch's, decompressed into the read's one scratch buffer, by the record loops
# (put_view_copied); a legacy record's by the GIL's path (view_put_copy).  The key and value
# _Columns of this layout keep the views in `values` (16 bytes a row) and no offsets.

cdef enum:
    VIEW_SIZE = 16
    VIEW_INLINE = 12            # the longest key or value held in its view
    VIEW_COPIED = 0             # the variadic buffer of the bytes copied (view_put_copy)


cdef inline always_inline_int put_view(uint8_t *views, uint8_t **valid, Py_ssize_t *nulls,
                                       Py_ssize_t *counted, Py_ssize_t row, const uint8_t *p,
                                       int32_t n, const uint8_t *base, int32_t index) noexcept nogil:
    """Row `row`'s view of the n bytes at p (p - base into variadic buffer `index`), its room
    reserved by the caller; a null (n < 0) a zero view, its bit cleared (the bits are preset to
    valid) and counted.  `counted` adds the bytes referred to (the chunk's byte limit)."""
    cdef uint8_t *d = views + row * VIEW_SIZE
    cdef int32_t at
    if likely(n >= 0):
        memcpy(d, &n, 4)
        if n <= VIEW_INLINE:
            memset(d + 4, 0, VIEW_INLINE)
            if n:
                memcpy(d + 4, p, n)
        else:
            memcpy(d + 4, p, 4)
            memcpy(d + 8, &index, 4)
            at = <int32_t>(p - base)
            memcpy(d + 12, &at, 4)
        counted[0] += n
    else:
        memset(d, 0, VIEW_SIZE)
        valid[0][row >> 3] &= <uint8_t>~(1 << (row & 7))
        nulls[0] += 1
    return 0


cdef inline always_inline_int put_view_copied(uint8_t *views, uint8_t **valid, Py_ssize_t *nulls,
                                              Py_ssize_t *counted, Py_ssize_t row, const uint8_t *p,
                                              int32_t n, uint8_t *copy, Py_ssize_t *copy_at,
                                              const uint8_t *end) noexcept nogil:
    """put_view of bytes that may shrink under the read (a memory map): a long key or value copied
    to copy[copy_at] (copy_at moved past it; room checked by the caller, and KAFKAREC_COPY_SLACK
    after it) and viewed there, in variadic buffer VIEW_COPIED; a short one or a null as put_view."""
    cdef uint8_t *d
    cdef int32_t at
    if n > VIEW_INLINE:
        d = views + row * VIEW_SIZE
        at = <int32_t>copy_at[0]
        kafkarec_copy_short(copy + at, p, n, end)
        copy_at[0] += n
        memcpy(d, &n, 4)
        memcpy(d + 4, p, 4)
        memset(d + 8, 0, 4)             # VIEW_COPIED
        memcpy(d + 12, &at, 4)
        counted[0] += n
        return 0
    return put_view(views, valid, nulls, counted, row, p, n, p, VIEW_COPIED)


cdef int view_put_copy(_Column col, _Growable copied, Py_ssize_t *counted, const uint8_t *p,
                       int32_t n) except -1:
    """A row at the end of a view column whose n bytes at p are copied (into `copied`, the array's
    variadic buffer VIEW_COPIED) when they do not fit the view: the GIL's path of legacy records."""
    cdef uint8_t *d
    cdef int32_t at
    cdef uint8_t *valid
    cdef Py_ssize_t nulls = 0
    if n > VIEW_INLINE:
        if copied.size + n > INT32_LIMIT:
            raise ColumnOverflowError("binary_view column's copied bytes over 2 GiB")
        at = <int32_t>copied.size
        grow_put(copied, p, n)
        d = reserve_tail(col.values, VIEW_SIZE, False)
        put_view(d - col.length * VIEW_SIZE, &valid, &nulls, counted, col.length, p, n,
                 p - at, VIEW_COPIED)
    else:
        d = reserve_tail(col.values, VIEW_SIZE, False)
        if n < 0:
            memset(d, 0, VIEW_SIZE)
        else:
            put_view(d - col.length * VIEW_SIZE, &valid, &nulls, counted, col.length, p, n, p, 0)
    col.values.size += VIEW_SIZE
    bits_put(col.valid, col.length, n >= 0)
    if n < 0:
        col.nulls += 1
    col.length += 1
    return 0


cdef int view_commit(_Column col, Py_ssize_t rows, Py_ssize_t nulls) noexcept:
    """col_commit of a view column: `rows` views a record loop wrote into its reserved room."""
    col.length += rows
    col.nulls += nulls
    col.valid.size = (col.length + 7) >> 3
    col.values.size += rows * VIEW_SIZE
    return 0


cdef int view_truncate(_Column col, Py_ssize_t n, Py_ssize_t *counted) noexcept:
    """col_truncate of a view column; `counted` less the bytes the views dropped refer to."""
    cdef Py_ssize_t i
    cdef int32_t length
    if n >= col.length:
        return 0
    for i in range(n, col.length):
        memcpy(&length, col.values.data + i * VIEW_SIZE, 4)
        counted[0] -= length
    col.nulls -= bits_zeros(col.valid, n, col.length)
    bits_cut(col.valid, n)
    col.length = n
    col.values.size = n * VIEW_SIZE
    return 0


cdef object view_finish(_Column col, _Growable copied, list sources):
    """The binary_view array of a view column's rows: its views, its copied bytes (buffer 0) and
    the buffers its views point into (`sources`, from buffer 1 on); col starts over empty."""
    pa = pyarrow()
    cdef Py_ssize_t n = col.length
    validity = pa.py_buffer(col.valid) if col.nulls else None
    out = pa.Array.from_buffers(pa.binary_view(), n, [validity, pa.py_buffer(col.values),
                                                      pa.py_buffer(copied)] + sources,
                                null_count=col.nulls)
    col_reset(col)
    return out
