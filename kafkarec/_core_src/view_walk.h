/* view_walk.h: part of kafkarec._core (declared by _full_rows.pxi): the walk of a batch's records
 * into key and value views, and the header columns when the read wants them (the view layout:
 * DuckDB's and Polars' reads; a header is appended as the classic layout's walk appends it,
 * header_walk.h), for the records that end KR_WALK_SLACK bytes or more before the records
 * section's end, outside strict reads.  Long keys and values are copied into the column's own
 * bytes (a memory map's: a local window, which may shrink under a batch an engine holds) or viewed
 * where they are (an uncompressed batch in bytes the array may hold: a window read into memory).
 *
 * It is the meta-only walker's walk (meta_walk.h: the same reads, the same rule of acceptance, and
 * why its checks suffice) with the key's and value's lengths kept instead of skipped, and each
 * written as full_rows_loop writes it (put_view_copied and put_view, _views.pxi): inline up to 12
 * bytes, a long one copied and viewed there or viewed in the bytes read, a null a zero view with
 * its bit cleared.  A record it does not accept, whose copy or headers would not fit the room the
 * caller reserved, or with a header key that is not ASCII, stops it without moving past it or
 * writing any of it; the caller's scanner then reads that record (a fault is found and worded by
 * the one scanner, a column grown by the GIL's path). The record loop's scanner took some 28 ns a
 * record of issue 80's rows (two fifths of DuckDB's whole-rows query's CPU), reading every varint
 * through a checked cursor; this walk reads them unchecked.
 *
 * A view's inline bytes are read as one 4- and one 8-byte load past the field's start, masked to
 * its length: the record ends KR_WALK_SLACK (32) bytes or more before the section's end, so the 12
 * bytes from a field that starts within it are readable. */
#ifndef KAFKAREC_VIEW_WALK_H
#define KAFKAREC_VIEW_WALK_H

#include <stdint.h>
#include <string.h>
#include <Python.h>
#include "always_inline.h"
#include "copy_short.h"     /* KAFKAREC_COPY_SLACK */
#include "meta_walk.h"
#include "header_walk.h"
#include "prefetch.h"

#define KR_VIEW_SIZE 16
#define KR_VIEW_INLINE 12

/* One view column as the walk fills it (FullRows' fields of the key or the value, _rows.pxd). */
typedef struct {
    uint8_t *views;         /* 16 bytes a row, indexed by row */
    uint8_t *valid;         /* a bit a row, preset to valid */
    Py_ssize_t nulls;
    Py_ssize_t counted;     /* the bytes the views refer to (the chunk's byte limit) */
    uint8_t *copy;          /* the column's copied bytes (variadic buffer 0), room to copy_cap */
    Py_ssize_t copy_at;
    Py_ssize_t copy_cap;
} KrViewColumn;

/* A view column's place as the walk's loop keeps it: where the next view goes (d), where the next
 * copy goes in the copied bytes (at) and how far copies may go (limit: the room less
 * KAFKAREC_COPY_SLACK; compared as sizes, the room may be none yet), the bytes the views refer to
 * (counted).  Its bitmap and null count (KrViewColumn's) are touched for a null alone. */
typedef struct {
    uint8_t *d;
    Py_ssize_t at;
    Py_ssize_t limit;
    Py_ssize_t counted;
} KrViewPlace;

/* The view of the n bytes at p at c->d, c moved past it; a null's bit cleared in col's bitmap
 * (row `row`) and counted.  The view is two 8-byte words: the length and the first 4 bytes, then
 * the next 8 inline or a buffer index and an offset.  A long key or value is, as put_view_copied
 * writes it (`base` NULL), copied into the column's bytes (the room checked by the caller: the copy
 * ends at c->limit or before) and viewed there, buffer 0; or, as put_view writes it, viewed where
 * it is, at p - base in buffer `index` (bytes the array may hold: the window read into memory).
 * (kr_copy_walked: the copy of a walked record's field). */
static inline KR_ALWAYS_INLINE void kr_put_view(KrViewPlace *c, KrViewColumn *col, Py_ssize_t row,
                                                const uint8_t *p, int32_t n, const uint8_t *base,
                                                int32_t index) {
    uint32_t head;
    uint64_t lo, hi;
    memcpy(&head, p, 4);
    if (KR_LIKELY(n > KR_VIEW_INLINE)) {
        lo = (uint32_t)n | ((uint64_t)head << 32);
        if (base == NULL) {
            kr_copy_walked(col->copy + c->at, p, n);
            hi = (uint64_t)(uint32_t)c->at << 32;
            c->at += n;
        } else {
            hi = (uint32_t)index | ((uint64_t)(uint32_t)(p - base) << 32);
        }
        c->counted += n;
    } else if (n >= 0) {
        uint64_t rest;
        memcpy(&rest, p + 4, 8);
        lo = (uint32_t)n | (kr_low_bytes(head, n < 4 ? n : 4) << 32);
        hi = kr_low_bytes(rest, n > 4 ? n - 4 : 0);
        c->counted += n;
    } else {
        lo = hi = 0;
        col->valid[row >> 3] &= (uint8_t)~(1u << (row & 7));
        col->nulls += 1;
    }
    memcpy(c->d, &lo, 8);
    memcpy(c->d + 8, &hi, 8);
    c->d += KR_VIEW_SIZE;
}

