# Full rows: a v2 batch's records whole (key, value, headers and the per-row columns) into the row
# columns (_row_columns.pxi), by one record loop without the GIL (full_rows) through raw pointers
# into room reserved up front (FullRows, _rows.pxd), and a record that loop leaves (a column to
# grow, a header key to replace) by the GIL's path (full_row_gil).  The batch-by-batch path
# (add_v2_records) and a run of batches (_runs.pxi) open, fill and commit the same FullRows.


cdef inline void headers_in(_ArrowColumns cols, FullRows *st) noexcept:
    """The header columns' room as they are now, into st."""
    cdef _Column hk = cols.header_key, hv = cols.header_value
    st.entries = cols.header_entries.length
    st.hk_data = hk.values.data
    st.hk_size = hk.values.size
    st.hk_cap = hk.values.capacity
    st.hk_offs = hk.offsets.data
    st.hk_offs_size = hk.offsets.size
    st.hk_offs_cap = hk.offsets.capacity
    st.hv_data = hv.values.data
    st.hv_size = hv.values.size
    st.hv_cap = hv.values.capacity
    st.hv_offs = hv.offsets.data
    st.hv_offs_size = hv.offsets.size
    st.hv_offs_cap = hv.offsets.capacity
    st.hv_valid = hv.valid.data
    st.hv_valid_cap = hv.valid.capacity
    st.hv_nulls = hv.nulls


cdef inline void headers_out(_ArrowColumns cols, FullRows *st) noexcept:
    """The header entries full_rows appended, counted in the header columns."""
    cdef _Column hk = cols.header_key, hv = cols.header_value
    hk.values.size = st.hk_size
    hk.offsets.size = st.hk_offs_size
    hk.length = st.entries
    hv.values.size = st.hv_size
    hv.offsets.size = st.hv_offs_size
    hv.valid.size = (st.entries + 7) >> 3
    hv.nulls = st.hv_nulls
    hv.length = st.entries
    cols.header_entries.length = st.entries


cdef inline always_inline_int put_headers(FullRows *st, RecordView *v) noexcept nogil:
    """A record's headers appended to the header columns as add_headers appends them; 0, or
    ROWS_SLOW with nothing appended: a column lacks room (or would pass 2 GiB), or a header key is
    not UTF-8 outside strict reads (Java's replacement builds a str: the GIL's path does it).
    The scanner has read every varint and length of the headers, but the bytes may be a map of
    a file another process writes, read again without the GIL: every length is checked once
    more, and anything other than what the scanner saw goes to the GIL's path, whose checked
    cursor raises (nothing is read or written past the record or the room)."""

    cdef Py_ssize_t room = v.headers_end - v.headers     # keys and values together are shorter
    cdef Py_ssize_t n = v.header_count, e
    cdef const uint8_t *p = v.headers
    cdef const uint8_t *kp
    cdef int32_t i, klen, vlen, at
    cdef Py_ssize_t hk_size = st.hk_size, hk_offs_size = st.hk_offs_size
    cdef Py_ssize_t hv_size = st.hv_size, hv_offs_size = st.hv_offs_size, hv_nulls = st.hv_nulls
    if (hk_size + room + KAFKAREC_COPY_SLACK > st.hk_cap or hv_size + room + KAFKAREC_COPY_SLACK > st.hv_cap
            or hk_offs_size + 4 * n > st.hk_offs_cap or hv_offs_size + 4 * n > st.hv_offs_cap
            or ((st.entries + n + 7) >> 3) + 1 > st.hv_valid_cap
            or hk_size + room + KAFKAREC_COPY_SLACK > INT32_LIMIT
            or hv_size + room + KAFKAREC_COPY_SLACK > INT32_LIMIT):
        return ROWS_SLOW
    e = st.entries
    for i in range(n):
        if take_varint(&p, v.headers_end, False, &klen) != VARINT_OK or klen < 0 or klen > v.headers_end - p:
            return ROWS_SLOW
        kp = p
        p += klen
        if not st.strict and not is_utf8(kp, klen):     # (strict: the scanner refused it)
            return ROWS_SLOW        # nothing counted yet: st's sizes are as they were
        kafkarec_copy_short(st.hk_data + hk_size, kp, klen, st.end)
        hk_size += klen
        at = <int32_t>hk_size
        memcpy(st.hk_offs + hk_offs_size, &at, 4)
        hk_offs_size += 4
        if (take_varint(&p, v.headers_end, False, &vlen) != VARINT_OK
                or (vlen >= 0 and vlen > v.headers_end - p)):
            return ROWS_SLOW
        if (e & 7) == 0:
            st.hv_valid[e >> 3] = 0
        if vlen >= 0:
            kafkarec_copy_short(st.hv_data + hv_size, p, vlen, st.end)
            p += vlen
            hv_size += vlen
            st.hv_valid[e >> 3] |= <uint8_t>(1 << (e & 7))
        else:
            # cleared, not left as found: a batch of a run that failed after its headers were
            # written is put back (take_run) without cutting this bitmap, so the bit may be set
            st.hv_valid[e >> 3] &= <uint8_t>~(1 << (e & 7))
            hv_nulls += 1
        at = <int32_t>hv_size
        memcpy(st.hv_offs + hv_offs_size, &at, 4)
        hv_offs_size += 4
        e += 1
    st.entries = e
    st.hk_size = hk_size
    st.hk_offs_size = hk_offs_size
    st.hv_size = hv_size
    st.hv_offs_size = hv_offs_size
    st.hv_nulls = hv_nulls
    return 0


