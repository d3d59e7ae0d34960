# Return types that make a `cdef inline` function always inlined (see always_inline.h for why).
from libc.stdint cimport int32_t, int64_t, uint8_t

cdef extern from "always_inline.h":
    ctypedef int always_inline_int "KR_ALWAYS_INLINE int"
    ctypedef bint always_inline_bint "KR_ALWAYS_INLINE int"
    ctypedef int32_t always_inline_i32 "KR_ALWAYS_INLINE int32_t"
    ctypedef int64_t always_inline_i64 "KR_ALWAYS_INLINE int64_t"
    ctypedef Py_ssize_t always_inline_ssize "KR_ALWAYS_INLINE Py_ssize_t"
    ctypedef const uint8_t *always_inline_cptr "KR_ALWAYS_INLINE const uint8_t *"
