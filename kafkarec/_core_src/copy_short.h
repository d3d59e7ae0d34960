/* copy_short.h: part of kafkarec._core (declared by _column.pxi). */
#ifndef KAFKAREC_COPY_SHORT_H
#define KAFKAREC_COPY_SHORT_H

#include <stdint.h>
#include <string.h>
#include <Python.h>
#include "always_inline.h"

/* The one copy of a value into a column: n bytes to dst, which has KAFKAREC_COPY_SLACK spare
   bytes after them.  Keys, values and strings are mostly short, and a libc call per value costs
   more than the copy: whole 32-byte blocks (inlined) when the source has them before src_end,
   else fixed-size copies the compiler inlines (two overlapping ones cover 4..16 bytes), memcpy
   past that. */
#define KAFKAREC_COPY_SLACK 32
static inline KR_ALWAYS_INLINE void kafkarec_copy_short(uint8_t *dst, const uint8_t *src, Py_ssize_t n,
                                                        const uint8_t *src_end) {
    if (n <= 256 && src_end - src >= ((n + 31) & ~(Py_ssize_t)31)) {
        Py_ssize_t i;
        for (i = 0; i < n; i += 32) memcpy(dst + i, src + i, 32);
    } else if (n > 16) {
        memcpy(dst, src, (size_t)n);
    } else if (n >= 8) {
        memcpy(dst, src, 8);
        memcpy(dst + n - 8, src + n - 8, 8);
    } else if (n >= 4) {
        memcpy(dst, src, 4);
        memcpy(dst + n - 4, src + n - 4, 4);
    } else {
        while (n > 0) {
            n--;
            dst[n] = src[n];
        }
    }
}

#endif /* KAFKAREC_COPY_SHORT_H */
