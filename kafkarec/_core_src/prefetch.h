/* prefetch.h: part of kafkarec._core (declared by _records.pxi): the record loops' reads ahead.
 *
 * A log is read once, front to back, from memory (a page-cache mapping or a read buffer) far
 * larger than any cache.  The record loops stall on the first byte of every record's next cache
 * line (a header count past a 100-byte value took a fifth of the full decode's samples, issue 80):
 * the hardware's stream prefetcher stops at each 4 KiB page and starts late on the next.  So each
 * loop asks for the lines KR_PREFETCH_AHEAD bytes ahead of the record it reads, each line once,
 * as it goes: a few records ahead is the ~100 ns a line takes from memory.  A prefetch never
 * faults (a line past the input or in a page not mapped yet is dropped), so no bound is checked. */
#ifndef KAFKAREC_PREFETCH_H
#define KAFKAREC_PREFETCH_H

#include <stdint.h>
#include "always_inline.h"

#define KR_PREFETCH_AHEAD 1024
#define KR_PREFETCH_LINE 64

/* The lines from `from` (the first not asked for yet) up to KR_PREFETCH_AHEAD bytes past `at`
 * asked for; returns the first line not asked for.  A loop starts with from = at. */
static inline KR_ALWAYS_INLINE uintptr_t kr_prefetch_ahead(uintptr_t from, uintptr_t at) {
#if defined(__GNUC__)
    uintptr_t to = at + KR_PREFETCH_AHEAD;
    for (; from < to; from += KR_PREFETCH_LINE)
        __builtin_prefetch((const void *)from, 0, 3);
#endif
    return from;
}

#endif /* KAFKAREC_PREFETCH_H */
