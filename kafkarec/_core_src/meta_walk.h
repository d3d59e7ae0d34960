/* meta_walk.h: part of kafkarec._core (declared by _records.pxi): the meta-only walker's loop over
 * the records that end KR_WALK_SLACK bytes or more before the records section's end.
 *
 * The rule is walk_v2_meta's: accept only a record scan_v2_record accepts, with the same offset
 * and timestamp, and stop at the first other one without moving past it (the scanner then reads
 * it).  Here that rule costs fewer checks than the scanner's because of two facts:
 *
 * - reads move forward only (a null key, value or header value moves nothing), so a record whose
 *   fields end exactly at its declared end never read past it: each varint and each length was
 *   then inside the record, as the scanner reads them.  A field's own bound check is only needed
 *   to keep the reads inside memory, not to decide the record.
 * - the record ends KR_WALK_SLACK bytes or more before the section's end, and no read goes more
 *   than 20 bytes past the record's end: its body starts at or before its end, and the reads up to
 *   the first checked length take at most 1 + 10 + 5 + 5 bytes of it (attributes, timestamp,
 *   offset, key length); after a checked length, which ends within the record, at most 10 (a
 *   length, or the header count and a header key's length).  So a varint is read with no bound,
 *   and the only checks are that each skipped length ends within the record and that the fields
 *   end at its end.
 *
 * The scanner's header-count rules (not negative, not past the record's end) reduce to "not
 * negative": a header takes 2 bytes at least, so a count past the record's end runs the loop past
 * it and is stopped there.  A negative key, value or header value length (other than -1 too) is a
 * null, as in the scanner's lenient read; a negative size or header key length stops.
 *
 * The batch's last record is not walked here (Kafka's check for bytes left after it needs the
 * section's end), nor one ending in the slack: walk_v2_meta_records reads those with every bound
 * checked.  Offsets and timestamps are the scanner's: base + delta, wrapping (two's complement);
 * the caller puts the batch's max timestamp in place of LOG_APPEND_TIME batches' timestamps. */
#ifndef KAFKAREC_META_WALK_H
#define KAFKAREC_META_WALK_H

#include <stdint.h>
#include <string.h>
#include <Python.h>
#include "always_inline.h"
#include "prefetch.h"

#define KR_WALK_SLACK 32

#if defined(__GNUC__)
#define KR_LIKELY(x) __builtin_expect(!!(x), 1)
#define KR_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define KR_LIKELY(x) (x)
#define KR_UNLIKELY(x) (x)
#endif

/* The rare varints, of 3 bytes or more, out of the walk's loop (inlined at each of its reads,
 * their registers made it spill its own): the position after the varint at q and its raw value,
 * by take_varint's non-strict rule (at most 5 bytes, a 5th byte's bits past bit 31 dropped) and
 * take_varlong's (at most 10 bytes); pos 0 when it is too long.  Returned in two registers. */
typedef struct { uintptr_t pos; uint32_t value; } KrVarint;
typedef struct { uintptr_t pos; uint64_t value; } KrVarlong;

#if defined(__GNUC__)
#define KR_COLD __attribute__((noinline, cold))
#else
#define KR_COLD
#endif

static KR_COLD KrVarint kr_varint_long(uintptr_t q) {
    const uint8_t *p = (const uint8_t *)q;
    KrVarint r = {0, 0};
    uint32_t v = 0;
    int i;
    for (i = 0; i < 5; i++) {
        uint32_t b = p[i];
        v |= (b & 0x7F) << (7 * i);
        if (b < 0x80) {
            r.pos = q + i + 1;
            r.value = v;
            return r;
        }
    }
    return r;
}

static KR_COLD KrVarlong kr_varlong_long(uintptr_t q) {
    const uint8_t *p = (const uint8_t *)q;
    KrVarlong r = {0, 0};
    uint64_t v = 0;
    int i;
    for (i = 0; i < 10; i++) {
        uint64_t b = p[i];
        v |= (b & 0x7F) << (7 * i);
        if (b < 0x80) {
            r.pos = q + i + 1;
            r.value = v;
            return r;
        }
    }
    return r;
}

