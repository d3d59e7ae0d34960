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


def restamp_run(buffer, /, Py_ssize_t end, int32_t partition_leader_epoch, int64_t producer_id_base):
    """Re-stamp every v2 batch of ``buffer[:end]`` (whole batches, framed by the caller) in place for
    another cluster's log, a window of ``kafkarec restore --same-offsets write``
    (:mod:`kafkarec.log.writer` holds the rules): each batch's CRC checked first (a damaged batch
    is never given a good CRC), its partition leader epoch set, and its producer id moved to
    ``id + producer_id_base`` (an id at or above the base kept) with the CRC-32C of bytes 21 on
    computed again.  No object per batch: returns ``(batches, max timestamp, next offset, headers,
    events, error)`` -- ``headers`` the first 61 bytes of each batch as written, one after the
    other; ``events`` ``(position, size, source producer id, producer epoch, attributes)`` of each
    batch with a producer id that is a control batch or whose producer id or transactional bit
    differs from the batch before it (what the writer's producer bookkeeping reads; a run of one
    producer's batches is one event); ``error`` None, or ``(position, reason)`` of the first batch
    refused (``"magic N"``, ``"crc"``, ``"frame"``), the batches before it re-stamped and
    counted."""
    cdef _WritableView w = _WritableView()
    cdef uint8_t *data
    cdef uint8_t *p
    cdef uint8_t *h
    cdef Py_ssize_t pos = 0, size, n = 0, count = 0
    cdef int64_t pid, moved, prev_pid = -1, max_ts = -1, ts, next_offset = -1
    cdef uint16_t attributes
    cdef int kind, prev_kind = -1
    cdef uint32_t crc
    PyObject_GetBuffer(buffer, &w.view, PyBUF_SIMPLE | PyBUF_WRITABLE)
    w.acquired = True
    if end < 0 or end > w.view.len:
        raise ValueError(f"end {end} outside the buffer's {w.view.len} bytes")
    data = <uint8_t *>w.view.buf
    # the batches counted first, so that their headers go into one object of the right size
    while pos + LOG_OVERHEAD <= end:
        size = <Py_ssize_t><int32_t>kr_load_be32(data + pos + OFF_LENGTH) + LOG_OVERHEAD
        if size <= LOG_OVERHEAD or size > end - pos:
            break
        count += 1
        pos += size
    headers = PyBytes_FromStringAndSize(NULL, count * V2_HEADER_SIZE)
    h = <uint8_t *>PyBytes_AS_STRING(headers)
    events = []
    error = None
    pos = 0
    while pos < end:
        p = data + pos
        if end - pos <= OFF_MAGIC:
            error = (pos, "frame")
            break
        if p[OFF_MAGIC] != 2:
            error = (pos, f"magic {<int8_t>p[OFF_MAGIC]}")
            break
        size = <Py_ssize_t><int32_t>kr_load_be32(p + OFF_LENGTH) + LOG_OVERHEAD
        if size < V2_HEADER_SIZE or size > end - pos or n == count:
            error = (pos, "frame")
            break
        crc = crc32c_of(p + OFF_ATTRIBUTES, size - OFF_ATTRIBUTES)
        if crc != kr_load_be32(p + OFF_CRC):
            error = (pos, "crc")
            break
        kr_store_be32(p + OFF_PARTITION_LEADER_EPOCH, <uint32_t>partition_leader_epoch)
        pid = <int64_t>kr_load_be64(p + OFF_PRODUCER_ID)
        attributes = kr_load_be16(p + OFF_ATTRIBUTES)
        if pid >= 0:
            moved = pid if pid >= producer_id_base else pid + producer_id_base
            if moved != pid:
                kr_store_be64(p + OFF_PRODUCER_ID, <uint64_t>moved)
                kr_store_be32(p + OFF_CRC, crc32c_of(p + OFF_ATTRIBUTES, size - OFF_ATTRIBUTES))
            kind = 2 if attributes & ATTR_CONTROL else (1 if attributes & ATTR_TRANSACTIONAL else 0)
            if kind == 2 or pid != prev_pid or kind != prev_kind:
                events.append((pos, size, pid, <int16_t>kr_load_be16(p + OFF_PRODUCER_EPOCH), attributes))
            prev_kind = kind
        prev_pid = pid
        ts = <int64_t>kr_load_be64(p + OFF_MAX_TIMESTAMP)
        if ts > max_ts:
            max_ts = ts
        next_offset = <int64_t>kr_load_be64(p) + <int32_t>kr_load_be32(p + OFF_LAST_OFFSET_DELTA) + 1
        memcpy(h + n * V2_HEADER_SIZE, p, V2_HEADER_SIZE)
        n += 1
        pos += size
    if n < count:
        headers = headers[:n * V2_HEADER_SIZE]
    return n, max_ts, next_offset, headers, events, error