cdef inline always_inline_int leave_out_unwanted(RecordView *v, bint want_key, bint want_value,
                                                 bint want_headers, const uint8_t *at) noexcept nogil:
    """A record's key, value or headers that the projection does not want made empty (an empty
    key or value at `at`, no header): nothing of them is copied, and the column is dropped when
    the chunk is finished.  The record loop and the GIL's path share it."""
    if not want_key:
        v.key = at
        v.key_len = 0
    if not want_value:
        v.value = at
        v.value_len = 0
    if not want_headers:
        v.header_count = 0
    return 0


cdef inline always_inline_int put_field(uint8_t *data, Py_ssize_t *at, uint8_t **valid, Py_ssize_t *nulls,
                                        Py_ssize_t row, const uint8_t *p, int32_t n,
                                        const uint8_t *end) noexcept nogil:
    """A key's or value's n bytes at data[at] (at moved past them), the room checked by the caller;
    a null (n < 0) clears its row's bit (the bits are preset to valid) and is counted.  The record
    loop (its place in a register) and the GIL's path (in FullRows) share it.  The bitmap is given
    by its address in FullRows, read only for a null: a pointer read on every record (the bytes
    just copied may alias it) cost the loop 3 instructions a record (count_instructions.py kv)."""
    if likely(n >= 0):
        kafkarec_copy_short(data + at[0], p, n, end)
        at[0] += n
    else:
        valid[0][row >> 3] &= <uint8_t>~(1 << (row & 7))
        nulls[0] += 1
    return 0


# Whether the walks into columns (field_walk.h, view_walk.h) take the reads they serve: off, every
# record of a full read is the scanner's.  For the tests that hold the walks to the scanner's read
# of the same bytes (no other read of a whole row is left to the scanner alone), and for an A/B
# measure of the walks in one process.
cdef bint record_walks_on = True


def record_walks(on=None, /) -> bool:
    """Whether full reads take records by the walks into columns (True, the default) or every
    record by the record scanner; ``on`` sets it (process-wide) and the previous setting is
    returned.  For tests and measures that compare the two: the rows, errors and stopping points
    are the same either way.

    >>> previous = record_walks(False); record_walks(previous)
    False
    """
    global record_walks_on
    cdef bint previous = record_walks_on
    if on is not None:
        record_walks_on = bool(on)
    return previous


cdef int full_rows(_RecordIterator it, FullRows *st) noexcept nogil:
    """The records of st's batch into the full row's columns, through raw pointers into the room
    reserved for them, until the batch's records are read (ROWS_DONE), a record is refused
    (ROWS_FAULT) or one is left to the GIL's path (ROWS_SLOW, not moved past).  No Python object
    is touched: a reader decoding windows on several threads decodes them at once.  A key bound
    takes a loop of its own (full_rows_keyed), and so do the view layout (full_rows_views) and a
    projection without the headers (full_rows_lean), so the common one tests nothing for them."""
    if st.views:
        return full_rows_views(it, st)
    if st.keys != NULL:
        return full_rows_keyed(it, st)
    if st.want_headers:
        if not st.strict and record_walks_on:
            return full_rows_fields_walked(it, st, True)
        return full_rows_loop(it, st, False, False, False, True, True)
    return full_rows_lean(it, st)


cdef int full_rows_lean(_RecordIterator it, FullRows *st) noexcept nogil:
    # a projection without the headers: by the walk outside strict reads (the columns analysts
    # select, `offset, timestamp, key, value`); else no header state in the loop, and without the
    # timestamps either (DuckDB's [key, value]), none written (a function of their own: compiled
    # beside the common copy, all three in one function, that copy took 11 more instructions a
    # record)
    if not st.strict and record_walks_on:
        return full_rows_fields_walked(it, st, False)
    if st.want_timestamp:
        return full_rows_loop(it, st, False, False, False, False, True)
    return full_rows_loop(it, st, False, False, False, False, False)


cdef int full_rows_keyed(_RecordIterator it, FullRows *st) noexcept nogil:
    return full_rows_loop(it, st, True, False, False, st.want_headers, True)


