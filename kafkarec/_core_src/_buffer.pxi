from libc.stdlib cimport malloc, realloc, free

# Zero-copy ownership of a buffer: the caller's bytes/bytearray/memoryview/mmap
# or a decompressed payload.  Batches and records keep a reference to the
# _Buffer they point into, so slices stay valid as long as they live.

@cython.final
cdef class _Buffer:
    cdef Py_buffer view
    cdef const uint8_t *ptr
    cdef Py_ssize_t size
    cdef Py_ssize_t origin      # the file position of ptr[0] (iter_batches' origin; else 0)
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


from cpython.bytearray cimport PyByteArray_FromStringAndSize, PyByteArray_GET_SIZE, PyByteArray_AS_STRING


@cython.final
@cython.auto_pickle(False)
cdef class _Scratch:
    """The one output buffer of a read's decompressed records sections, reused batch after
    batch.  A read into Arrow copies a batch's records out before it decompresses the next,
    so one buffer serves every batch.  A new buffer a batch is at the allocator's mercy: where
    it comes from fresh pages, their faults cost a third of the zstd decode (150 KB batches in
    a new process: 0.28 CPU-s per million rows into new buffers, 0.19 into this one;
    docs/performance.md).  Owned by one read and never shared with another read or thread.  A
    bigger need gets a new buffer rather than a resize: the last batch's record iterator may
    still hold a view of the old one."""
    cdef bytearray data

    cdef object room(self, Py_ssize_t n):
        """A writable view of the first n bytes (their contents undefined)."""
        if self.data is None or PyByteArray_GET_SIZE(self.data) < n:
            self.data = PyByteArray_FromStringAndSize(NULL, n)
        return memoryview(self.data)[:n]

    cdef inline char *start(self) noexcept:
        """Where room()'s view starts."""
        return PyByteArray_AS_STRING(self.data)

    cdef inline Py_ssize_t size(self) noexcept:
        return 0 if self.data is None else PyByteArray_GET_SIZE(self.data)


@cython.auto_pickle(False)
cdef class _Growable:
    """A growable C byte buffer; exposes the buffer protocol so pyarrow can own it
    without a copy."""
    cdef uint8_t *data
    cdef Py_ssize_t size
    cdef Py_ssize_t capacity
    cdef Py_ssize_t _exports

    def __dealloc__(self):
        free(self.data)

    def __reduce__(self):
        # Cython's generated pickling would turn the raw ``data`` pointer into bytes as if it
        # were a C string (a crash on NULL or unterminated memory): a buffer is not state to copy
        raise TypeError(f"{type(self).__name__} is raw memory: it cannot be pickled or copied")

    def __getbuffer__(self, Py_buffer *view, int flags):
        if self.data == NULL:
            self.reserve(1)      # consumers such as pyarrow need a non-NULL pointer
        PyBuffer_FillInfo(view, self, self.data, self.size, 1, flags)
        self._exports += 1

    def __releasebuffer__(self, Py_buffer *view):
        self._exports -= 1

    cdef int reserve(self, Py_ssize_t extra) except -1:
        cdef Py_ssize_t want = self.size + extra
        cdef Py_ssize_t cap
        cdef uint8_t *grown
        if want <= self.capacity:
            return 0
        if self._exports:
            raise BufferError("buffer is exported and cannot grow")
        cap = max(want, self.capacity * 2, 4096)
        grown = <uint8_t *>realloc(self.data, cap)
        if grown == NULL:
            raise MemoryError()
        self.data = grown
        self.capacity = cap
        return 0


