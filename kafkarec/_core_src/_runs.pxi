# Runs of batches without the GIL.
#
# A window of a log is mostly whole, uncompressed v2 data batches.  Read one by one, each batch
# takes the GIL to be framed (a RecordBatch, its record iterator) and lets it go for its records,
# then for its CRC: at 1,000 records a batch the GIL changes hands thousands of times a window,
# and the read's other threads (and any busy Python thread beside them) queue for it each time.
# A run reads such batches one after the other in one nogil section (framing, records, CRC),
# each batch kept only when whole and sound.  It ends before the first batch it does not take:
# compressed, control or legacy, a header the format or a strict read forbids, a record the loops
# refuse or leave to the GIL's path, a CRC that does not match, a column without room, a chunk
# full.  The batch-by-batch path then reads that batch as it always does (raising, reporting,
# growing the columns): a run takes only batches that path reads to the same rows without a word,
# so every rule and every error stays there.


cdef inline Py_ssize_t run_batch_size(const uint8_t *p, Py_ssize_t remaining) noexcept nogil:
    """The size of the batch at p when a run may take it, else 0: a whole v2 batch, neither
    compressed nor control, that declares records and whose header holds nothing the format
    forbids (so BatchIterator frames it and a strict read takes its header, as they would)."""
    cdef int32_t length, count, last_delta
    cdef uint16_t attributes
    if remaining < V2_HEADER_SIZE or p[OFF_MAGIC] != 2:
        return 0
    length = <int32_t>kr_load_be32(p + OFF_LENGTH)
    if (length < V2_HEADER_SIZE - LOG_OVERHEAD or length > INT32_LIMIT - LOG_OVERHEAD
            or <Py_ssize_t>length > remaining - LOG_OVERHEAD):
        return 0
    attributes = kr_load_be16(p + OFF_ATTRIBUTES)
    if attributes & (ATTR_CODEC_MASK | ATTR_CONTROL | ATTR_V2_UNUSED):
        return 0
    count = <int32_t>kr_load_be32(p + OFF_RECORDS_COUNT)
    last_delta = <int32_t>kr_load_be32(p + OFF_LAST_OFFSET_DELTA)
    if count <= 0 or last_delta < 0 or <int64_t>count > <int64_t>last_delta + 1:
        return 0
    return <Py_ssize_t>length + LOG_OVERHEAD