cdef int full_rows_views(_RecordIterator it, FullRows *st) noexcept nogil:
    # without a key bound or strict rules (DuckDB's [key, value], Polars' four columns, a whole
    # row) by the walk, whether a long key or value is copied or viewed where it is
    if st.keys == NULL and not st.strict and record_walks_on:
        if st.want_headers:
            return full_rows_walked(it, st, True)
        return full_rows_walked(it, st, False)
    if st.copies:
        return full_rows_copied_views(it, st)
    if st.keys != NULL:
        return full_rows_loop(it, st, True, True, False, st.want_headers, True)
    return full_rows_loop(it, st, False, True, False, st.want_headers, True)


cdef inline void walked_rows(_RecordIterator it, FullRows *st, Py_ssize_t n) noexcept nogil:
    """The n rows a walk wrote (view_walk.h, field_walk.h) counted: their timestamps made the
    batch's max in a LOG_APPEND_TIME batch, their timestamp types filled, the batch's records and
    the per-row columns moved past them."""
    log_append_times(it, st.tss, n)
    batch_timestamp_types(st.tts, n, st.ts_type, st.want_timestamp_type)
    it._remaining -= <int32_t>n
    st.row += n
    st.offs += n
    st.tss += n
    st.tts += n
    st.hoff += n


cdef extern from "header_walk.h":
    # the header columns as the walks fill them (the same in both layouts)
    ctypedef struct KrHeaderColumns:
        int32_t *row_offsets
        uint8_t *row_valid
        Py_ssize_t with_headers
        Py_ssize_t entries
        uint8_t *key_data
        Py_ssize_t key_size
        Py_ssize_t key_cap
        uint8_t *key_offsets
        Py_ssize_t key_offsets_size
        Py_ssize_t key_offsets_cap
        uint8_t *value_data
        Py_ssize_t value_size
        Py_ssize_t value_cap
        uint8_t *value_offsets
        Py_ssize_t value_offsets_size
        Py_ssize_t value_offsets_cap
        uint8_t *value_valid
        Py_ssize_t value_valid_cap
        Py_ssize_t value_nulls


cdef inline void header_columns_in(FullRows *st, KrHeaderColumns *h) noexcept nogil:
    """The header columns' room and places as the walk takes them, from st."""
    h.row_offsets = st.hoff
    h.row_valid = st.hvalid
    h.with_headers = st.with_headers
    h.entries = st.entries
    h.key_data = st.hk_data
    h.key_size = st.hk_size
    h.key_cap = st.hk_cap
    h.key_offsets = st.hk_offs
    h.key_offsets_size = st.hk_offs_size
    h.key_offsets_cap = st.hk_offs_cap
    h.value_data = st.hv_data
    h.value_size = st.hv_size
    h.value_cap = st.hv_cap
    h.value_offsets = st.hv_offs
    h.value_offsets_size = st.hv_offs_size
    h.value_offsets_cap = st.hv_offs_cap
    h.value_valid = st.hv_valid
    h.value_valid_cap = st.hv_valid_cap
    h.value_nulls = st.hv_nulls


cdef inline void header_columns_out(FullRows *st, KrHeaderColumns *h) noexcept nogil:
    """What the walk appended to the header columns, back into st."""
    st.with_headers = h.with_headers
    st.entries = h.entries
    st.hk_size = h.key_size
    st.hk_offs_size = h.key_offsets_size
    st.hv_size = h.value_size
    st.hv_offs_size = h.value_offsets_size
    st.hv_nulls = h.value_nulls


cdef extern from "view_walk.h":
    # the walk of the records that end well before the section's end into views of copied bytes
    # (why it checks less than the scanner and accepts only what the scanner accepts: the header)
    ctypedef struct KrViewColumn:
        uint8_t *views
        uint8_t *valid
        Py_ssize_t nulls
        Py_ssize_t counted
        uint8_t *copy
        Py_ssize_t copy_at
        Py_ssize_t copy_cap
    Py_ssize_t kr_walk_views(const uint8_t **pos, const uint8_t *end, Py_ssize_t count,
                             Py_ssize_t row, int64_t *offsets, int64_t *timestamps,
                             KrViewColumn *key, KrViewColumn *value, int want_key, int want_value,
                             int64_t base_offset, int64_t base_timestamp, const uint8_t *base,
                             int32_t index) nogil
    Py_ssize_t kr_walk_views_headers(const uint8_t **pos, const uint8_t *end, Py_ssize_t count,
                                     Py_ssize_t row, int64_t *offsets, int64_t *timestamps,
                                     KrViewColumn *key, KrViewColumn *value,
                                     KrHeaderColumns *headers, int want_key, int want_value,
                                     int64_t base_offset, int64_t base_timestamp,
                                     const uint8_t *base, int32_t index) nogil


