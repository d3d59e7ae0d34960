/* bulk_writer.h: part of kafkarec._core (included by the .pxi that declares it). */
#ifndef KAFKAREC_BULK_WRITER_H
#define KAFKAREC_BULK_WRITER_H

#include <stdint.h>
#include "always_inline.h"
#include <string.h>
#include <Python.h>

/* The bulk writer's inner loop: RecordBatchBuilder.extend / build_batch
   without headers, explicit offsets or a size limit.  One record per
   iteration, no Python call: lengths, varints and copies are inlined.

   Columns of keys and values are Arrow binary arrays (32- or 64-bit
   offsets, optional validity bitmap), lists of bytes/None, or absent (all
   null).  The loop is instantiated per (values, keys) layout, so the
   layout tests fold away.  It stops, leaving the state consistent with
   the records written so far, when
     KAFKAREC_BULK_ROOM   the next record needs more room (st->need bytes),
     KAFKAREC_BULK_BAD_TS the next record's timestamp is below -1,
     KAFKAREC_BULK_OTHER  a list item is neither bytes nor None (the caller
                          writes that record the general way). */
enum { KAFKAREC_BIN_NULL = 0, KAFKAREC_BIN_LIST = 1, KAFKAREC_BIN_ARROW32 = 2,
       KAFKAREC_BIN_ARROW64 = 3 };
/* loop instantiations only: Arrow columns without a validity bitmap */
enum { KAFKAREC_BIN_ARROW32_DENSE = 6, KAFKAREC_BIN_ARROW64_DENSE = 7 };
enum { KAFKAREC_BULK_DONE = 0, KAFKAREC_BULK_ROOM = 1, KAFKAREC_BULK_BAD_TS = 2,
       KAFKAREC_BULK_OTHER = 3 };

typedef struct {
    int mode;
    PyObject **items;                 /* LIST: the list's item array (borrowed) */
    const uint8_t *data;              /* ARROW*: data buffer */
    const int32_t *offsets32;         /* ARROW32 */
    const int64_t *offsets64;         /* ARROW64 */
    const uint8_t *validity;          /* ARROW*: NULL when no item is null */
    Py_ssize_t array_offset;          /* ARROW*: the array's offset into its buffers */
} kafkarec_bin_col;

typedef struct {
    uint8_t *p;                       /* where the next record goes */
    uint8_t *limit;                   /* end of the room reserved */
    const int64_t *timestamps;        /* NULL: every record takes `now` */
    int64_t now;
    int64_t offset_delta;             /* of the next record */
    int64_t base_timestamp;
    int64_t max_timestamp;
    int first;                        /* the next record's timestamp is the base */
    Py_ssize_t length_guess;          /* bytes of the next body-length varint, 1..5 */
    Py_ssize_t need;                  /* after KAFKAREC_BULK_ROOM */
} kafkarec_bulk_state;

#define KAFKAREC_ALWAYS_INLINE static inline KR_ALWAYS_INLINE

KAFKAREC_ALWAYS_INLINE uint64_t kafkarec_zigzag(int64_t x) {
    return ((uint64_t)x << 1) ^ (uint64_t)(x >> 63);
}

/* Bytes of the base-128 encoding of an already zig-zagged value. */
KAFKAREC_ALWAYS_INLINE Py_ssize_t kafkarec_uvarint_size(uint64_t v) {
    if (v < 0x80) return 1;
    if (v < 0x4000) return 2;
    return (64 - __builtin_clzll(v) + 6) / 7;
}

KAFKAREC_ALWAYS_INLINE uint8_t *kafkarec_put_uvarint(uint8_t *p, uint64_t v) {
    if (v < 0x80) { p[0] = (uint8_t)v; return p + 1; }
    if (v < 0x4000) { p[0] = (uint8_t)(v | 0x80); p[1] = (uint8_t)(v >> 7); return p + 2; }
    do { *p++ = (uint8_t)(v | 0x80); v >>= 7; } while (v >= 0x80);
    *p = (uint8_t)v;
    return p + 1;
}

/* memcpy for keys and values: up to 128 bytes with a few overlapping
   16-byte loads and stores, inlined (no call, no spilled registers);
   reads and writes exactly [0, n). */
typedef uint8_t kafkarec_v16 __attribute__((vector_size(16)));
KAFKAREC_ALWAYS_INLINE kafkarec_v16 kafkarec_load16(const uint8_t *s) {
    kafkarec_v16 v; memcpy(&v, s, 16); return v;
}
KAFKAREC_ALWAYS_INLINE void kafkarec_store16(uint8_t *d, kafkarec_v16 v) { memcpy(d, &v, 16); }

