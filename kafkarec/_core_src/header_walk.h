/* header_walk.h: part of kafkarec._core (declared by _full_rows.pxi): the headers of a record a
 * walk accepted (field_walk.h, view_walk.h) appended to the header columns, which are the same in
 * both layouts (a list of struct<key: string, value: binary>). */
#ifndef KAFKAREC_HEADER_WALK_H
#define KAFKAREC_HEADER_WALK_H

#include <stdint.h>
#include <string.h>
#include <Python.h>
#include "always_inline.h"
#include "copy_short.h"     /* KAFKAREC_COPY_SLACK */
#include "meta_walk.h"

/* The header columns as the walk fills them (FullRows' fields of the headers, _rows.pxd): the
 * list column's end offsets and bitmap, a row each, and the entries' key (string) and value
 * (binary, nullable) columns, offsets kept as bytes (4 an entry). */
typedef struct {
    int32_t *row_offsets;       /* the entries after row i at [i], i counted from the walk's first row */
    uint8_t *row_valid;         /* a bit a row, indexed by row: set for a record with headers */
    Py_ssize_t with_headers;
    Py_ssize_t entries;
    uint8_t *key_data;
    Py_ssize_t key_size;
    Py_ssize_t key_cap;
    uint8_t *key_offsets;
    Py_ssize_t key_offsets_size;
    Py_ssize_t key_offsets_cap;
    uint8_t *value_data;
    Py_ssize_t value_size;
    Py_ssize_t value_cap;
    uint8_t *value_offsets;
    Py_ssize_t value_offsets_size;
    Py_ssize_t value_offsets_cap;
    uint8_t *value_valid;       /* a bit an entry */
    Py_ssize_t value_valid_cap;
    Py_ssize_t value_nulls;
} KrHeaderColumns;

/* (the Arrow columns' 32-bit offsets: no column's bytes may pass it, _column.pxi's INT32_LIMIT) */
#define KR_INT32_LIMIT 0x7FFFFFFF

/* Whether the n bytes at p are ASCII; up to 8 bytes past them are readable (a walked record's). */
static inline KR_ALWAYS_INLINE int kr_ascii(const uint8_t *p, int32_t n) {
    uint64_t seen = 0, w;
    int32_t i = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(&w, p + i, 8);
        seen |= w;
    }
    memcpy(&w, p + i, 8);
    seen |= kr_low_bytes(w, n - i);
    return (seen & UINT64_C(0x8080808080808080)) == 0;
}

/* The headers of an accepted record, from hq (its header count) to rec_end, appended to h as
 * put_headers appends them (_full_rows.pxi): each key's bytes and end offset, each value's bytes,
 * end offset and bit (a null's cleared and counted).  Every varint and length was read by the walk
 * before and lies within the record, so they are read again with no check; the room is checked up
 * front for the whole of the header bytes, as put_headers checks it.  Returns the header count, or
 * -1 with nothing of h changed where the room is short or a key is not ASCII. */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static int32_t kr_put_headers(KrHeaderColumns *h, uintptr_t hq, uintptr_t rec_end) {
    uintptr_t q = hq;
    uint32_t count, u;
    int32_t i, klen, vlen, at;
    Py_ssize_t room = (Py_ssize_t)(rec_end - hq), e = h->entries;
    Py_ssize_t ksize = h->key_size, vsize = h->value_size, nulls = h->value_nulls;
    Py_ssize_t koffs = h->key_offsets_size, voffs = h->value_offsets_size;
    KR_RAW_VARINT(uint32_t, q, count, fail);
    count >>= 1;                        /* (not negative: the walk refused a negative count) */
    if (count == 0)
        return 0;
    if (KR_UNLIKELY(ksize + room + KAFKAREC_COPY_SLACK > h->key_cap
                    || vsize + room + KAFKAREC_COPY_SLACK > h->value_cap
                    || koffs + 4 * (Py_ssize_t)count > h->key_offsets_cap
                    || voffs + 4 * (Py_ssize_t)count > h->value_offsets_cap
                    || ((e + (Py_ssize_t)count + 7) >> 3) + 1 > h->value_valid_cap
                    || ksize + room + KAFKAREC_COPY_SLACK > KR_INT32_LIMIT
                    || vsize + room + KAFKAREC_COPY_SLACK > KR_INT32_LIMIT))
        return -1;
    for (i = 0; i < (int32_t)count; i++) {
        KR_RAW_VARINT(uint32_t, q, u, fail);
        klen = (int32_t)(u >> 1);       /* (not negative: the walk refused a negative key length) */
        if (KR_UNLIKELY(!kr_ascii((const uint8_t *)q, klen)))
            return -1;
        kr_copy_walked(h->key_data + ksize, (const uint8_t *)q, klen);
        q += (uint32_t)klen;
        ksize += klen;
        at = (int32_t)ksize;
        memcpy(h->key_offsets + koffs, &at, 4);
        koffs += 4;
        KR_RAW_VARINT(uint32_t, q, u, fail);
        vlen = (u & 1) ? -1 : (int32_t)(u >> 1);
        if ((e & 7) == 0)
            h->value_valid[e >> 3] = 0;
        if (vlen >= 0) {
            kr_copy_walked(h->value_data + vsize, (const uint8_t *)q, vlen);
            q += (uint32_t)vlen;
            vsize += vlen;
            h->value_valid[e >> 3] |= (uint8_t)(1u << (e & 7));
        } else {
            /* cleared, not left as found (a run's batch put back leaves its bits: put_headers) */
            h->value_valid[e >> 3] &= (uint8_t)~(1u << (e & 7));
            nulls += 1;
        }
        at = (int32_t)vsize;
        memcpy(h->value_offsets + voffs, &at, 4);
        voffs += 4;
        e += 1;
    }
    h->entries = e;
    h->key_size = ksize;
    h->key_offsets_size = koffs;
    h->value_size = vsize;
    h->value_offsets_size = voffs;
    h->value_nulls = nulls;
    return (int32_t)count;
fail:   /* (not reached: the walk read these varints) */
    return -1;
}

/* A walked record's row of the header columns: its headers, from hq (its header count) to rec_end,
 * appended (kr_put_headers), its bit set if it has any, and the entries after it at
 * row_offsets[n] (the walk's n-th row, row `row`); -1 with nothing changed where kr_put_headers
 * refuses them.  Called before anything else of the record is written, so that a record refused
 * here has nothing written. */
static inline KR_ALWAYS_INLINE int kr_walk_headers(KrHeaderColumns *h, uintptr_t hq, uintptr_t rec_end,
                                                  Py_ssize_t row, Py_ssize_t n) {
    int32_t with;
    if (KR_UNLIKELY(*(const uint8_t *)hq != 0)) {
        with = kr_put_headers(h, hq, rec_end);
        if (KR_UNLIKELY(with < 0))
            return -1;
        if (with != 0) {
            h->row_valid[row >> 3] |= (uint8_t)(1u << (row & 7));
            h->with_headers += 1;
        }
    }
    h->row_offsets[n] = (int32_t)h->entries;
    return 0;
}

#endif /* KAFKAREC_HEADER_WALK_H */
