# Checksums.  v2 batches use CRC-32C (Castagnoli) from the `crc32c` package,
# which picks the CPU's CRC instruction and releases the GIL on large inputs;
# legacy v0/v1 messages use plain CRC-32 (IEEE) from zlib.  Nothing here is
# computed in Python.
import crc32c as _crc32c_module
import zlib as _zlib

cdef object _crc32c = _crc32c_module.crc32c
cdef object _crc32 = _zlib.crc32

CRC32C_HARDWARE = bool(getattr(_crc32c_module, "hardware_based", False))


# The same CRC-32C without the GIL, for a run of batches decoded in one nogil section
# (v2_run): the function the crc32c package picked for this CPU (hardware or its software
# slicing) is called directly, as its own crc32c() calls it, taken from the package's module
# state (its exported get_state()).  The package has no C API, so the pointer is only used
# after it gives the same CRC as the package's Python call on a probe; otherwise it stays NULL
# and every batch's CRC goes through crc32c() with the GIL.
cdef enum:
    CRC32C_RELEASE_BYTES = 32 * 1024    # (the crc32c package's MIN_BUFSIZE_FOR_AUTOMATIC_RELEASE)

ctypedef uint32_t (*Crc32cFunction)(uint32_t crc, const unsigned char *data, unsigned long length) noexcept nogil

cdef extern from "<dlfcn.h>" nogil:
    ctypedef struct Dl_info:
        const char *dli_fname
        void *dli_fbase
    void *dlopen(const char *filename, int flags)
    void *dlsym(void *handle, const char *symbol)
    int dlclose(void *handle)
    int dladdr(const void *addr, Dl_info *info)
    enum:
        RTLD_NOW
        RTLD_NOLOAD

#: The crc32c releases whose module state (CRC32CState) starts with the CRC function, as read in
#: their sources (2.7, which added get_state(), to 2.9): another release keeps every CRC on the
#: package's Python call until its layout is read and added here.
CRC32C_STATE_RELEASES = ((2, 7), (2, 9))

ctypedef void *(*Crc32cGetState)(object module)

cdef Crc32cFunction crc32c_nogil_fn = NULL


cdef bint _crc32c_state_known():
    """Whether the installed crc32c is one of CRC32C_STATE_RELEASES."""
    import re
    try:
        from importlib.metadata import version
        found = re.match(r"(\d+)\.(\d+)", version("crc32c"))
    except Exception:
        return False
    if found is None:
        return False
    release = (int(found.group(1)), int(found.group(2)))
    return CRC32C_STATE_RELEASES[0] <= release <= CRC32C_STATE_RELEASES[1]


cdef Crc32cFunction _find_crc32c_function():
    cdef void *lib
    cdef Crc32cGetState get_state
    cdef void *state
    cdef Crc32cFunction fn
    cdef Dl_info at_get_state, at_fn
    cdef bytes probe = bytes(range(256)) * 3 + b"123456789"
    if not _crc32c_state_known():
        return NULL
    try:
        ext = _crc32c_module._crc32c if hasattr(_crc32c_module, "_crc32c") else None
        if ext is None:
            import importlib
            ext = importlib.import_module("crc32c._crc32c")
        path = ext.__file__.encode()
    except Exception:
        return NULL
    lib = dlopen(path, RTLD_NOW | RTLD_NOLOAD)      # (already loaded: this only finds it)
    if lib == NULL:
        return NULL
    get_state = <Crc32cGetState>dlsym(lib, "get_state")
    dlclose(lib)                                     # (the module keeps it loaded)
    if get_state == NULL:
        return NULL
    state = get_state(ext)
    if state == NULL:
        return NULL
    fn = (<Crc32cFunction *>state)[0]
    # called only when it is code of the package's own library (where get_state is): a state
    # laid out otherwise holds no such address in its first field, and nothing is called
    if (fn == NULL or dladdr(<void *>get_state, &at_get_state) == 0 or dladdr(<void *>fn, &at_fn) == 0
            or at_fn.dli_fbase != at_get_state.dli_fbase):
        return NULL
    for n in (0, 1, 9, 255, len(probe)):
        if (fn(<uint32_t>0xFFFFFFFF, <const unsigned char *>probe, n) ^ <uint32_t>0xFFFFFFFF) != _crc32c(probe[:n]):
            return NULL
    return fn


cdef void _set_crc32c_nogil():
    global crc32c_nogil_fn
    crc32c_nogil_fn = _find_crc32c_function()


_set_crc32c_nogil()

#: whether batch runs check CRCs without the GIL (the crc32c package's function was found)
CRC32C_NOGIL = crc32c_nogil_fn != NULL


cdef inline uint32_t crc32c_nogil(const uint8_t *p, Py_ssize_t n) noexcept nogil:
    """The CRC-32C of n bytes at p (crc32c_nogil_fn, which is not NULL), as the package's
    crc32c() computes it: its function between the two inversions."""
    return crc32c_nogil_fn(<uint32_t>0xFFFFFFFF, p, <unsigned long>n) ^ <uint32_t>0xFFFFFFFF


cdef uint32_t crc32c_of(const uint8_t *p, Py_ssize_t n) except? 0xFFFFFFFF:
    cdef uint32_t crc
    if crc32c_nogil_fn == NULL:
        return <uint32_t>_crc32c(view_of(p, n))
    # the package's function without a Python call; the GIL let go from the size at which the
    # package's crc32c() lets it go
    if n >= CRC32C_RELEASE_BYTES:
        with nogil:
            crc = crc32c_nogil(p, n)
        return crc
    return crc32c_nogil(p, n)


cdef uint32_t crc32_of(const uint8_t *p, Py_ssize_t n) except? 0xFFFFFFFF:
    return <uint32_t>_crc32(view_of(p, n))


def crc32c(data, /) -> int:
    """CRC-32C of a bytes-like object, as Kafka's v2 batches use it."""
    return <uint32_t>_crc32c(data)
