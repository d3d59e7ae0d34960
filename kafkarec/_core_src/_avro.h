/* _avro.h: part of kafkarec._core (declared by _avro.pxi). */
#ifndef KAFKAREC_AVRO_H
#define KAFKAREC_AVRO_H

#include <stdint.h>
#include <string.h>
#include <Python.h>

/* 1 when [p, p+n) is well-formed UTF-8 (no overlongs, no surrogates, <= U+10FFFF):
   Arrow's string type requires it.  ASCII runs are checked 8 bytes at a time. */
static inline int kr_utf8_valid(const uint8_t *p, Py_ssize_t n)
{
    const uint8_t *end = p + n;
    while (p < end) {
        if (end - p >= 8) {
            uint64_t w;
            memcpy(&w, p, 8);
            if (!(w & 0x8080808080808080ULL)) { p += 8; continue; }
        }
        uint8_t b = p[0];
        if (b < 0x80) { p++; continue; }
        if (b >= 0xC2 && b <= 0xDF) {
            if (end - p < 2 || (p[1] & 0xC0) != 0x80) return 0;
            p += 2; continue;
        }
        if (b >= 0xE0 && b <= 0xEF) {
            if (end - p < 3 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80) return 0;
            if ((b == 0xE0 && p[1] < 0xA0) || (b == 0xED && p[1] > 0x9F)) return 0;
            p += 3; continue;
        }
        if (b >= 0xF0 && b <= 0xF4) {
            if (end - p < 4 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80) return 0;
            if ((b == 0xF0 && p[1] < 0x90) || (b == 0xF4 && p[1] > 0x8F)) return 0;
            p += 4; continue;
        }
        return 0;
    }
    return 1;
}

#endif /* KAFKAREC_AVRO_H */
