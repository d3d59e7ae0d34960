# Meta rows: the lean columns (offset, timestamp, timestampType) of a v2 batch's records, by the
# meta-only walker (walk_v2_meta, _records.pxi) where it may walk and the scanner where it may not
# (a strict read's rules, a key bound's keys); nothing of a record's key, value or headers is read
# past its length.


cdef Py_ssize_t scanned_meta(_RecordIterator it, const uint8_t **pos, const uint8_t *end, Py_ssize_t room,
                             int64_t *offs, int64_t *tss, const KeyTable *keys, bint *fault) noexcept nogil:
    """The offsets and timestamps of the batch's records, each read by the scanner (a strict read's
    rules, a key bound's key), at most `room` of them; with `keys`, only those whose key is one of
    them; how many were kept.  *fault: a record the scanner refuses (described in it._fault, raised
    by the caller), where the reading stopped."""
    cdef RecordView v
    cdef Py_ssize_t kept = 0
    while it._remaining > 0 and kept < room:
        if unlikely(scan_v2_record(it, &v, pos, end) != 0):
            fault[0] = True
            break
        if keys == NULL or key_table_has(keys, v.key, v.key_len):
            offs[kept] = v.offset
            tss[kept] = v.timestamp
            kept += 1
    return kept


cdef Py_ssize_t meta_rows(_RecordIterator it, const uint8_t **pos, const uint8_t *end, Py_ssize_t room,
                          int64_t *offs, int64_t *tss, const KeyTable *keys, bint *fault) noexcept nogil:
    """The offsets and timestamps of the batch's records from pos[0], at most `room` of them (with
    `keys`, only those whose key is one of them); how many were written.  A key bound (every
    record's key is compared) or a strict read (the scanner's further rules) takes the scanner for
    every record; otherwise the meta-only walker walks, and a record it stops at is read by the
    scanner, which finds its fault (*fault: described in it._fault, raised by the caller, where
    the reading stopped) or reads it, and the walk goes on after it."""
    cdef RecordView v
    cdef Py_ssize_t row = 0
    if keys != NULL or it._cur.strict:
        return scanned_meta(it, pos, end, room, offs, tss, keys, fault)
    while it._remaining > 0 and row < room:
        row += walk_v2_meta(it, pos, end, room - row, offs + row, tss + row)
        if it._remaining > 0 and row < room:
            if unlikely(scan_v2_record(it, &v, pos, end) != 0):
                fault[0] = True
                break
            offs[row] = v.offset
            tss[row] = v.timestamp
            row += 1
    return row


cdef int add_v2_meta(_ArrowColumns cols, _RecordIterator it, int ts_type, RecordBatch b,
                     bint strict, bint crc_after) except -1:
    """The offsets and timestamps of one v2 batch's records (lean columns), by the meta-only
    walker (meta_rows, walk_v2_meta): nothing of a record's key, value or headers is read past its length.
    A record the walker stops at is read by the scanner, which raises its fault or returns it
    (and the walk goes on after it).  Committed when the batch is complete, as add_v2_records
    does."""
    cdef RecordView v
    cdef _KeySet keys = cols.keys
    cdef const uint8_t *payload_end = it._cur.end
    cdef Py_ssize_t payload = payload_end - it._cur.pos
    cdef Py_ssize_t rows = min(<Py_ssize_t>it._remaining, payload // 7 + 1)
    cdef Py_ssize_t row = cols.rows, r0 = cols.rows, end_row = cols.rows + rows, walked
    cdef const uint8_t *pos = it._cur.pos
    cdef int64_t *offs = <int64_t *>reserve_tail(cols.offset.values, rows * 8, False)
    cdef int64_t *tss = <int64_t *>reserve_tail(cols.timestamp.values, rows * 8, False)
    cdef int32_t *tts = <int32_t *>reserve_tail(cols.timestamp_type.values, rows * 4, False)
    cdef bint fault = False
    cdef const KeyTable *table = &keys.table if keys is not None else NULL
    if payload >= WALK_NOGIL_MIN_BYTES:
        with nogil:
            row += meta_rows(it, &pos, payload_end, end_row - row, offs, tss, table, &fault)
    else:
        row += meta_rows(it, &pos, payload_end, end_row - row, offs, tss, table, &fault)
    if fault:
        raise_record_fault(it)
    batch_timestamps_in_unit(tss, row - r0, r0, cols.ts_scale, &cols.ts_ms_from)
    batch_timestamp_types(tts, row - r0, ts_type, cols.want_timestamp_type)
    if it._remaining > 0:
        parse_v2_record_at(it, &v, &pos, payload_end)
    if crc_after:
        check_crc(b)
    it._cur.pos = pos
    commit_rows(cols, row - r0)
    return 0
