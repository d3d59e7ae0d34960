# The structs the record loops of iter_arrow fill without the GIL (_full_rows.pxi, _meta_rows.pxi,
# _batch_columns.pxi, _runs.pxi), and the key bound's table they test keys against (_key_table.pxi):
# plain C, so that a loop that fills them touches no Python object.  Declared here, apart from the
# loops, because three rooms share them: a batch's rows by the batch-by-batch path, a run's, and the
# GIL's path that takes a record the loop left to it.
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint64_t


cdef struct KeyTable:
    # The keys of a _KeySet as C sees them, so that a record's key is tested without the GIL: the
    # keys sorted as Python sorts bytes (memcmp over the shorter length, then the shorter first),
    # their bytes the _KeySet's own bytes objects' (alive as long as it is).
    Py_ssize_t n
    uint64_t lengths            # a bit per key length (mod 64)
    const uint8_t **data
    int32_t *size


# What the full decode's record loop (full_rows) stops for.
cdef enum:
    ROWS_DONE = 0       # the batch's records read (or the rows reserved for it used up)
    ROWS_FAULT = 1      # a record the scanner refuses (described in it._fault)
    ROWS_SLOW = 2       # a record left to the GIL's path (full_row_gil), not moved past: a column
                        # needs more room, or a header key is not UTF-8 (Java's replacement is a str)


cdef struct FullRows:
    # One v2 batch's records going into the full row's columns (add_v2_records): where the loop
    # is and the raw room reserved in each column, so that the loop (full_rows) touches no Python
    # object and runs without the GIL.  The rows are committed when the batch is complete; the
    # header columns' entries are appended as they come (headers_out writes their sizes back).
    const uint8_t *pos
    const uint8_t *end
    Py_ssize_t row
    Py_ssize_t end_row
    int32_t ts_type
    bint strict
    bint want_key           # (_ArrowColumns'): a column not wanted is left empty
    bint want_value
    bint want_headers
    const KeyTable *keys    # a key bound's keys (NULL: every record): others are read, not written
    # the view layout (_views.pxi): kdata/vdata are the key's and value's views (16 bytes a row,
    # indexed by row), kpos/vpos count the bytes the views refer to (the chunk's byte limit), and a
    # long key or value is a view into the bytes at src_base, the chunk's variadic buffer src_index
    bint views
    const uint8_t *src_base
    int32_t src_index
    # views over bytes that may shrink under the read (a memory map): a long key or value of the
    # batch is copied into the column's own bytes (kcopy/vcopy, variadic buffer 0, with room up to
    # kcopy_cap/vcopy_cap) and its view points there: a batch's records are in the map (the
    # window), not in a buffer of their own (a compressed batch's decompressed records)
    bint copies
    uint8_t *kcopy
    Py_ssize_t kcopy_at
    Py_ssize_t kcopy_cap
    uint8_t *vcopy
    Py_ssize_t vcopy_at
    Py_ssize_t vcopy_cap
    int32_t *ko
    int32_t *vo
    int64_t *offs
    int64_t *tss
    int32_t *tts
    int64_t ts_scale        # (_ArrowColumns'): the timestamps' unit, as ts_unit.h writes them
    Py_ssize_t ts_ms_from
    int32_t *hoff
    uint8_t *kvalid
    uint8_t *vvalid
    uint8_t *hvalid
    uint8_t *kdata
    uint8_t *vdata
    Py_ssize_t kpos
    Py_ssize_t kcap
    Py_ssize_t vpos
    Py_ssize_t vcap
    Py_ssize_t key_nulls
    Py_ssize_t value_nulls
    Py_ssize_t with_headers
    # the header columns: header_key (string, never null) and header_value (binary, nullable),
    # one entry each per header, and their struct (header_entries), as long as both
    Py_ssize_t entries
    uint8_t *hk_data
    Py_ssize_t hk_size
    Py_ssize_t hk_cap
    uint8_t *hk_offs
    Py_ssize_t hk_offs_size
    Py_ssize_t hk_offs_cap
    uint8_t *hv_data
    Py_ssize_t hv_size
    Py_ssize_t hv_cap
    uint8_t *hv_offs
    Py_ssize_t hv_offs_size
    Py_ssize_t hv_offs_cap
    uint8_t *hv_valid
    Py_ssize_t hv_valid_cap
    Py_ssize_t hv_nulls
    bint want_timestamp         # (_ArrowColumns'): a per-row column not wanted is not written
    bint want_timestamp_type


cdef struct BatchRows:
    # The batch-level columns of one v2 batch's rows (put_batch_columns): where each column's
    # room starts and the batch's values, so that batch_rows fills them without the GIL.
    Py_ssize_t rows
    const int64_t *offsets      # the rows' offsets, as the record loop wrote them
    int64_t base_offset
    int32_t base_sequence
    int64_t producer_id
    int16_t producer_epoch
    int8_t codec
    int64_t position
    int32_t partition_leader_epoch
    int8_t magic
    int32_t size_in_bytes
    int64_t horizon             # the delete horizon, or 0 under a null
    int64_t *producer_ids
    int16_t *producer_epochs
    int32_t *sequences
    int8_t *codecs
    int64_t *positions
    int64_t *base_offsets
    int32_t *leader_epochs
    int8_t *magics
    int32_t *sizes
    int64_t *horizons


cdef struct V2Run:
    # A run's place in the batch iterator's buffer and what it may take (_runs.pxi)
    const uint8_t *buf          # the batch iterator's buffer
    Py_ssize_t origin           # the file position of buf[0]
    Py_ssize_t offset           # where the next batch starts in buf (past each batch taken)
    Py_ssize_t end
    bint verify_crc
    bint strict
    Py_ssize_t room_end         # the rows the per-row columns have room for (a run grows nothing)
    Py_ssize_t kvalid_cap       # the bitmaps' room, in bytes (full rows)
    Py_ssize_t vvalid_cap
    Py_ssize_t hvalid_cap
    Py_ssize_t max_rows         # the chunk's limits: the run ends with the batch that reaches one
    Py_ssize_t max_bytes
    Py_ssize_t batches          # taken


cdef struct MetaRows:
    # The lean columns' room from the next row on (a run's batches, _runs.pxi), and a key bound's
    # keys (NULL: every record)
    Py_ssize_t row
    const KeyTable *keys
    int64_t *offs
    int64_t *tss
    int32_t *tts
    bint want_timestamp_type    # (_ArrowColumns')
    int64_t ts_scale        # (_ArrowColumns')
    Py_ssize_t ts_ms_from