KAFKAREC_ALWAYS_INLINE void kafkarec_copy(uint8_t *d, const uint8_t *s, size_t n) {
    if (n <= 16) {
        if (n >= 8) {
            uint64_t a, b;
            memcpy(&a, s, 8); memcpy(&b, s + n - 8, 8);
            memcpy(d, &a, 8); memcpy(d + n - 8, &b, 8);
        } else if (n >= 4) {
            uint32_t a, b;
            memcpy(&a, s, 4); memcpy(&b, s + n - 4, 4);
            memcpy(d, &a, 4); memcpy(d + n - 4, &b, 4);
        } else if (n) {
            uint8_t a = s[0], b = s[n >> 1], c = s[n - 1];
            d[0] = a; d[n >> 1] = b; d[n - 1] = c;
        }
    } else if (n <= 32) {
        kafkarec_v16 a = kafkarec_load16(s), b = kafkarec_load16(s + n - 16);
        kafkarec_store16(d, a); kafkarec_store16(d + n - 16, b);
    } else if (n <= 64) {
        kafkarec_v16 a = kafkarec_load16(s), b = kafkarec_load16(s + 16);
        kafkarec_v16 c = kafkarec_load16(s + n - 32), e = kafkarec_load16(s + n - 16);
        kafkarec_store16(d, a); kafkarec_store16(d + 16, b);
        kafkarec_store16(d + n - 32, c); kafkarec_store16(d + n - 16, e);
    } else if (n <= 128) {
        kafkarec_v16 a = kafkarec_load16(s), b = kafkarec_load16(s + 16);
        kafkarec_v16 c = kafkarec_load16(s + 32), e = kafkarec_load16(s + 48);
        kafkarec_v16 f = kafkarec_load16(s + n - 64), g = kafkarec_load16(s + n - 48);
        kafkarec_v16 h = kafkarec_load16(s + n - 32), j = kafkarec_load16(s + n - 16);
        kafkarec_store16(d, a); kafkarec_store16(d + 16, b);
        kafkarec_store16(d + 32, c); kafkarec_store16(d + 48, e);
        kafkarec_store16(d + n - 64, f); kafkarec_store16(d + n - 48, g);
        kafkarec_store16(d + n - 32, h); kafkarec_store16(d + n - 16, j);
    } else {
        memcpy(d, s, n);
    }
}

/* Item i of a column: pointer and length, length -1 for null.  0, or -1
   for a list item that is neither bytes nor None. */
KAFKAREC_ALWAYS_INLINE int kafkarec_bin_get(const kafkarec_bin_col *c, const int mode,
                                            Py_ssize_t i, const uint8_t **p, Py_ssize_t *n) {
    Py_ssize_t j, start;
    if (mode == KAFKAREC_BIN_NULL) { *p = NULL; *n = -1; return 0; }
    if (mode == KAFKAREC_BIN_LIST) {
        PyObject *o = c->items[i];
        if (PyBytes_CheckExact(o)) {
            *p = (const uint8_t *)PyBytes_AS_STRING(o); *n = PyBytes_GET_SIZE(o); return 0;
        }
        if (o == Py_None) { *p = NULL; *n = -1; return 0; }
        return -1;
    }
    j = i + c->array_offset;
    if (mode != KAFKAREC_BIN_ARROW32_DENSE && mode != KAFKAREC_BIN_ARROW64_DENSE
            && c->validity != NULL && !((c->validity[j >> 3] >> (j & 7)) & 1)) {
        *p = NULL; *n = -1; return 0;
    }
    if (mode == KAFKAREC_BIN_ARROW32 || mode == KAFKAREC_BIN_ARROW32_DENSE) {
        start = c->offsets32[j]; *n = c->offsets32[j + 1] - start;
    } else {
        start = (Py_ssize_t)c->offsets64[j]; *n = (Py_ssize_t)(c->offsets64[j + 1] - c->offsets64[j]);
    }
    *p = c->data + start;
    return 0;
}

/* Records i..end-1 (stops early as described above); returns the index
   of the first record not written.  The state and the columns are copied
   into locals: stores through the output pointer may alias anything, so
   fields read through pointers would be reloaded on every record. */
