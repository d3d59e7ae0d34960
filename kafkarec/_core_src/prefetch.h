/* prefetch.h: part of kafkarec._core (declared by _records.pxi): the record loops' reads ahead.
 *
 * A log is read once, front to back, from memory (a page-cache mapping or a read buffer) far
 * larger than any cache.  The record loops stall on the first byte of every record's next cache
 * line (a header count past a 100-byte value took a fifth of the full decode's samples, issue 80):
 * the hardware's stream prefetcher stops at each 4 KiB page and starts late on the next.  So each
 * loop asks, at every record, for the lines KR_PREFETCH_AHEAD bytes ahead of it: some seven records
 * of ~150 bytes ahead, more than the ~100 ns a line takes from memory.  A prefetch never
 * faults (a line past the input or in a page not mapped yet is dropped), so no bound is checked. */
#ifndef KAFKAREC_PREFETCH_H
#define KAFKAREC_PREFETCH_H

#include <stdint.h>
#include "always_inline.h"

#ifndef KR_PREFETCH_AHEAD
#define KR_PREFETCH_AHEAD 1024
#endif
#define KR_PREFETCH_LINE 64

/* The lines KR_PREFETCH_AHEAD bytes past `at` asked for, for a record loop at each record: three
 * lines, the span of a record of ~100-byte values (a shorter record asks for some twice, which costs
 * one instruction; a longer one's value is copied by memcpy, whose lines the hardware streams).
 * Fixed offsets from the record's start, so no state is kept across records (a loop that tracked
 * the next line to ask for, each line once, cost some 17 instructions a record and no less time). */
static inline KR_ALWAYS_INLINE void kr_prefetch_ahead(const void *at) {
#if defined(__GNUC__)
    /* computed as integers: the addresses may be past the input, which a prefetch does not read */
    uintptr_t p = (uintptr_t)at + KR_PREFETCH_AHEAD;
    __builtin_prefetch((const void *)p, 0, 3);
    __builtin_prefetch((const void *)(p + KR_PREFETCH_LINE), 0, 3);
    __builtin_prefetch((const void *)(p + 2 * KR_PREFETCH_LINE), 0, 3);
#else
    (void)at;
#endif
}

#endif /* KAFKAREC_PREFETCH_H */