cdef extern from "field_walk.h":
    # the walk of the records that end well before the section's end into the classic layout's
    # columns (why it checks less than the scanner and accepts only what the scanner accepts: the
    # header)
    ctypedef struct KrFieldColumn:
        uint8_t *data
        Py_ssize_t size
        Py_ssize_t cap
        int32_t *offsets
        uint8_t *valid
        Py_ssize_t nulls
    Py_ssize_t kr_walk_fields(const uint8_t **pos, const uint8_t *end, Py_ssize_t count,
                              Py_ssize_t row, int64_t *offsets, int64_t *timestamps,
                              KrFieldColumn *key, KrFieldColumn *value, int want_key, int want_value,
                              int64_t base_offset, int64_t base_timestamp) nogil
    Py_ssize_t kr_walk_fields_headers(const uint8_t **pos, const uint8_t *end, Py_ssize_t count,
                                      Py_ssize_t row, int64_t *offsets, int64_t *timestamps,
                                      KrFieldColumn *key, KrFieldColumn *value,
                                      KrHeaderColumns *headers, int want_key, int want_value,
                                      int64_t base_offset, int64_t base_timestamp) nogil


cdef inline always_inline_int full_rows_fields_walked(_RecordIterator it, FullRows *st,
                                                      bint headers) noexcept nogil:
    """full_rows outside strict reads and without a key bound, in the classic layout, with the
    headers or without them (full_rows_lean): the records the walk takes (field_walk.h), and each it
    stops at, the batch's last among them, by the scanner's loop, one at a time, the walk resumed
    after it; the same statuses as full_rows_loop."""
    cdef Py_ssize_t end_row = st.end_row, n
    cdef int status = ROWS_DONE
    cdef KrFieldColumn k, v
    cdef KrHeaderColumns h
    while it._remaining > 0 and st.row < end_row:
        if it._remaining > 1:
            k.data = st.kdata
            k.size = st.kpos
            k.cap = st.kcap
            k.offsets = st.ko
            k.valid = st.kvalid
            k.nulls = st.key_nulls
            v.data = st.vdata
            v.size = st.vpos
            v.cap = st.vcap
            v.offsets = st.vo
            v.valid = st.vvalid
            v.nulls = st.value_nulls
            # (the batch's last record is the scanner's: Kafka's check for bytes left after it)
            if headers:
                header_columns_in(st, &h)
                n = kr_walk_fields_headers(&st.pos, st.end, min(end_row - st.row, it._remaining - 1),
                                           st.row, st.offs, st.tss, &k, &v, &h, st.want_key,
                                           st.want_value, it._base_offset, it._base_timestamp)
                header_columns_out(st, &h)
            else:
                n = kr_walk_fields(&st.pos, st.end, min(end_row - st.row, it._remaining - 1), st.row,
                                   st.offs, st.tss, &k, &v, st.want_key, st.want_value,
                                   it._base_offset, it._base_timestamp)
            st.kpos = k.size
            st.vpos = v.size
            st.key_nulls = k.nulls
            st.value_nulls = v.nulls
            walked_rows(it, st, n)
            st.ko += n                  # (the classic layout's offsets: views have none)
            st.vo += n
            if it._remaining == 0 or st.row >= end_row:
                break
        st.end_row = st.row + 1         # the record the walk stopped at, by the scanner
        status = full_rows_loop(it, st, False, False, False, headers, True)
        st.end_row = end_row
        if status != ROWS_DONE:
            break
    return status


cdef int full_rows_copied_views(_RecordIterator it, FullRows *st) noexcept nogil:
    # views of a map's records, copied, by the scanner's loop (a read the walk does not take)
    if st.keys != NULL:
        return full_rows_loop(it, st, True, True, True, st.want_headers, True)
    if st.want_headers:
        return full_rows_loop(it, st, False, True, True, True, True)
    if st.want_timestamp:
        return full_rows_loop(it, st, False, True, True, False, True)
    return full_rows_loop(it, st, False, True, True, False, False)


