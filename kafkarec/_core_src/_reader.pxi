# The one bounds-checked reader every decode goes through.
#
# A Cursor walks [start, end) of a buffer owned by a _Buffer.  `origin` is
# the absolute byte position of `start` in the caller's data, so errors can
# name the byte; for a decompressed payload `origin` is the batch position and
# the offset inside the payload is reported separately.

cdef extern from *:
    # Cython's branch hints (__builtin_expect), for error checks in hot loops.
    bint likely(bint) nogil
    bint unlikely(bint) nogil


cdef struct Cursor:
    const uint8_t *start
    const uint8_t *pos
    const uint8_t *end
    Py_ssize_t origin
    bint decompressed
    bint strict


cdef inline void cursor_init(Cursor *c, const uint8_t *start, Py_ssize_t length,
                             Py_ssize_t origin, bint decompressed, bint strict) noexcept nogil:
    c.start = start
    c.pos = start
    c.end = start + length
    c.origin = origin
    c.decompressed = decompressed
    c.strict = strict


cpdef str value_problem(object position, str reason):
    """The one wording of a typed row's error (Avro, Protobuf, JSON Schema, the registry):
    where in the record's value bytes (framing included) and why."""
    return f"at byte {position} of the value: {reason}"


cdef int cursor_fail(const Cursor *c, const uint8_t *at, object cls, str reason) except -1:
    """Raise `cls` for a problem found at byte `at` of the cursor's buffer."""
    cdef Py_ssize_t rel = at - c.start
    if c.decompressed:
        raise cls(reason, c.origin, batch_position=c.origin, decompressed_position=rel)
    raise cls(reason, c.origin + rel)


cdef int cursor_short(const Cursor *c, Py_ssize_t n, str what, object cls=InvalidRecordError,
                      str where=" in the batch") except -1:
    cursor_fail(c, c.pos, cls, f"{what} needs {n} bytes but only {c.end - c.pos} remain{where}")
    return -1


cdef inline const uint8_t *span_take(const uint8_t **pos, const uint8_t *end, int64_t n) noexcept nogil:
    """The one bounds check under every read of n bytes (cursors, Avro, Protobuf): a pointer to them,
    with *pos moved past, or NULL with *pos unchanged when fewer than n remain or n is negative."""
    cdef const uint8_t *p = pos[0]
    # one unsigned compare covers n < 0 too: every cursor keeps pos <= end (all moves come here)
    if unlikely(<uint64_t>n > <uint64_t>(end - p)):
        return NULL
    pos[0] = p + n
    return p


cdef inline const uint8_t *cursor_take(Cursor *c, Py_ssize_t n, str what) except NULL:
    """Consume n bytes and return a pointer to them, or raise if they are not there."""
    cdef const uint8_t *p = span_take(&c.pos, c.end, n)
    if unlikely(p == NULL):
        cursor_short(c, n, what)
    return p


cdef inline const uint8_t *cursor_take_as(Cursor *c, Py_ssize_t n, str what, object cls) except NULL:
    """cursor_take raising `cls` (say InternalRecordError for an internal topic's key or value)."""
    cdef const uint8_t *p = span_take(&c.pos, c.end, n)
    if unlikely(p == NULL):
        cursor_short(c, n, what, cls, "")
    return p
