# The key bound (iter_arrow's ``keys``, the readers' key pushdown): a record whose key is not one
# of the set is scanned (its offset still checked) and never copied, so other keys' values, headers
# and rows are never built; a null key is in no set.  The record loops test a key against the set's
# KeyTable (_rows.pxd) without the GIL.

from libc.string cimport memcmp
from cpython.mem cimport PyMem_Malloc, PyMem_Free


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
