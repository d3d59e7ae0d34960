# Zero-copy ownership of a buffer: the caller's bytes/bytearray/memoryview/mmap
# or a decompressed payload.  Batches and records keep a reference to the
# _Buffer they point into, so slices stay valid as long as they live.

@cython.final
cdef class _Buffer:
    cdef Py_buffer view
    cdef const uint8_t *ptr
    cdef Py_ssize_t size
    cdef bint acquired

    def __dealloc__(self):
        if self.acquired:
            PyBuffer_Release(&self.view)
            self.acquired = False


cdef _Buffer buffer_of(object obj):
    cdef _Buffer b = _Buffer.__new__(_Buffer)
    try:
        PyObject_GetBuffer(obj, &b.view, PyBUF_SIMPLE)
    except BufferError as exc:
        raise TypeError(f"kafkarec needs a contiguous bytes-like buffer, not {type(obj).__name__}: {exc}") from None
    b.acquired = True
    b.ptr = <const uint8_t *>b.view.buf
    b.size = b.view.len
    return b


cdef inline object view_of(const uint8_t *p, Py_ssize_t n):
    """A read-only memoryview over n bytes at p (no copy; the owner must outlive it)."""
    return PyMemoryView_FromMemory(<char *>p, n, PyBUF_READ)
