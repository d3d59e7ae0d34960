/* field_walk.h: part of kafkarec._core (declared by _full_rows.pxi): the walk of a batch's records
 * into the classic layout's key and value columns (int32 offsets and the bytes, binary), and its
 * header columns when the read wants them, for the records that end KR_WALK_SLACK bytes or more
 * before the records section's end, outside strict reads: the columns analysts select (`offset,
 * timestamp, key, value`), a whole row (pyarrow's, a LogScan's and Spark's default read).
 *
 * It is the meta-only walker's walk (meta_walk.h: the same reads, the same rule of acceptance, and
 * why its checks suffice) with the key's and value's lengths kept instead of skipped, and each
 * written as full_rows_loop writes it (put_field, _full_rows.pxi): the bytes appended to the
 * column's bytes and the end offset written, a null's bit cleared (the bits are preset to valid)
 * and counted, nothing appended; and each header as put_headers appends it, once the record is
 * accepted (header_walk.h).  A record it does not accept, whose key, value or headers would not
 * fit the room reserved, or with a header key that is not ASCII (a key not UTF-8 is replaced as
 * Java decodes it, which the GIL's path does: the scanner's read decides), stops it without moving
 * past it or writing any of it; the caller's scanner then reads that record (a fault is found and
 * worded by the one scanner, a column grown by the GIL's path).  The record loop's scanner read
 * every varint through a checked cursor; this walk reads them unchecked, as the walk into views
 * does (view_walk.h). */
#ifndef KAFKAREC_FIELD_WALK_H
#define KAFKAREC_FIELD_WALK_H

#include <stdint.h>
#include <string.h>
#include <Python.h>
#include "always_inline.h"
#include "copy_short.h"     /* KAFKAREC_COPY_SLACK */
#include "meta_walk.h"
#include "header_walk.h"
#include "prefetch.h"

/* One classic column as the walk fills it (FullRows' fields of the key or the value, _rows.pxd). */
typedef struct {
    uint8_t *data;          /* the column's bytes, room to cap */
    Py_ssize_t size;        /* the bytes in it (the next one's offset) */
    Py_ssize_t cap;
    int32_t *offsets;       /* the end offset of row i at [i], i counted from the walk's first row */
    uint8_t *valid;         /* a bit a row, preset to valid, indexed by row */
    Py_ssize_t nulls;
} KrFieldColumn;

/* The field of n bytes at p (n < 0: a null) appended to the column whose next byte is at *size:
 * its bytes copied (the room checked by the caller: they end at the limit or before), *size moved
 * past them; a null's bit cleared in col's bitmap (row `row`) and counted. */
static inline KR_ALWAYS_INLINE void kr_put_field(KrFieldColumn *col, Py_ssize_t *size, Py_ssize_t row,
                                                 const uint8_t *p, int32_t n) {
    if (KR_LIKELY(n >= 0)) {
        kr_copy_walked(col->data + *size, p, n);
        *size += n;
    } else {
        col->valid[row >> 3] &= (uint8_t)~(1u << (row & 7));
        col->nulls += 1;
    }
}

/* Walk from *pos at most `count` records of the records section ending at `end`, into rows
 * row... of the key and value columns, the header columns when `headers` is not NULL, and
 * offsets[] and timestamps[] (base + delta, as the scanner's; the caller puts LOG_APPEND_TIME
 * batches' max timestamp in place); *pos moves past those walked, to the record it stopped at.  A
 * column the read does not want (want_key, want_value 0) gets empty fields, as leave_out_unwanted
 * makes them.  Returns how many it walked: fewer than count when the next record ends in the
 * slack, is not one it accepts, its key, value or headers do not fit the room, or a header key is
 * not ASCII. */
static inline KR_ALWAYS_INLINE Py_ssize_t kr_walk_fields_loop(
        const uint8_t **pos, const uint8_t *end, Py_ssize_t count, Py_ssize_t row, int64_t *offsets,
        int64_t *timestamps, KrFieldColumn *key, KrFieldColumn *value, KrHeaderColumns *headers,
        int want_key, int want_value, int64_t base_offset, int64_t base_timestamp) {
    uintptr_t p = (uintptr_t)*pos, q, rec_end, safe_end, hq;
    const uint8_t *kp, *vp;
    Py_ssize_t n = 0, ksize = key->size, vsize = value->size;
    /* (compared as sizes: the room may be none yet, the limit then negative) */
    Py_ssize_t klimit = key->cap - KAFKAREC_COPY_SLACK, vlimit = value->cap - KAFKAREC_COPY_SLACK;
    uint32_t off;
    int32_t klen, vlen;
    /* a length of a column not wanted made 0, a null's too (leave_out_unwanted): and-ed with 0 */
    int32_t kmask = want_key ? -1 : 0, vmask = want_value ? -1 : 0;
    uint64_t ts;
    if ((uintptr_t)end - p < KR_WALK_SLACK)
        return 0;
    safe_end = (uintptr_t)end - KR_WALK_SLACK;
    for (; n < count; n++) {
        KR_TAKE_RECORD(p, q, rec_end, safe_end, ts, off, klen, kp, vlen, vp, hq, stop);
        klen &= kmask;
        vlen &= vmask;
        /* the copies must end at the limit or before; the caller's path grows the room (a null, -1,
         * stops it only in a column whose room is used up, where the next copy would) */
        if (KR_UNLIKELY(ksize + klen > klimit || vsize + vlen > vlimit))
            break;
        if (headers != NULL && KR_UNLIKELY(kr_walk_headers(headers, hq, rec_end, row + n, n) != 0))
            break;
        kr_put_field(key, &ksize, row + n, kp, klen);
        kr_put_field(value, &vsize, row + n, vp, vlen);
        key->offsets[n] = (int32_t)ksize;
        value->offsets[n] = (int32_t)vsize;
        /* the raw deltas, made offsets and timestamps below */
        ((uint64_t *)offsets)[n] = off;
        ((uint64_t *)timestamps)[n] = ts;
        p = q;
    }
stop:
    *pos = (const uint8_t *)p;
    key->size = ksize;
    value->size = vsize;
    kr_add_zigzag(offsets, timestamps, n, base_offset, base_timestamp);
    return n;
}

/* kr_walk_fields_loop without the headers (the columns analysts select) and with them (a whole
 * row): a copy each, its own registers (noinline, as kr_walk_meta_records). */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static Py_ssize_t kr_walk_fields(const uint8_t **pos, const uint8_t *end, Py_ssize_t count,
                                 Py_ssize_t row, int64_t *offsets, int64_t *timestamps,
                                 KrFieldColumn *key, KrFieldColumn *value, int want_key,
                                 int want_value, int64_t base_offset, int64_t base_timestamp) {
    return kr_walk_fields_loop(pos, end, count, row, offsets, timestamps, key, value, NULL, want_key,
                               want_value, base_offset, base_timestamp);
}

#if defined(__GNUC__)
__attribute__((noinline))
#endif
static Py_ssize_t kr_walk_fields_headers(const uint8_t **pos, const uint8_t *end, Py_ssize_t count,
                                         Py_ssize_t row, int64_t *offsets, int64_t *timestamps,
                                         KrFieldColumn *key, KrFieldColumn *value,
                                         KrHeaderColumns *headers, int want_key, int want_value,
                                         int64_t base_offset, int64_t base_timestamp) {
    return kr_walk_fields_loop(pos, end, count, row, offsets, timestamps, key, value, headers,
                               want_key, want_value, base_offset, base_timestamp);
}

#endif /* KAFKAREC_FIELD_WALK_H */
