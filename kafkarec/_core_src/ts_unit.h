/* ts_unit.h: part of kafkarec._core (declared by _row_columns.pxi): a batch's timestamps, just
 * written in Kafka's milliseconds, put in a finer unit (`scale` of them a millisecond: 1000 for
 * microseconds, DuckDB's TIMESTAMP) while they are still in cache, so that no Arrow cast runs over
 * the column afterwards.
 *
 * The rule is Arrow's safe cast's (ShiftTime, multiplying): a value is in range when it lies
 * within INT64_MAX / scale either side of 0 (C's division, towards zero: -9223372036854776 ms is
 * refused as microseconds although its product would fit, as Arrow refuses it).  A batch with a
 * value out of range is left as it is, in milliseconds, and so is every batch after it in the
 * chunk (the caller's), whose Arrow cast then raises Arrow's own error. */
#ifndef KAFKAREC_TS_UNIT_H
#define KAFKAREC_TS_UNIT_H

#include <stdint.h>
#include <Python.h>

/* timestamps[0..n) times scale, in place; 1 when done, 0 (nothing changed) when one of them is out
 * of range.  Two passes the compiler vectorizes, over values the batch's walk just wrote. */
static int kr_timestamps_in_unit(int64_t *timestamps, Py_ssize_t n, int64_t scale) {
    const int64_t hi = INT64_MAX / scale, lo = -hi;
    int out = 0;
    Py_ssize_t i;
    for (i = 0; i < n; i++)
        out |= (timestamps[i] > hi) | (timestamps[i] < lo);
    if (out)
        return 0;
    for (i = 0; i < n; i++)
        timestamps[i] *= scale;
    return 1;
}

#endif /* KAFKAREC_TS_UNIT_H */