cdef inline always_inline_int full_rows_walked(_RecordIterator it, FullRows *st,
                                               bint headers) noexcept nogil:
    """full_rows_views without a key bound, outside strict reads, with the headers or without them,
    long keys and values copied (st.copies) or viewed in the bytes read: the records the walk takes
    (view_walk.h), and each it stops at, the batch's last among them, by the scanner's loop, one at
    a time, the walk resumed after it; the same statuses as full_rows_loop."""
    cdef Py_ssize_t end_row = st.end_row, n
    cdef int status = ROWS_DONE
    cdef KrViewColumn k, v
    cdef KrHeaderColumns h
    cdef const uint8_t *base = NULL         # (NULL: long keys and values copied)
    if not st.copies:
        base = st.src_base
    while it._remaining > 0 and st.row < end_row:
        if it._remaining > 1:
            k.views = st.kdata
            k.valid = st.kvalid
            k.nulls = st.key_nulls
            k.counted = st.kpos
            k.copy = st.kcopy
            k.copy_at = st.kcopy_at
            k.copy_cap = st.kcopy_cap
            v.views = st.vdata
            v.valid = st.vvalid
            v.nulls = st.value_nulls
            v.counted = st.vpos
            v.copy = st.vcopy
            v.copy_at = st.vcopy_at
            v.copy_cap = st.vcopy_cap
            # (the batch's last record is the scanner's: Kafka's check for bytes left after it)
            if headers:
                header_columns_in(st, &h)
                n = kr_walk_views_headers(&st.pos, st.end, min(end_row - st.row, it._remaining - 1),
                                          st.row, st.offs, st.tss, &k, &v, &h, st.want_key,
                                          st.want_value, it._base_offset, it._base_timestamp, base,
                                          st.src_index)
                header_columns_out(st, &h)
            else:
                n = kr_walk_views(&st.pos, st.end, min(end_row - st.row, it._remaining - 1), st.row,
                                  st.offs, st.tss, &k, &v, st.want_key, st.want_value, it._base_offset,
                                  it._base_timestamp, base, st.src_index)
            st.key_nulls = k.nulls
            st.kpos = k.counted
            st.kcopy_at = k.copy_at
            st.value_nulls = v.nulls
            st.vpos = v.counted
            st.vcopy_at = v.copy_at
            walked_rows(it, st, n)
            if it._remaining == 0 or st.row >= end_row:
                break
        st.end_row = st.row + 1         # the record the walk stopped at, by the scanner
        status = full_rows_loop(it, st, False, True, st.copies, headers, True)
        st.end_row = end_row
        if status != ROWS_DONE:
            break
    return status


cdef inline always_inline_int full_rows_loop(_RecordIterator it, FullRows *st, bint keyed,
                                             bint views, bint copies, bint headers,
                                             bint timestamps) noexcept nogil:
    """full_rows' loop; keyed, views, copies (views of copied bytes, st.copies), headers
    (st.want_headers) and timestamps (False: not written, st.want_timestamp) are constants of each
    of its copies, so that the common one, and one without headers or timestamps (DuckDB's [key,
    value]), carry no state for what they do not do."""
    cdef RecordView v
    cdef const uint8_t *pos = st.pos
    cdef const uint8_t *end = st.end
    cdef const uint8_t *start
    cdef int32_t remaining
    cdef int64_t prev_delta
    cdef int status = ROWS_DONE
    # The per-row columns are indexed by the rows this call wrote (i), not each walked by a pointer
    # of its own: six pointers advanced per row did not fit in registers (each was loaded, stored
    # through, moved and stored back every row).
    cdef Py_ssize_t row0 = st.row, i = 0, room = st.end_row - st.row
    cdef Py_ssize_t kpos = st.kpos, vpos = st.vpos, kcap = st.kcap, vcap = st.vcap
    cdef uint8_t *kdata = st.kdata
    cdef uint8_t *vdata = st.vdata
    cdef int32_t *ko = st.ko
    cdef int32_t *vo = st.vo
    cdef int64_t *offs = st.offs
    cdef int64_t *tss = st.tss
    cdef int32_t *tts = st.tts
    cdef int32_t *hoff = st.hoff
    cdef int32_t ts_type = st.ts_type
    cdef bint want_key = st.want_key, want_value = st.want_value
    cdef const uint8_t *src_base = st.src_base
    cdef int32_t src_index = st.src_index
    cdef uint8_t *kcopy = st.kcopy
    cdef uint8_t *vcopy = st.vcopy
    cdef Py_ssize_t kcopy_at = st.kcopy_at, vcopy_at = st.vcopy_at
    cdef Py_ssize_t kcopy_cap = st.kcopy_cap, vcopy_cap = st.vcopy_cap
    while it._remaining > 0 and i < room:
        kr_prefetch_ahead(pos)
        start = pos
        remaining = it._remaining
        prev_delta = it._prev_offset_delta
        if unlikely(scan_v2_record(it, &v, &pos, end) != 0):
            status = ROWS_FAULT
            break
        if keyed and not key_table_has(st.keys, v.key, v.key_len):
            continue                    # read (and checked), not kept: no row
        leave_out_unwanted(&v, want_key, want_value, headers, start)
        if unlikely((not views and ((v.key_len >= 0 and kpos + v.key_len + KAFKAREC_COPY_SLACK > kcap)
                                    or (v.value_len >= 0 and vpos + v.value_len + KAFKAREC_COPY_SLACK > vcap)))
                    or (copies and ((v.key_len > VIEW_INLINE
                                     and kcopy_at + v.key_len + KAFKAREC_COPY_SLACK > kcopy_cap)
                                    or (v.value_len > VIEW_INLINE
                                        and vcopy_at + v.value_len + KAFKAREC_COPY_SLACK > vcopy_cap)))
                    or (headers and v.header_count != 0 and put_headers(st, &v) != 0)):
            # (the headers are put last of these tests: when they are put the row is written)
            pos = start                     # the record again, by the GIL's path
            it._remaining = remaining
            it._prev_offset_delta = prev_delta
            status = ROWS_SLOW
            break
        if copies:
            put_view_copied(kdata, &st.kvalid, &st.key_nulls, &kpos, row0 + i, v.key, v.key_len, kcopy,
                            &kcopy_at, end)
            put_view_copied(vdata, &st.vvalid, &st.value_nulls, &vpos, row0 + i, v.value, v.value_len,
                            vcopy, &vcopy_at, end)
        elif views:     # (views are indexed by row; the view room was reserved with the rows')
            put_view(kdata, &st.kvalid, &st.key_nulls, &kpos, row0 + i, v.key, v.key_len, src_base,
                     src_index)
            put_view(vdata, &st.vvalid, &st.value_nulls, &vpos, row0 + i, v.value, v.value_len,
                     src_base, src_index)
        else:
            put_field(kdata, &kpos, &st.kvalid, &st.key_nulls, row0 + i, v.key, v.key_len, end)
            put_field(vdata, &vpos, &st.vvalid, &st.value_nulls, row0 + i, v.value, v.value_len, end)
            ko[i] = <int32_t>kpos
            vo[i] = <int32_t>vpos
        offs[i] = v.offset
        if timestamps:
            tss[i] = v.timestamp
        if headers:
            if unlikely(v.header_count != 0):
                st.hvalid[(row0 + i) >> 3] |= <uint8_t>(1 << ((row0 + i) & 7))
                st.with_headers += 1
            hoff[i] = <int32_t>st.entries
        i += 1
    # Filled once for the rows written, not per row (a read without the headers leaves their list
    # offsets unwritten: the column is never finished, _ArrowColumns.want_headers).
    batch_timestamp_types(tts, i, ts_type, st.want_timestamp_type)
    st.pos = pos
    st.row = row0 + i
    st.kpos = kpos
    st.vpos = vpos
    if copies:
        st.kcopy_at = kcopy_at
        st.vcopy_at = vcopy_at
    if not views:
        st.ko = ko + i
        st.vo = vo + i
    st.offs = offs + i
    st.tss = tss + i
    st.tts = tts + i
    st.hoff = hoff + i
    return status


