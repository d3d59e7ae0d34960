# Re-stamping a batch in place, as a broker does when it appends one to its log.
#   base offset            outside the CRC (v2: bytes 0-7; legacy: the entry offset)
#   partition leader epoch outside the CRC (v2 only)
#   max timestamp          v2 LogAppendTime: attributes bit 3 + maxTimestamp, CRC recomputed;
#                          v1: the entry's timestamp + attribute, CRC-32 recomputed

cdef class _WritableView:
    cdef Py_buffer view
    cdef bint acquired

    def __dealloc__(self):
        if self.acquired:
            PyBuffer_Release(&self.view)


def restamp(buffer, /, Py_ssize_t position=0, *, base_offset=None, partition_leader_epoch=None,
            log_append_time=None):
    """Rewrite the batch at ``position`` of a writable buffer (bytearray, mmap) in place.

    ``base_offset`` moves the batch to a new base offset (v2; for a legacy
    entry, its offset).  ``partition_leader_epoch`` sets the v2 epoch.
    ``log_append_time`` marks the batch LogAppendTime with that max timestamp
    and recomputes the CRC.  Returns the batch's new CRC.
    """
    cdef _WritableView w = _WritableView()
    cdef uint8_t *p
    cdef Py_ssize_t size
    cdef int magic
    cdef uint16_t attributes
    PyObject_GetBuffer(buffer, &w.view, PyBUF_SIMPLE | PyBUF_WRITABLE)
    w.acquired = True
    if position < 0 or w.view.len - position < HEADER_SIZE_UP_TO_MAGIC:
        raise CorruptBatchError("no batch header at this position", position)
    p = <uint8_t *>w.view.buf + position
    size = <Py_ssize_t><int32_t>kr_load_be32(p + OFF_LENGTH) + LOG_OVERHEAD
    magic = <int8_t>p[OFF_MAGIC]
    if size < LOG_OVERHEAD + RECORD_OVERHEAD_V0 or size > w.view.len - position or magic < 0 or magic > 2:
        raise CorruptBatchError("no whole batch at this position", position)
    if magic == 2 and size < V2_HEADER_SIZE:
        raise CorruptBatchError("v2 batch shorter than its header", position)
    # Every check before any write: a refused restamp leaves the buffer untouched.
    if partition_leader_epoch is not None and magic < 2:
        raise EncodeError("Magic versions prior to 2 do not support partition leader epoch")
    if log_append_time is not None and magic == 0:
        raise EncodeError("Cannot set timestamp for a record with magic = 0")
    if base_offset is not None and magic == 1 and (p[OFF_MAGIC + 1] & ATTR_CODEC_MASK):
        # A v1 wrapper's offset is its last inner message's; its inner offsets
        # are relative to it.  Refuse an offset that Kafka's reader would then
        # refuse (below the inner offsets), judged by reading a copy.
        original = PyBytes_FromStringAndSize(<const char *>p, size)
        trial = bytearray(original)
        kr_store_be64(<uint8_t *><char *>trial, <uint64_t><int64_t>base_offset)
        if _legacy_readable(original) and not _legacy_readable(trial):
            raise EncodeError(f"base offset {base_offset} would put this compressed v1 wrapper "
                              f"below its inner messages' offsets (Kafka's reader refuses that)")
    if base_offset is not None:
        kr_store_be64(p, <uint64_t><int64_t>base_offset)
    if partition_leader_epoch is not None:
        kr_store_be32(p + OFF_PARTITION_LEADER_EPOCH, <uint32_t><int32_t>partition_leader_epoch)
    if log_append_time is not None:
        if magic == 2:
            attributes = kr_load_be16(p + OFF_ATTRIBUTES) | ATTR_LOG_APPEND_TIME
            kr_store_be16(p + OFF_ATTRIBUTES, attributes)
            kr_store_be64(p + OFF_MAX_TIMESTAMP, <uint64_t><int64_t>log_append_time)
            kr_store_be32(p + OFF_CRC, crc32c_of(p + OFF_ATTRIBUTES, size - OFF_ATTRIBUTES))
        else:
            p[OFF_MAGIC + 1] |= ATTR_LOG_APPEND_TIME
            kr_store_be64(p + LEGACY_OFF_TIMESTAMP, <uint64_t><int64_t>log_append_time)
            kr_store_be32(p + LEGACY_OFF_CRC, crc32_of(p + OFF_MAGIC, size - OFF_MAGIC))
    return kr_load_be32(p + (OFF_CRC if magic == 2 else LEGACY_OFF_CRC))


cdef bint _legacy_readable(data):
    """Whether the one legacy entry in ``data`` yields its records."""
    try:
        for b in iter_batches(data, verify_crc=False):
            b.records()
    except KafkaRecError:
        return False
    return True