/* Read the raw (zig-zag) varint at q into out (uint32_t or uint64_t) and move q past it, with no
 * bound (see above); goto fail when it is too long.  One- and two-byte ones inline. */
#define KR_VARINT_LONG_uint32_t(q) kr_varint_long(q)
#define KR_VARINT_LONG_uint64_t(q) kr_varlong_long(q)
#define KR_VARINT_LONG_TYPE_uint32_t KrVarint
#define KR_VARINT_LONG_TYPE_uint64_t KrVarlong
#define KR_RAW_VARINT(type, q, out, fail)                                                     \
    do {                                                                                      \
        type b0_ = ((const uint8_t *)(q))[0], b1_;                                            \
        if (KR_LIKELY(b0_ < 0x80)) {                                                          \
            (out) = b0_;                                                                      \
            (q) += 1;                                                                         \
        } else if (KR_LIKELY((b1_ = ((const uint8_t *)(q))[1]) < 0x80)) {                     \
            (out) = b0_ + (b1_ << 7) - 0x80;                                                  \
            (q) += 2;                                                                         \
        } else {                                                                              \
            KR_VARINT_LONG_TYPE_##type r_ = KR_VARINT_LONG_##type(q);                         \
            if (KR_UNLIKELY(r_.pos == 0))                                                     \
                goto fail;                                                                    \
            (q) = r_.pos;                                                                     \
            (out) = r_.value;                                                                 \
        }                                                                                     \
    } while (0)

/* Skip the length-prefixed bytes at q (key, value, header key or value): q moves past the length
 * varint and, unless it is negative, that many bytes; goto fail when it is too long, negative and
 * not `nullable` (a header key), or ends past rec_end.  A length that is not negative (even, in
 * zig-zag) and of one byte (under 64: keys, headers) or two (under 8 KiB: values) takes one test
 * of its first byte's continuation and sign bits: 2 bytes, u = b0 - 0x80 + (b1 << 7), and
 * u >> 1 = (b0 >> 1) - 0x40 + (b1 << 6) as b0 is even. */
#define KR_SKIP_LENGTH(q, rec_end, nullable, fail)                                            \
    do {                                                                                      \
        uint32_t u_ = ((const uint8_t *)(q))[0], b1_;                                         \
        if (KR_LIKELY((u_ & 0x81) == 0)) {                                                    \
            (q) += 1 + (u_ >> 1);                                                             \
        } else if ((u_ & 0x81) == 0x80 && (b1_ = ((const uint8_t *)(q))[1]) < 0x80) {         \
            (q) += 2 - 0x40 + (u_ >> 1) + (b1_ << 6);                                         \
        } else {                                                                              \
            KR_RAW_VARINT(uint32_t, q, u_, fail);                                             \
            if (!(u_ & 1))                                                                    \
                (q) += u_ >> 1;                                                               \
            else if (!(nullable))                                                             \
                goto fail;                                                                    \
        }                                                                                     \
        if (KR_UNLIKELY((q) > (rec_end)))                                                     \
            goto fail;                                                                        \
    } while (0)

/* Read the length at q (a key's or a value's, nullable) into len (-1: null, as any negative one
 * reads), its bytes' start into at, and move q past them; goto fail when the varint is too long or
 * the bytes end past rec_end.  A short non-negative length, as KR_SKIP_LENGTH's first test, takes
 * one branch. */
#define KR_TAKE_LENGTH(q, rec_end, len, at, fail)                                             \
    do {                                                                                      \
        uint32_t u_ = ((const uint8_t *)(q))[0];                                              \
        if (KR_LIKELY((u_ & 0x81) == 0)) {                                                    \
            (len) = (int32_t)(u_ >> 1);                                                       \
            (q) += 1;                                                                         \
        } else {                                                                              \
            KR_RAW_VARINT(uint32_t, q, u_, fail);                                             \
            (len) = (u_ & 1) ? -1 : (int32_t)(u_ >> 1);                                       \
        }                                                                                     \
        (at) = (const uint8_t *)(q);                                                          \
        if ((len) > 0) {                                                                      \
            (q) += (uint32_t)(len);                                                           \
            if (KR_UNLIKELY((q) > (rec_end)))                                                 \
                goto fail;                                                                    \
        }                                                                                     \
    } while (0)