KAFKAREC_ALWAYS_INLINE Py_ssize_t kafkarec_bulk_loop(
        kafkarec_bulk_state *st, kafkarec_bin_col v, kafkarec_bin_col k,
        Py_ssize_t i, Py_ssize_t end, int *status, const int vmode, const int kmode) {
    uint8_t *p = st->p;
    uint8_t *const limit = st->limit;
    const int64_t *const tsp = st->timestamps;
    const int64_t now = st->now;
    int64_t offset_delta = st->offset_delta;
    int64_t base_ts = st->base_timestamp, max_ts = st->max_timestamp;
    int s = KAFKAREC_BULK_DONE;
    /* Bytes of the body-length varint, guessed from the previous record:
       the body is written behind the guess, and moved in the rare case
       the guess was wrong.  No record's size is computed in advance. */
    Py_ssize_t guess = st->length_guess;
    if (st->first && i < end) {
        int64_t ts0 = tsp != NULL ? tsp[i] : now;
        if (ts0 >= -1) { base_ts = ts0; st->first = 0; }   /* else: BAD_TS below */
    }
    for (; i < end; i++) {
        const uint8_t *kp, *vp;
        Py_ssize_t klen, vlen, kbytes, vbytes, body, size;
        uint8_t *q;
        uint64_t zbody;
        int64_t ts = tsp != NULL ? tsp[i] : now;
        if (kafkarec_bin_get(&v, vmode, i, &vp, &vlen) || kafkarec_bin_get(&k, kmode, i, &kp, &klen)) {
            s = KAFKAREC_BULK_OTHER; break;
        }
        if (ts < -1) { s = KAFKAREC_BULK_BAD_TS; break; }
        kbytes = klen > 0 ? klen : 0;
        vbytes = vlen > 0 ? vlen : 0;
        /* at most: length 5, attributes 1, four varlongs of 10, headers 1 */
        if (limit - p < kbytes + vbytes + 48) {
            st->need = kbytes + vbytes + 48; s = KAFKAREC_BULK_ROOM; break;
        }
        q = p + guess;
        *q++ = 0;                                   /* record attributes */
        q = kafkarec_put_uvarint(q, kafkarec_zigzag((int64_t)((uint64_t)ts - (uint64_t)base_ts)));
        q = kafkarec_put_uvarint(q, (uint64_t)offset_delta << 1);
        q = kafkarec_put_uvarint(q, kafkarec_zigzag(klen));
        if (kbytes) { kafkarec_copy(q, kp, (size_t)kbytes); q += kbytes; }
        q = kafkarec_put_uvarint(q, kafkarec_zigzag(vlen));
        if (vbytes) { kafkarec_copy(q, vp, (size_t)vbytes); q += vbytes; }
        *q++ = 0;                                   /* no headers */
        body = q - (p + guess);
        zbody = (uint64_t)body << 1;
        size = kafkarec_uvarint_size(zbody);
        if (size != guess) {
            memmove(p + size, p + guess, (size_t)body);
            guess = size;
        }
        kafkarec_put_uvarint(p, zbody);
        p += size + body;
        if (ts > max_ts) max_ts = ts;
        offset_delta++;
    }
    st->length_guess = guess;
    st->p = p;
    st->offset_delta = offset_delta;
    st->base_timestamp = base_ts;
    st->max_timestamp = max_ts;
    *status = s;
    return i;
}

#define KAFKAREC_BULK_CASE(vm, km) \
    case (vm) * 4 + (km): return kafkarec_bulk_loop(st, *v, *k, i, end, status, (vm), (km));
static Py_ssize_t kafkarec_bulk_write(kafkarec_bulk_state *st, const kafkarec_bin_col *v,
                                      const kafkarec_bin_col *k, Py_ssize_t i, Py_ssize_t end,
                                      int *status) {
    if (v->validity == NULL && (k->mode == KAFKAREC_BIN_NULL || k->validity == NULL)) {
        switch (v->mode * 4 + k->mode) {
            case 2 * 4 + 0: return kafkarec_bulk_loop(st, *v, *k, i, end, status, 6, 0);
            case 2 * 4 + 2: return kafkarec_bulk_loop(st, *v, *k, i, end, status, 6, 6);
            case 2 * 4 + 3: return kafkarec_bulk_loop(st, *v, *k, i, end, status, 6, 7);
            case 3 * 4 + 0: return kafkarec_bulk_loop(st, *v, *k, i, end, status, 7, 0);
            case 3 * 4 + 2: return kafkarec_bulk_loop(st, *v, *k, i, end, status, 7, 6);
            case 3 * 4 + 3: return kafkarec_bulk_loop(st, *v, *k, i, end, status, 7, 7);
            default: break;
        }
    }
    switch (v->mode * 4 + k->mode) {
        KAFKAREC_BULK_CASE(1, 0) KAFKAREC_BULK_CASE(1, 1)
        KAFKAREC_BULK_CASE(1, 2) KAFKAREC_BULK_CASE(1, 3)
        KAFKAREC_BULK_CASE(2, 0) KAFKAREC_BULK_CASE(2, 1)
        KAFKAREC_BULK_CASE(2, 2) KAFKAREC_BULK_CASE(2, 3)
        KAFKAREC_BULK_CASE(3, 0) KAFKAREC_BULK_CASE(3, 1)
        KAFKAREC_BULK_CASE(3, 2) KAFKAREC_BULK_CASE(3, 3)
        default: return kafkarec_bulk_loop(st, *v, *k, i, end, status, v->mode, k->mode);
    }
}

#endif /* KAFKAREC_BULK_WRITER_H */