cdef int full_row_gil(_ArrowColumns cols, _RecordIterator it, FullRows *st) except -1:
    """The batch's next record by the GIL's path: its fault raised, a key bound's test, columns
    grown, a header key replaced as Java decodes it (add_headers); then st as full_rows leaves it."""
    cdef RecordView v
    cdef Py_ssize_t row = st.row
    parse_v2_record_at(it, &v, &st.pos, st.end)
    if cols.keys is not None and not cols.keys.has(v.key, v.key_len):
        return 0
    leave_out_unwanted(&v, st.want_key, st.want_value, st.want_headers, st.pos)
    if st.copies:
        full_row_copied_views(cols, &v, st, row)
    elif st.views:
        put_view(st.kdata, &st.kvalid, &st.key_nulls, &st.kpos, row, v.key, v.key_len, st.src_base,
                 st.src_index)
        put_view(st.vdata, &st.vvalid, &st.value_nulls, &st.vpos, row, v.value, v.value_len,
                 st.src_base, st.src_index)
    else:
        full_row_fields(cols, &v, st, row)
    st.offs[0] = v.offset
    st.tss[0] = v.timestamp
    st.tts[0] = st.ts_type
    st.offs += 1
    st.tss += 1
    st.tts += 1
    if v.header_count != 0:
        headers_out(cols, st)
        add_headers(cols, &v, st.strict, st.end)
        headers_in(cols, st)
        st.hvalid[row >> 3] |= <uint8_t>(1 << (row & 7))
        st.with_headers += 1
    st.hoff[0] = <int32_t>st.entries
    st.hoff += 1
    st.row = row + 1
    return 0


cdef int full_row_copied_views(_ArrowColumns cols, RecordView *v, FullRows *st, Py_ssize_t row) except -1:
    """full_row_gil's key and value as views of copied bytes (st.copies): copied, their room grown
    first."""
    cdef _Growable kc = cols.key_copied, vc = cols.value_copied
    if v.key_len > VIEW_INLINE and st.kcopy_at + v.key_len + KAFKAREC_COPY_SLACK > st.kcopy_cap:
        # (committed per batch: reserve counts from kcopy_at; a kept buffer copies the whole room)
        kc.reserve(st.kcopy_at - kc.size + v.key_len + KAFKAREC_COPY_SLACK)
        st.kcopy = kc.data
        st.kcopy_cap = kc.capacity
    if v.value_len > VIEW_INLINE and st.vcopy_at + v.value_len + KAFKAREC_COPY_SLACK > st.vcopy_cap:
        vc.reserve(st.vcopy_at - vc.size + v.value_len + KAFKAREC_COPY_SLACK)
        st.vcopy = vc.data
        st.vcopy_cap = vc.capacity
    put_view_copied(st.kdata, &st.kvalid, &st.key_nulls, &st.kpos, row, v.key, v.key_len, st.kcopy,
                    &st.kcopy_at, st.end)
    put_view_copied(st.vdata, &st.vvalid, &st.value_nulls, &st.vpos, row, v.value, v.value_len,
                    st.vcopy, &st.vcopy_at, st.end)
    return 0