/* The bytes of an 8-byte word kept up to its k-th (0 <= k <= 8), little-endian. */
static inline KR_ALWAYS_INLINE uint64_t kr_low_bytes(uint64_t w, int32_t k) {
    return k >= 8 ? w : (w & ((UINT64_C(1) << (8 * k)) - 1));
}

/* The n bytes (n >= 0) of a walked record's key, value or header at p copied to `to`, which has
 * KAFKAREC_COPY_SLACK (32) bytes of room after them.  The field has KR_WALK_SLACK (32) bytes or
 * more after it in the section, so up to 256 bytes are copied in whole 32-byte blocks with no test
 * of the source's end (kafkarec_copy_short's first case, always taken here), memcpy past that. */
static inline KR_ALWAYS_INLINE void kr_copy_walked(uint8_t *to, const uint8_t *p, int32_t n) {
    if (KR_LIKELY(n <= 256)) {
        int32_t i;
        for (i = 0; i < n; i += 32)
            memcpy(to + i, p + i, 32);
    } else {
        memcpy(to, p, (size_t)n);
    }
}

/* A record's start at p, read into q: its size (rec_end: where it ends), its attributes skipped
 * (unused outside strict reads) and its raw timestamp and offset deltas (ts, off); goto fail for a
 * negative size, a record ending in the slack or past the end (after safe_end), or a varint too
 * long.  From here p <= safe_end: its length's varint (5 bytes at most) is readable. */
#define KR_RECORD_START(p, q, rec_end, safe_end, ts, off, fail)                                \
    do {                                                                                      \
        uint32_t size_;                                                                       \
        (q) = (p);                                                                            \
        KR_RAW_VARINT(uint32_t, q, size_, fail);                                              \
        if (KR_UNLIKELY(size_ & 1))             /* a negative size */                         \
            goto fail;                                                                        \
        (rec_end) = (q) + (size_ >> 1);                                                       \
        if (KR_UNLIKELY((rec_end) > (safe_end)))    /* ends in the slack, or past the end */  \
            goto fail;                                                                        \
        (q) += 1;                               /* attributes */                              \
        KR_RAW_VARINT(uint64_t, q, ts, fail);                                                 \
        KR_RAW_VARINT(uint32_t, q, off, fail);                                                \
    } while (0)

/* A record's headers at q skipped (q moved past them), then its end: goto fail for a negative
 * header count, a header key or value ending past rec_end, a varint too long, or fields that do
 * not end exactly at rec_end. */
#define KR_SKIP_HEADERS_TO_END(q, rec_end, fail)                                              \
    do {                                                                                      \
        uint32_t headers_;                                                                    \
        if (KR_LIKELY(*(const uint8_t *)(q) == 0)) {   /* no header */                        \
            (q) += 1;                                                                         \
        } else {                                                                              \
            KR_RAW_VARINT(uint32_t, q, headers_, fail);                                       \
            if (KR_UNLIKELY(headers_ & 1))      /* a negative header count */                 \
                goto fail;                                                                    \
            for (headers_ >>= 1; headers_ > 0; headers_--) {                                  \
                KR_SKIP_LENGTH(q, rec_end, 0, fail);                                          \
                KR_SKIP_LENGTH(q, rec_end, 1, fail);                                          \
            }                                                                                 \
        }                                                                                     \
        if (KR_UNLIKELY((q) != (rec_end)))                                                    \
            goto fail;                                                                        \
    } while (0)