cdef inline Py_ssize_t run_batch_rows(const uint8_t *p, Py_ssize_t size) noexcept nogil:
    """The most rows the batch at p can give (as add_v2_records reserves: its declared count, at
    most one per 7 payload bytes, the smallest record)."""
    return min(<Py_ssize_t>kr_load_be32(p + OFF_RECORDS_COUNT), (size - V2_HEADER_SIZE) // 7 + 1)


cdef inline void run_iterator(_RecordIterator it, const uint8_t *p, Py_ssize_t size, Py_ssize_t position,
                              bint strict) noexcept nogil:
    """`it` as v2_record_iterator sets it for the uncompressed batch at p (run_batch_size's)."""
    cursor_init(&it._cur, p + V2_HEADER_SIZE, size - V2_HEADER_SIZE, position + V2_HEADER_SIZE,
                False, strict)
    it._remaining = <int32_t>kr_load_be32(p + OFF_RECORDS_COUNT)
    it._base_offset = <int64_t>kr_load_be64(p)
    it._base_timestamp = <int64_t>kr_load_be64(p + OFF_BASE_TIMESTAMP)
    it._max_timestamp = <int64_t>kr_load_be64(p + OFF_MAX_TIMESTAMP)
    it._base_sequence = <int32_t>kr_load_be32(p + OFF_BASE_SEQUENCE)
    it._last_offset_delta = <int32_t>kr_load_be32(p + OFF_LAST_OFFSET_DELTA)
    it._prev_offset_delta = -1
    it._timestamp_type = TS_LOG_APPEND if (kr_load_be16(p + OFF_ATTRIBUTES) & ATTR_LOG_APPEND_TIME) else TS_CREATE
    it._is_control = False
    it._strict = strict
    it._batch_position = position


cdef inline bint run_crc_ok(const V2Run *run, const uint8_t *p, Py_ssize_t size) noexcept nogil:
    return (not run.verify_crc
            or crc32c_nogil(p + OFF_ATTRIBUTES, size - OFF_ATTRIBUTES) == kr_load_be32(p + OFF_CRC))


# A run's batch loop is one for both layouts (fused over the struct a layout's record loop fills):
# only what a batch needs of room, how its records go in and when the chunk is full differ.
ctypedef fused Rows:
    FullRows
    MetaRows


cdef inline bint batch_room(Rows *st, const V2Run *run, Py_ssize_t rows, Py_ssize_t payload) noexcept nogil:
    """Whether st's columns have room for `rows` more rows and `payload` bytes of keys and values
    (a run grows nothing: the batch-by-batch path does)."""
    if st.row + rows > run.room_end:
        return False
    if Rows is FullRows:
        return not (bits_room(st.row, rows) > run.kvalid_cap or bits_room(st.row, rows) > run.vvalid_cap
                    or bits_room(st.row, rows) > run.hvalid_cap
                    or st.kpos + payload > INT32_LIMIT or st.vpos + payload > INT32_LIMIT
                    or st.kcopy_at + payload > INT32_LIMIT or st.vcopy_at + payload > INT32_LIMIT)
    return True


cdef inline bint batch_rows_read(_RecordIterator it, Rows *st, Py_ssize_t rows) noexcept nogil:
    """The records of the batch `it` is at (run_iterator's) into st's columns, as add_v2_records
    (full rows) or add_v2_meta (meta rows) writes them; False where the record loop stopped short
    (a record refused, or one left to the GIL's path)."""
    cdef const uint8_t *pos
    cdef Py_ssize_t n, row0 = st.row
    cdef int64_t *tss0 = st.tss
    cdef bint fault = False
    if Rows is FullRows:
        preset_bits(st.kvalid, st.row, rows, True)
        preset_bits(st.vvalid, st.row, rows, True)
        preset_bits(st.hvalid, st.row, rows, False)
        st.pos = it._cur.pos
        st.end = it._cur.end
        st.end_row = st.row + rows
        st.ts_type = it._timestamp_type
        if full_rows(it, st) != ROWS_DONE:
            return False
        batch_timestamps_in_unit(tss0, st.row - row0, row0, st.ts_scale, &st.ts_ms_from)
        return True
    else:
        pos = it._cur.pos
        n = meta_rows(it, &pos, it._cur.end, rows, st.offs, st.tss, st.keys, &fault)
        if fault:
            return False
        batch_timestamps_in_unit(st.tss, n, row0, st.ts_scale, &st.ts_ms_from)
        batch_timestamp_types(st.tts, n, it._timestamp_type, st.want_timestamp_type)
        st.offs += n
        st.tss += n
        st.tts += n
        st.row += n
        return True


cdef inline bint chunk_full(Rows *st, const V2Run *run) noexcept nogil:
    """Whether the chunk reached one of its limits (rows; bytes of the columns built)."""
    if Rows is FullRows:
        return st.row >= run.max_rows or st.kpos + st.vpos + st.hk_size + st.hv_size >= run.max_bytes
    return st.row >= run.max_rows


cdef void run_batches(_RecordIterator it, Rows *st, V2Run *run) noexcept nogil:
    """Whole batches from run.offset into st's columns, each kept when whole and sound; st is left
    as after the last batch kept."""
    cdef Rows kept
    cdef const uint8_t *p
    cdef Py_ssize_t size, rows
    while True:
        p = run.buf + run.offset
        size = run_batch_size(p, run.end - run.offset)
        if size == 0:
            return
        rows = run_batch_rows(p, size)
        if not batch_room(st, run, rows, size - V2_HEADER_SIZE):
            return
        kept = st[0]
        run_iterator(it, p, size, run.origin + run.offset, run.strict)
        if not batch_rows_read(it, st, rows) or it._remaining > 0 or not run_crc_ok(run, p, size):
            st[0] = kept
            return
        run.offset += size
        run.batches += 1
        if chunk_full(st, run):
            return


cdef inline Py_ssize_t room_rows(_Growable g, Py_ssize_t width) noexcept:
    return (g.capacity - g.size) // width


cdef Py_ssize_t take_run(_ArrowColumns cols, BatchIterator batches, _RecordIterator it,
                         Py_ssize_t max_rows, Py_ssize_t max_bytes) except -1:
    """The batches a run takes from where `batches` is (see above), committed to `cols` and
    `batches` moved past them; how many.  The GIL is let go when the first of them can be taken
    and the input left is worth it (a few small batches are read with it held, as by the
    batch-by-batch path: the same run, without the release and retake)."""
    cdef V2Run run
    cdef FullRows st
    cdef MetaRows meta
    cdef _Column key = cols.key, value = cols.value
    cdef Py_ssize_t r0 = cols.rows, rows, size
    cdef bint release
    run.buf = batches._buf.ptr
    run.origin = batches._buf.origin
    run.offset = batches._offset
    run.end = batches._end
    run.verify_crc = batches._verify_crc
    run.strict = batches._strict
    run.max_rows = max_rows
    run.max_bytes = max_bytes
    run.batches = 0
    run.room_end = r0 + min(room_rows(cols.offset.values, 8), room_rows(cols.timestamp.values, 8),
                            room_rows(cols.timestamp_type.values, 4))
    size = run_batch_size(run.buf + run.offset, run.end - run.offset)
    if size == 0 or r0 + run_batch_rows(run.buf + run.offset, size) > run.room_end:
        return 0
    release = run.end - run.offset >= WALK_NOGIL_MIN_BYTES
    if cols.lean:
        meta.row = r0
        meta.keys = &cols.keys.table if cols.keys is not None else NULL
        meta.offs = <int64_t *>(cols.offset.values.data + cols.offset.values.size)
        meta.tss = <int64_t *>(cols.timestamp.values.data + cols.timestamp.values.size)
        meta.tts = <int32_t *>(cols.timestamp_type.values.data + cols.timestamp_type.values.size)
        meta.want_timestamp_type = cols.want_timestamp_type
        meta.ts_scale = cols.ts_scale
        meta.ts_ms_from = cols.ts_ms_from
        if release:
            with nogil:
                run_batches(it, &meta, &run)
        else:
            run_batches(it, &meta, &run)
        rows = meta.row - r0
        cols.ts_ms_from = meta.ts_ms_from
    else:
        if cols.views:
            run.room_end = min(run.room_end, r0 + min(room_rows(key.values, VIEW_SIZE),
                                                      room_rows(value.values, VIEW_SIZE),
                                                      room_rows(cols.headers.offsets, 4)))
        else:
            run.room_end = min(run.room_end, r0 + min(room_rows(key.offsets, 4), room_rows(value.offsets, 4),
                                                      room_rows(cols.headers.offsets, 4)))
        run.kvalid_cap = key.valid.capacity
        run.vvalid_cap = value.valid.capacity
        run.hvalid_cap = cols.headers.valid.capacity
        if (r0 + run_batch_rows(run.buf + run.offset, size) > run.room_end
                or key.valid.data == NULL or value.valid.data == NULL or cols.headers.valid.data == NULL):
            return 0
        full_rows_open(cols, &st, run.strict)
        if cols.copies:     # a run's batches are uncompressed: their records are the window's,
            st.copies = True    # a map's copied
        elif cols.views:
            st.src_base = run.buf
            st.src_index = cols.window_source()
        if release:
            with nogil:
                run_batches(it, &st, &run)
        else:
            run_batches(it, &st, &run)
        rows = st.row - r0
        if run.batches:
            full_rows_commit(cols, &st, rows)
            headers_out(cols, &st)
            cols.ts_ms_from = st.ts_ms_from
    if run.batches:
        commit_rows(cols, rows)
        batches._offset = run.offset
    return run.batches