cdef int full_row_fields(_ArrowColumns cols, RecordView *v, FullRows *st, Py_ssize_t row) except -1:
    """full_row_gil's key and value in the classic layout: copied, their columns grown first."""
    cdef _Column key = cols.key, value = cols.value
    if v.key_len >= 0 and st.kpos + v.key_len + KAFKAREC_COPY_SLACK > st.kcap:
        # (rows are committed per batch: reserve counts from kpos)
        key.values.reserve(st.kpos - key.values.size + v.key_len + KAFKAREC_COPY_SLACK)
        st.kdata = key.values.data
        st.kcap = key.values.capacity
    if v.value_len >= 0 and st.vpos + v.value_len + KAFKAREC_COPY_SLACK > st.vcap:
        value.values.reserve(st.vpos - value.values.size + v.value_len + KAFKAREC_COPY_SLACK)
        st.vdata = value.values.data
        st.vcap = value.values.capacity
    put_field(st.kdata, &st.kpos, &st.kvalid, &st.key_nulls, row, v.key, v.key_len, st.end)
    put_field(st.vdata, &st.vpos, &st.vvalid, &st.value_nulls, row, v.value, v.value_len, st.end)
    st.ko[0] = <int32_t>st.kpos
    st.vo[0] = <int32_t>st.vpos
    st.ko += 1
    st.vo += 1
    return 0


