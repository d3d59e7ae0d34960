# The batch columns of the wide layout (iter_arrow's ``batch_columns``): each row of a v2 batch
# given its batch's fields (producer, sequence, codec, position, ...), filled after the batch's full
# rows are written (put_batch_columns) in one loop without the GIL (BatchRows, _rows.pxd).

cdef void batch_rows(BatchRows *br) noexcept nogil:
    """The batch's values repeated over its rows, and each record's sequence from its offset:
    the offset is the base offset plus the record's offset delta (wrapping), so the delta comes
    back exactly, and DefaultRecord's sequence is incrementSequence(baseSequence, delta)."""
    cdef Py_ssize_t i
    cdef int32_t delta
    for i in range(br.rows):
        br.producer_ids[i] = br.producer_id
        br.producer_epochs[i] = br.producer_epoch
        br.codecs[i] = br.codec
        br.positions[i] = br.position
        br.base_offsets[i] = br.base_offset
        br.leader_epochs[i] = br.partition_leader_epoch
        br.magics[i] = br.magic
        br.sizes[i] = br.size_in_bytes
        br.horizons[i] = br.horizon
    if br.base_sequence < 0:
        for i in range(br.rows):
            br.sequences[i] = -1
    else:
        for i in range(br.rows):
            delta = <int32_t>(<uint64_t>br.offsets[i] - <uint64_t>br.base_offset)
            br.sequences[i] = increment_sequence(br.base_sequence, delta)


cdef int put_batch_columns(_ArrowColumns cols, RecordBatch b, Py_ssize_t r0, Py_ssize_t rows,
                           bint release) except -1:
    """The batch columns of a v2 batch's `rows` rows that add_v2_records committed from row r0,
    as _ArrowColumns.add writes them record by record: room reserved here, filled by batch_rows
    (with the GIL released when `release`: the record loop ran without it), then committed."""
    cdef BatchRows br
    cdef bint horizon = (b.attributes & ATTR_DELETE_HORIZON) != 0
    if rows == 0:
        return 0
    br.rows = rows
    br.offsets = (<const int64_t *>cols.offset.values.data) + r0
    br.base_offset = b._base_offset
    br.base_sequence = b.base_sequence
    br.producer_id = b.producer_id
    br.producer_epoch = b.producer_epoch
    br.codec = <int8_t>(b.attributes & ATTR_CODEC_MASK)
    br.position = b.position
    br.partition_leader_epoch = b.partition_leader_epoch
    br.magic = b.magic
    br.size_in_bytes = <int32_t>b.size_in_bytes
    br.horizon = b.base_timestamp if horizon else 0
    br.producer_ids = <int64_t *>reserve_tail(cols.producer_id.values, rows * 8, False)
    br.producer_epochs = <int16_t *>reserve_tail(cols.producer_epoch.values, rows * 2, False)
    br.sequences = <int32_t *>reserve_tail(cols.sequence.values, rows * 4, False)
    br.codecs = <int8_t *>reserve_tail(cols.compression.values, rows, False)
    br.positions = <int64_t *>reserve_tail(cols.batch_position.values, rows * 8, False)
    br.base_offsets = <int64_t *>reserve_tail(cols.batch_base_offset.values, rows * 8, False)
    br.leader_epochs = <int32_t *>reserve_tail(cols.partition_leader_epoch.values, rows * 4, False)
    br.magics = <int8_t *>reserve_tail(cols.magic.values, rows, False)
    br.sizes = <int32_t *>reserve_tail(cols.batch_size.values, rows * 4, False)
    br.horizons = <int64_t *>reserve_tail(cols.delete_horizon_ms.values, rows * 8, False)
    # the booleans and the horizon's validity: one value for the batch, preset bit by bit
    reserve_bits(cols.is_transactional.values, cols.is_transactional.length, rows,
                 (b.attributes & ATTR_TRANSACTIONAL) != 0)
    reserve_bits(cols.is_control.values, cols.is_control.length, rows, (b.attributes & ATTR_CONTROL) != 0)
    reserve_bits(cols.delete_horizon_ms.valid, cols.delete_horizon_ms.length, rows, horizon)
    if release:
        with nogil:
            batch_rows(&br)
    else:
        batch_rows(&br)
    col_commit(cols.producer_id, rows, 0)
    col_commit(cols.producer_epoch, rows, 0)
    col_commit(cols.sequence, rows, 0)
    col_commit(cols.is_transactional, rows, 0)
    col_commit(cols.is_control, rows, 0)
    col_commit(cols.compression, rows, 0)
    col_commit(cols.batch_position, rows, 0)
    col_commit(cols.batch_base_offset, rows, 0)
    col_commit(cols.partition_leader_epoch, rows, 0)
    col_commit(cols.magic, rows, 0)
    col_commit(cols.batch_size, rows, 0)
    col_commit(cols.delete_horizon_ms, rows, 0 if horizon else rows)
    return 0
