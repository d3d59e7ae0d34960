/* ts_unit.h: part of kafkarec._core (declared by _row_columns.pxi): a batch's timestamps, just
 * written in Kafka's milliseconds, put in a finer unit (`scale` of them a millisecond: 1000 for
 * microseconds, DuckDB's TIMESTAMP; 1000000 for nanoseconds) while they are still in cache, so
 * that no Arrow cast runs over the column afterwards.
 *
 * The rule is Arrow's safe cast's (ShiftTime, multiplying): a value is in range when it lies
 * within INT64_MAX / scale either side of 0 (C's division, towards zero, as Arrow's: the range is
 * -(INT64_MAX / scale) .. INT64_MAX / scale, each end's product in int64).  A batch with a
 * value out of range is left as it is, in milliseconds, and so is every batch after it in the
 * chunk (the caller's), whose Arrow cast then raises Arrow's own error.
 *
 * Both passes are ones the compiler vectorizes (a scalar loop of compares and 64-bit multiplies
 * took 3.5% of issue 80's DuckDB query, more than the Arrow cast it replaced): the range is first
 * tested against a power of two inside it (2^52 ms, 2^43 for ns: one add, shift and or a value;
 * only a batch failing that is tested exactly), and the multiply by 1000 is shifts and subtracts
 * (nanoseconds: twice), with an AVX2 clone where gcc makes them, as meta_walk.h's kr_add_zigzag. */
#ifndef KAFKAREC_TS_UNIT_H
#define KAFKAREC_TS_UNIT_H

#include <stdint.h>
#include <Python.h>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) && defined(__GLIBC__)
#define KR_TS_CLONES __attribute__((noinline, target_clones("avx2", "default")))
#elif defined(__GNUC__)
#define KR_TS_CLONES __attribute__((noinline))
#else
#define KR_TS_CLONES
#endif

/* whether every value lies in [-2^k, 2^k) */
static KR_TS_CLONES int kr_timestamps_within(const int64_t *timestamps, Py_ssize_t n, int k) {
    uint64_t out = 0;
    Py_ssize_t i;
    for (i = 0; i < n; i++)
        out |= ((uint64_t)timestamps[i] + ((uint64_t)1 << k)) >> (k + 1);
    return out == 0;
}

/* every value times 1000 (wrapping: the caller checked the range) */
static KR_TS_CLONES void kr_timestamps_times_1000(int64_t *timestamps, Py_ssize_t n) {
    Py_ssize_t i;
    for (i = 0; i < n; i++) {
        uint64_t u = (uint64_t)timestamps[i];
        timestamps[i] = (int64_t)((u << 10) - (u << 4) - (u << 3));
    }
}

/* timestamps[0..n) times scale (1000 or 1000000), in place; 1 when done, 0 (nothing changed) when
 * one of them is out of range. */
static int kr_timestamps_in_unit(int64_t *timestamps, Py_ssize_t n, int64_t scale) {
    const int64_t hi = INT64_MAX / scale, lo = -hi;
    Py_ssize_t i;
    /* 2^52 < INT64_MAX / 1000, 2^43 < INT64_MAX / 1000000 */
    if (!kr_timestamps_within(timestamps, n, scale == 1000 ? 52 : 43)) {
        for (i = 0; i < n; i++)
            if (timestamps[i] > hi || timestamps[i] < lo)
                return 0;
    }
    kr_timestamps_times_1000(timestamps, n);
    if (scale != 1000)
        kr_timestamps_times_1000(timestamps, n);
    return 1;
}

#endif /* KAFKAREC_TS_UNIT_H */