cdef int add_v2_records(_ArrowColumns cols, _RecordIterator it, int ts_type, RecordBatch b,
                        bint strict, bint crc_after) except -1:
    """All records of one v2 batch, written through raw pointers: the per-row
    columns into space reserved up front (a batch cannot hold more rows than
    its payload has 7-byte minimal records), key, value and header bytes into
    space checked per record.  The record loop (full_rows) runs without the GIL
    for a batch worth it; a record it cannot take (a column to grow, a header key
    to replace) and a key bound's test go by the GIL's path (full_row_gil).  The
    rows are committed (col_commit) when the batch is complete, so a batch that
    fails half way leaves the columns as they were (headers, appended as they
    come, are cut back by _ArrowColumns.truncate).  With crc_after the CRC is
    checked after decoding, before the commit: decoding then pulls the bytes into
    cache and the CRC runs over cached bytes."""
    cdef RecordView v
    cdef FullRows st
    cdef _Column key = cols.key, value = cols.value
    cdef const uint8_t *payload_end = it._cur.end
    cdef Py_ssize_t payload = payload_end - it._cur.pos
    cdef Py_ssize_t rows = min(<Py_ssize_t>it._remaining, payload // 7 + 1)
    cdef Py_ssize_t r0 = cols.rows
    cdef int status
    cdef bint nogil_walk = payload >= WALK_NOGIL_MIN_BYTES
    cdef bint views = cols.views
    if views:
        if (cols.key_bytes + payload > INT32_LIMIT or cols.value_bytes + payload > INT32_LIMIT
                or cols.key_copied.size + payload > INT32_LIMIT or cols.value_copied.size + payload > INT32_LIMIT):
            raise ColumnOverflowError("binary_view column over 2 GiB")
    elif key.values.size + payload > INT32_LIMIT or value.values.size + payload > INT32_LIMIT:
        raise ColumnOverflowError("binary column over 2 GiB")
    # the rows' room, reserved up front (full_rows_open then points st at it)
    if views:
        reserve_tail(key.values, rows * VIEW_SIZE, False)
        reserve_tail(value.values, rows * VIEW_SIZE, False)
    else:
        reserve_tail(key.offsets, rows * 4, False)
        reserve_tail(value.offsets, rows * 4, False)
    reserve_tail(cols.offset.values, rows * 8, False)
    reserve_tail(cols.timestamp.values, rows * 8, False)
    reserve_tail(cols.timestamp_type.values, rows * 4, False)
    reserve_tail(cols.headers.offsets, rows * 4, False)
    reserve_bits(key.valid, r0, rows, True)
    reserve_bits(value.valid, r0, rows, True)
    reserve_bits(cols.headers.valid, r0, rows, False)
    full_rows_open(cols, &st, strict)
    if views:       # the bytes the records are in: the window's, or the batch's decompressed ones
        if cols.copies or it._buf is not b._buf:
            st.copies = True        # (a map's, or decompressed into the scratch: copied)
        else:
            st.src_base = it._buf.ptr
            st.src_index = cols.window_source()
    st.pos = it._cur.pos
    st.end = payload_end
    st.end_row = r0 + rows
    st.ts_type = ts_type
    try:
        while it._remaining > 0 and st.row < st.end_row:
            if nogil_walk:
                with nogil:
                    status = full_rows(it, &st)
            else:
                status = full_rows(it, &st)
            if status == ROWS_FAULT:
                raise_record_fault(it)
            if status == ROWS_SLOW:
                full_row_gil(cols, it, &st)
    finally:
        headers_out(cols, &st)      # (a batch that failed: truncate cuts its entries back)
    if it._remaining > 0:
        # More declared records than the payload can hold: let the parser say why.
        parse_v2_record_at(it, &v, &st.pos, payload_end)
    if crc_after:
        check_crc(b)
    # commit the batch
    it._cur.pos = st.pos
    rows = st.row - r0
    batch_timestamps_in_unit(<int64_t *>(cols.timestamp.values.data + cols.timestamp.values.size), rows, r0,
                             cols.ts_scale, &cols.ts_ms_from)
    full_rows_commit(cols, &st, rows)
    if cols.batch_columns:
        put_batch_columns(cols, b, r0, rows, nogil_walk)
    commit_rows(cols, rows)
    return 0


cdef inline void full_rows_open(_ArrowColumns cols, FullRows *st, bint strict) noexcept:
    """st at the row columns' next row (cols.rows), in the room reserved there (add_v2_records
    reserves it for one batch, a run finds it left by the batches before, take_run): each
    column's next place and room, what the read wants of a record, and the header columns'
    room (headers_in).  The batch-by-batch path and a run open FullRows alike."""
    cdef _Column key = cols.key, value = cols.value
    st.ko = <int32_t *>(key.offsets.data + key.offsets.size)
    st.vo = <int32_t *>(value.offsets.data + value.offsets.size)
    st.offs = <int64_t *>(cols.offset.values.data + cols.offset.values.size)
    st.tss = <int64_t *>(cols.timestamp.values.data + cols.timestamp.values.size)
    st.tts = <int32_t *>(cols.timestamp_type.values.data + cols.timestamp_type.values.size)
    st.hoff = <int32_t *>(cols.headers.offsets.data + cols.headers.offsets.size)
    st.kdata = key.values.data             # indexed by absolute column position (views: by row)
    st.vdata = value.values.data
    st.kcap = key.values.capacity
    st.vcap = value.values.capacity
    st.views = cols.views
    st.src_base = NULL
    st.src_index = 0
    st.copies = False               # (set for a batch whose records are a map's: add_v2_records)
    if cols.views:
        st.kcopy = cols.key_copied.data
        st.kcopy_at = cols.key_copied.size
        st.kcopy_cap = cols.key_copied.capacity
        st.vcopy = cols.value_copied.data
        st.vcopy_at = cols.value_copied.size
        st.vcopy_cap = cols.value_copied.capacity
    else:
        st.kcopy = st.vcopy = NULL
        st.kcopy_at = st.kcopy_cap = st.vcopy_at = st.vcopy_cap = 0
    st.kvalid = key.valid.data             # indexed by row
    st.vvalid = value.valid.data
    st.hvalid = cols.headers.valid.data
    if cols.views:
        st.kpos = cols.key_bytes
        st.vpos = cols.value_bytes
    else:
        st.kpos = key.values.size
        st.vpos = value.values.size
    st.key_nulls = st.value_nulls = st.with_headers = 0
    st.row = cols.rows
    st.strict = strict
    st.want_key = cols.want_key
    st.want_value = cols.want_value
    st.want_headers = cols.want_headers
    st.want_timestamp = cols.want_timestamp
    st.want_timestamp_type = cols.want_timestamp_type
    st.keys = &cols.keys.table if cols.keys is not None else NULL
    st.ts_scale = cols.ts_scale
    st.ts_ms_from = cols.ts_ms_from
    headers_in(cols, st)


cdef inline void full_rows_commit(_ArrowColumns cols, FullRows *st, Py_ssize_t rows) noexcept:
    """The `rows` rows st wrote counted in the key, value and headers columns (the per-row
    columns by commit_rows; the header entries by headers_out, as they come)."""
    if cols.views:
        cols.key_bytes = st.kpos
        cols.value_bytes = st.vpos
        cols.key_copied.size = st.kcopy_at
        cols.value_copied.size = st.vcopy_at
        view_commit(cols.key, rows, st.key_nulls)
        view_commit(cols.value, rows, st.value_nulls)
    else:
        cols.key.values.size = st.kpos
        cols.value.values.size = st.vpos
        col_commit(cols.key, rows, st.key_nulls)
        col_commit(cols.value, rows, st.value_nulls)
    col_commit(cols.headers, rows, rows - st.with_headers)
