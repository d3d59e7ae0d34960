/* A record key's 128-bit digest, for the keyed-state map (_keymap.pxi).

   MurmurHash3's x64 128-bit variant (Austin Appleby's public-domain
   algorithm): non-cryptographic, one pass over the key, 16 bytes per round.
   Kafka's log cleaner keys its offset map by MD5 for the same purpose; any
   128-bit digest makes an accidental collision between two keys of one
   partition negligible (2^-128 per pair), and this one is an order of
   magnitude faster than MD5.  Little-endian loads, as the reference code
   reads blocks on x86-64 and arm64. */
#ifndef KAFKAREC_KEY_DIGEST_H
#define KAFKAREC_KEY_DIGEST_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint64_t kafkarec_rotl64(uint64_t x, int r) {
    return (x << r) | (x >> (64 - r));
}

static inline uint64_t kafkarec_fmix64(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ULL;
    k ^= k >> 33;
    return k;
}

static inline uint64_t kafkarec_load_le64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

static inline void kafkarec_key_digest(const uint8_t *data, size_t len, uint64_t seed,
                                       uint64_t out[2]) {
    const uint64_t c1 = 0x87c37b91114253d5ULL, c2 = 0x4cf5ad432745937fULL;
    uint64_t h1 = seed, h2 = seed, k1, k2;
    size_t blocks = len / 16, i;
    const uint8_t *tail;
    for (i = 0; i < blocks; i++) {
        k1 = kafkarec_load_le64(data + 16 * i);
        k2 = kafkarec_load_le64(data + 16 * i + 8);
        k1 *= c1; k1 = kafkarec_rotl64(k1, 31); k1 *= c2; h1 ^= k1;
        h1 = kafkarec_rotl64(h1, 27); h1 += h2; h1 = h1 * 5 + 0x52dce729;
        k2 *= c2; k2 = kafkarec_rotl64(k2, 33); k2 *= c1; h2 ^= k2;
        h2 = kafkarec_rotl64(h2, 31); h2 += h1; h2 = h2 * 5 + 0x38495ab5;
    }
    tail = data + 16 * blocks;
    k1 = 0;
    k2 = 0;
    switch (len & 15) {
    case 15: k2 ^= (uint64_t)tail[14] << 48; /* fall through */
    case 14: k2 ^= (uint64_t)tail[13] << 40; /* fall through */
    case 13: k2 ^= (uint64_t)tail[12] << 32; /* fall through */
    case 12: k2 ^= (uint64_t)tail[11] << 24; /* fall through */
    case 11: k2 ^= (uint64_t)tail[10] << 16; /* fall through */
    case 10: k2 ^= (uint64_t)tail[9] << 8;   /* fall through */
    case 9:  k2 ^= (uint64_t)tail[8];
             k2 *= c2; k2 = kafkarec_rotl64(k2, 33); k2 *= c1; h2 ^= k2;
             /* fall through */
    case 8:  k1 ^= (uint64_t)tail[7] << 56;  /* fall through */
    case 7:  k1 ^= (uint64_t)tail[6] << 48;  /* fall through */
    case 6:  k1 ^= (uint64_t)tail[5] << 40;  /* fall through */
    case 5:  k1 ^= (uint64_t)tail[4] << 32;  /* fall through */
    case 4:  k1 ^= (uint64_t)tail[3] << 24;  /* fall through */
    case 3:  k1 ^= (uint64_t)tail[2] << 16;  /* fall through */
    case 2:  k1 ^= (uint64_t)tail[1] << 8;   /* fall through */
    case 1:  k1 ^= (uint64_t)tail[0];
             k1 *= c1; k1 = kafkarec_rotl64(k1, 31); k1 *= c2; h1 ^= k1;
    }
    h1 ^= (uint64_t)len;
    h2 ^= (uint64_t)len;
    h1 += h2;
    h2 += h1;
    h1 = kafkarec_fmix64(h1);
    h2 = kafkarec_fmix64(h2);
    h1 += h2;
    h2 += h1;
    out[0] = h1;
    out[1] = h2;
}

#endif
