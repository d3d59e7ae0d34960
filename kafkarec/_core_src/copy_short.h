/* copy_short.h: part of kafkarec._core (included by the .pxi that declares it). */
#ifndef KAFKAREC_COPY_SHORT_H
#define KAFKAREC_COPY_SHORT_H

#include <stdint.h>
#include <string.h>
#include <Python.h>

/* Copy n bytes to dst, which has COPY_SLACK spare bytes after them: whole
   32-byte blocks (inlined, no call) when the source has them before
   src_end, else memcpy. */
#define KAFKAREC_COPY_SLACK 32
static inline void kafkarec_copy_short(uint8_t *dst, const uint8_t *src, Py_ssize_t n,
                                              const uint8_t *src_end) {
    if (n <= 256 && src_end - src >= ((n + 31) & ~(Py_ssize_t)31)) {
        Py_ssize_t i;
        for (i = 0; i < n; i += 32) memcpy(dst + i, src + i, 32);
    } else {
        memcpy(dst, src, (size_t)n);
    }
}

#endif /* KAFKAREC_COPY_SHORT_H */