/* Walk from *pos at most `count` records of the records section ending at `end`, into rows
 * row... of the key and value view columns, the header columns when `headers` is not NULL
 * (header_walk.h), and offsets[] and timestamps[] (base + delta, as the scanner's; the caller puts
 * LOG_APPEND_TIME batches' max timestamp in place); *pos moves past those walked, to the record it
 * stopped at.  Long keys and values copied (`base` NULL) or viewed where they are (kr_put_view).
 * A column the read does not want (want_key, want_value 0) gets empty views, as
 * leave_out_unwanted makes them.  Returns how many it walked: fewer than count when the next
 * record ends in the slack, is not one it accepts, does not fit the copy room or the headers'
 * room, or has a header key that is not ASCII. */
static inline KR_ALWAYS_INLINE Py_ssize_t kr_walk_views_loop(
        const uint8_t **pos, const uint8_t *end, Py_ssize_t count, Py_ssize_t row, int64_t *offsets,
        int64_t *timestamps, KrViewColumn *key, KrViewColumn *value, KrHeaderColumns *headers,
        int want_key, int want_value, int64_t base_offset, int64_t base_timestamp,
        const uint8_t *base, int32_t index) {
    uintptr_t p = (uintptr_t)*pos, q, rec_end, safe_end, hq;
    const uint8_t *kp, *vp;
    Py_ssize_t n = 0;
    uint32_t off;
    int32_t klen, vlen;
    /* a length of a column not wanted made 0, a null's too (leave_out_unwanted): and-ed with 0 */
    int32_t kmask = want_key ? -1 : 0, vmask = want_value ? -1 : 0;
    uint64_t ts;
    KrViewPlace k, v;
    if ((uintptr_t)end - p < KR_WALK_SLACK)
        return 0;
    k.d = key->views + row * KR_VIEW_SIZE;
    k.at = key->copy_at;
    k.limit = key->copy_cap - KAFKAREC_COPY_SLACK;
    k.counted = key->counted;
    v.d = value->views + row * KR_VIEW_SIZE;
    v.at = value->copy_at;
    v.limit = value->copy_cap - KAFKAREC_COPY_SLACK;
    v.counted = value->counted;
    safe_end = (uintptr_t)end - KR_WALK_SLACK;
    for (; n < count; n++) {
        KR_TAKE_RECORD(p, q, rec_end, safe_end, ts, off, klen, kp, vlen, vp, hq, stop);
        klen &= kmask;
        vlen &= vmask;
        /* (a long one's copy must end at the limit or before; the caller's path grows the room) */
        if (KR_UNLIKELY(base == NULL && ((klen > KR_VIEW_INLINE && k.at + klen > k.limit)
                                         || (vlen > KR_VIEW_INLINE && v.at + vlen > v.limit))))
            break;
        /* (first of what is written: it may refuse the record) */
        if (headers != NULL && KR_UNLIKELY(kr_walk_headers(headers, hq, rec_end, row + n, n) != 0))
            break;
        kr_put_view(&k, key, row + n, kp, klen, base, index);
        kr_put_view(&v, value, row + n, vp, vlen, base, index);
        /* the raw deltas, made offsets and timestamps below */
        ((uint64_t *)offsets)[n] = off;
        ((uint64_t *)timestamps)[n] = ts;
        p = q;
    }
stop:
    *pos = (const uint8_t *)p;
    key->copy_at = k.at;
    key->counted = k.counted;
    value->copy_at = v.at;
    value->counted = v.counted;
    kr_add_zigzag(offsets, timestamps, n, base_offset, base_timestamp);
    return n;
}

/* kr_walk_views_loop without the headers (DuckDB's [key, value], Polars' four columns) and with them
 * (a whole row): a copy each, its own registers (noinline, as kr_walk_meta_records). */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static Py_ssize_t kr_walk_views(const uint8_t **pos, const uint8_t *end, Py_ssize_t count,
                                Py_ssize_t row, int64_t *offsets, int64_t *timestamps,
                                KrViewColumn *key, KrViewColumn *value, int want_key, int want_value,
                                int64_t base_offset, int64_t base_timestamp, const uint8_t *base,
                                int32_t index) {
    return kr_walk_views_loop(pos, end, count, row, offsets, timestamps, key, value, NULL, want_key,
                              want_value, base_offset, base_timestamp, base, index);
}

#if defined(__GNUC__)
__attribute__((noinline))
#endif
static Py_ssize_t kr_walk_views_headers(const uint8_t **pos, const uint8_t *end, Py_ssize_t count,
                                        Py_ssize_t row, int64_t *offsets, int64_t *timestamps,
                                        KrViewColumn *key, KrViewColumn *value,
                                        KrHeaderColumns *headers, int want_key, int want_value,
                                        int64_t base_offset, int64_t base_timestamp,
                                        const uint8_t *base, int32_t index) {
    return kr_walk_views_loop(pos, end, count, row, offsets, timestamps, key, value, headers,
                              want_key, want_value, base_offset, base_timestamp, base, index);
}

#endif /* KAFKAREC_VIEW_WALK_H */