/* A record at p taken as the walks into columns take it (field_walk.h, view_walk.h), read into q
 * (q then past it): its raw deltas (ts, off), its key's and value's lengths (klen, vlen: -1 a null)
 * and starts (kp, vp), and where its headers start (hq, the header count); goto fail for a record
 * the walk does not accept (KR_RECORD_START, KR_SKIP_HEADERS_TO_END). */
#define KR_TAKE_RECORD(p, q, rec_end, safe_end, ts, off, klen, kp, vlen, vp, hq, fail)        \
    do {                                                                                      \
        kr_prefetch_ahead((const void *)(p));                                                 \
        KR_RECORD_START(p, q, rec_end, safe_end, ts, off, fail);                              \
        KR_TAKE_LENGTH(q, rec_end, klen, kp, fail);                                           \
        KR_TAKE_LENGTH(q, rec_end, vlen, vp, fail);                                           \
        (hq) = (q);                                                                           \
        KR_SKIP_HEADERS_TO_END(q, rec_end, fail);                                             \
    } while (0)

/* offsets[i] and timestamps[i] from the raw varints the walk stored there (zero-extended: an int32
 * varint's zig-zag value comes out sign-extended, as int32 then int64, as the scanner's): base +
 * value, wrapping.  One pass the compiler vectorizes; where gcc makes clones for the CPU (x86-64,
 * glibc's ifunc; musl has none), an AVX2 one does 4 a step instead of SSE2's 2 (clang, the
 * fuzzing build, takes the one loop). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) && defined(__GLIBC__)
__attribute__((noinline, target_clones("avx2", "default")))
#elif defined(__GNUC__)
__attribute__((noinline))
#endif
static void kr_add_zigzag(int64_t *restrict offsets, int64_t *restrict timestamps, Py_ssize_t n,
                          int64_t base_offset, int64_t base_timestamp) {
    Py_ssize_t i;
    for (i = 0; i < n; i++) {
        uint64_t u = (uint64_t)offsets[i], t = (uint64_t)timestamps[i];
        offsets[i] = (int64_t)((uint64_t)base_offset + ((u >> 1) ^ (0 - (u & 1))));
        timestamps[i] = (int64_t)((uint64_t)base_timestamp + ((t >> 1) ^ (0 - (t & 1))));
    }
}

/* Walk from *pos at most `count` records of the records section ending at `end`, into offsets[]
 * and timestamps[]; *pos moves past those walked, to the record it stopped at.  Returns how many
 * it walked: fewer than count when the next record ends in the slack or is not one it accepts. */
#if defined(__GNUC__)
__attribute__((noinline))   /* its own registers: inlined in the checked walk, its values spilled */
#endif
static Py_ssize_t kr_walk_meta_records(const uint8_t **pos, const uint8_t *end, Py_ssize_t count,
                                       int64_t *offsets, int64_t *timestamps,
                                       int64_t base_offset, int64_t base_timestamp) {
    uintptr_t p = (uintptr_t)*pos, q, rec_end, safe_end;
    Py_ssize_t n = 0;
    uint32_t off;
    uint64_t ts;
    if ((uintptr_t)end - p < KR_WALK_SLACK)
        return 0;
    safe_end = (uintptr_t)end - KR_WALK_SLACK;
    for (; n < count; n++) {
        kr_prefetch_walk((const void *)p);
        KR_RECORD_START(p, q, rec_end, safe_end, ts, off, stop);
        KR_SKIP_LENGTH(q, rec_end, 1, stop);    /* the key */
        KR_SKIP_LENGTH(q, rec_end, 1, stop);    /* the value */
        KR_SKIP_HEADERS_TO_END(q, rec_end, stop);
        /* the raw deltas, made offsets and timestamps below */
        ((uint64_t *)offsets)[n] = off;
        ((uint64_t *)timestamps)[n] = ts;
        p = q;
    }
stop:
    *pos = (const uint8_t *)p;
    kr_add_zigzag(offsets, timestamps, n, base_offset, base_timestamp);
    return n;
}

#endif /* KAFKAREC_META_WALK_H */
