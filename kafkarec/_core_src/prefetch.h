/* prefetch.h: part of kafkarec._core (declared by _records.pxi): the record loops' reads ahead.
 *
 * A log is read once, front to back, from memory (a page-cache mapping or a read buffer) far
 * larger than any cache.  The record loops stall on the first byte of every record's next cache
 * line (a header count past a 100-byte value took a fifth of the full decode's samples, issue 80):
 * the hardware's stream prefetcher stops at each 4 KiB page and starts late on the next.  So each
 * loop asks, at every record, for the lines KR_PREFETCH_AHEAD bytes ahead of it: some seven records
 * of ~150 bytes ahead, more than the ~100 ns a line takes from memory.  A prefetch never
 * faults (a line past the input or in a page not mapped yet is dropped), so no bound is checked.
 *
 * The meta-only walker (meta_walk.h) goes through the same bytes two to three times as fast (some
 * 15 ns a record of issue 80's 132 bytes from memory, the full rows' 35-55), so the same time ahead
 * is KR_PREFETCH_AHEAD_WALK bytes for it: 4 KiB, mostly in pages already mapped (a window a
 * registered table keeps mapped, or the 64 KiB the kernel maps around each fault; a line in a page
 * not mapped yet is dropped).  Issue 80's 3 M records (uncompressed, populated maps, best of 7, one thread):
 * 16.4-16.7 ns a record at 1 KiB, 15.0 at 2 KiB, 14.5 at 4 KiB; the full rows' loop at 2 or 4 KiB
 * took 0-3% longer than at 1 KiB, so it keeps 1 KiB. */
#ifndef KAFKAREC_PREFETCH_H
#define KAFKAREC_PREFETCH_H

#include <stdint.h>
#include "always_inline.h"

#define KR_PREFETCH_AHEAD 1024
#define KR_PREFETCH_AHEAD_WALK 4096
#define KR_PREFETCH_LINE 64

/* The lines KR_PREFETCH_AHEAD bytes past `at` asked for, for a record loop at each record: three
 * lines, the span of a record of ~100-byte values (a shorter record asks for some twice, which costs
 * one instruction; a longer one's value is copied by memcpy, whose lines the hardware streams).
 * Fixed offsets from the record's start, so no state is kept across records (a loop that tracked
 * the next line to ask for, each line once, cost some 17 instructions a record and no less time). */
static inline KR_ALWAYS_INLINE void kr_prefetch_at(const void *at, uintptr_t ahead) {
#if defined(__GNUC__)
    /* computed as integers: the addresses may be past the input, which a prefetch does not read */
    uintptr_t p = (uintptr_t)at + ahead;
    __builtin_prefetch((const void *)p, 0, 3);
    __builtin_prefetch((const void *)(p + KR_PREFETCH_LINE), 0, 3);
    __builtin_prefetch((const void *)(p + 2 * KR_PREFETCH_LINE), 0, 3);
#else
    (void)at;
    (void)ahead;
#endif
}

/* The full rows' loop's reads ahead, and the meta-only walker's (see above). */
static inline KR_ALWAYS_INLINE void kr_prefetch_ahead(const void *at) {
    kr_prefetch_at(at, KR_PREFETCH_AHEAD);
}

static inline KR_ALWAYS_INLINE void kr_prefetch_walk(const void *at) {
    kr_prefetch_at(at, KR_PREFETCH_AHEAD_WALK);
}

#endif /* KAFKAREC_PREFETCH_H */
