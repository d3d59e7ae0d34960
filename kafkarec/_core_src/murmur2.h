/* MurmurHash2, 32-bit (Austin Appleby's public-domain algorithm), with the seed
   and the little-endian block loads Kafka's Utils.murmur2 uses: the hash behind
   the default partitioner's murmur2(key) & 0x7fffffff % partitions.  Unsigned
   arithmetic here; the caller reads the result as Java's signed int. */
#ifndef KAFKAREC_MURMUR2_H
#define KAFKAREC_MURMUR2_H

#include <stddef.h>
#include <stdint.h>

static inline uint32_t kafkarec_murmur2(const uint8_t *data, size_t len) {
    const uint32_t m = 0x5bd1e995u;
    uint32_t h = 0x9747b28cu ^ (uint32_t)len;
    size_t blocks = len / 4;
    for (size_t i = 0; i < blocks; i++) {
        const uint8_t *p = data + 4 * i;
        uint32_t k = (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
        k *= m;
        k ^= k >> 24;
        k *= m;
        h *= m;
        h ^= k;
    }
    const uint8_t *tail = data + 4 * blocks;
    switch (len & 3) {
        case 3: h ^= (uint32_t)tail[2] << 16; /* fall through */
        case 2: h ^= (uint32_t)tail[1] << 8;  /* fall through */
        case 1: h ^= (uint32_t)tail[0];
                h *= m;
    }
    h ^= h >> 13;
    h *= m;
    h ^= h >> 15;
    return h;
}

#endif
