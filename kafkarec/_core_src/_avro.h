/* _avro.h: part of kafkarec._core (declared by _avro.pxi). */
#ifndef KAFKAREC_AVRO_H
#define KAFKAREC_AVRO_H

#include <stdint.h>
#include <string.h>
#include <Python.h>

/* 1 when the little-endian two's complement integer of `width` bytes (16 or 32) at `le`
   has at most `precision` decimal digits, i.e. |v| < 10^precision: Arrow's decimal types
   hold no more (Java's reader does not check; Spark's from_avro fails such a value). */
static inline int kr_decimal_fits(const uint8_t *le, int width, int precision)
{
    uint64_t mag[4] = {0, 0, 0, 0}, pow10[4] = {1, 0, 0, 0};
    int limbs = width / 8, i, k;
    memcpy(mag, le, (size_t)width);
    if (le[width - 1] & 0x80) {                 /* negative: two's complement magnitude */
        unsigned carry = 1;
        for (i = 0; i < limbs; i++) {
            uint64_t v = ~mag[i] + carry;
            carry = carry && v == 0;
            mag[i] = v;
        }
    }
    /* the common case (precision <= 19, a magnitude within 64 bits) without building
       10^precision in four limbs for every value */
    if (precision <= 19 && mag[1] == 0 && (limbs < 4 || (mag[2] == 0 && mag[3] == 0))) {
        static const uint64_t pow10_64[20] = {
            1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL, 10000000ULL,
            100000000ULL, 1000000000ULL, 10000000000ULL, 100000000000ULL, 1000000000000ULL,
            10000000000000ULL, 100000000000000ULL, 1000000000000000ULL, 10000000000000000ULL,
            100000000000000000ULL, 1000000000000000000ULL, 10000000000000000000ULL};
        return precision >= 0 && mag[0] < pow10_64[precision];
    }
    for (k = 0; k < precision; k++) {           /* 10^precision, at most 10^76 < 2^253 */
        unsigned __int128 carry = 0;
        for (i = 0; i < 4; i++) {
            unsigned __int128 v = (unsigned __int128)pow10[i] * 10 + carry;
            pow10[i] = (uint64_t)v;
            carry = v >> 64;
        }
    }
    for (i = 3; i >= 0; i--) {                  /* mag < pow10 */
        if (mag[i] != pow10[i])
            return mag[i] < pow10[i];
    }
    return 0;
}

#endif /* KAFKAREC_AVRO_H */
