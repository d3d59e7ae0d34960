# Writing v2 batches (Kafka's MemoryRecordsBuilder rules for magic 2).
#
# Records are encoded straight into a growable C buffer as they are appended;
# build() compresses the records section if asked, writes the 61-byte header
# and computes the CRC once, over attributes..end.

from libc.string cimport memcpy as c_memcpy
import time as _time
from struct import error as struct_error

from kafkarec.errors import EncodeError

cdef enum:
    MAX_RECORD_OVERHEAD = 21     # DefaultRecord.MAX_RECORD_OVERHEAD
    XERIAL_BLOCK_SIZE = 32 * 1024
    LZ4_BLOCK_SIZE = 64 * 1024



cdef extern from "bulk_writer.h":
    enum:
        KAFKAREC_BIN_NULL
        KAFKAREC_BIN_LIST
        KAFKAREC_BIN_ARROW32
        KAFKAREC_BIN_ARROW64
        KAFKAREC_BULK_DONE
        KAFKAREC_BULK_ROOM
        KAFKAREC_BULK_BAD_TS
        KAFKAREC_BULK_OTHER
    ctypedef struct kafkarec_bin_col:
        int mode
        PyObject **items
        const uint8_t *data
        const int32_t *offsets32
        const int64_t *offsets64
        const uint8_t *validity
        Py_ssize_t array_offset
    ctypedef struct kafkarec_bulk_state:
        uint8_t *p
        uint8_t *limit
        const int64_t *timestamps
        int64_t now
        int64_t offset_delta
        int64_t base_timestamp
        int64_t max_timestamp
        int first
        Py_ssize_t length_guess
        Py_ssize_t need
    uint64_t kafkarec_zigzag(int64_t x) noexcept nogil
    uint8_t *kafkarec_put_uvarint(uint8_t *p, uint64_t v) noexcept nogil
    void kafkarec_copy(uint8_t *d, const uint8_t *s, size_t n) noexcept nogil
    Py_ssize_t kafkarec_bulk_write(kafkarec_bulk_state *st, const kafkarec_bin_col *v,
                                   const kafkarec_bin_col *k, Py_ssize_t i, Py_ssize_t end,
                                   int *status) noexcept nogil


cdef extern from "Python.h":
    int _PyBytes_Resize(PyObject **obj, Py_ssize_t size) except -1


cdef class _BatchBytes(_Growable):
    """The records of a batch being built, written straight into the bytes
    object build() returns, behind 61 bytes left for the header: an
    uncompressed batch then costs no final copy."""
    cdef PyObject *_bytes       # owned reference; refcount 1 while growing

    def __dealloc__(self):
        self.data = NULL            # inside _bytes, not malloc'd
        Py_XDECREF(self._bytes)
        self._bytes = NULL

    cdef int reserve(self, Py_ssize_t extra) except -1:
        cdef Py_ssize_t want = self.size + extra
        cdef Py_ssize_t cap
        cdef object fresh
        if want <= self.capacity:
            return 0
        cap = max(want, self.capacity * 2, 4096)
        # A new object and a copy, not _PyBytes_Resize: a failed resize frees
        # the old object, and the records written so far with it.  A failure
        # here raises MemoryError and leaves everything as it was.
        fresh = PyBytes_FromStringAndSize(NULL, V2_HEADER_SIZE + cap)
        if self._bytes != NULL:
            c_memcpy(PyBytes_AS_STRING(fresh) + V2_HEADER_SIZE, self.data, self.size)
            Py_XDECREF(self._bytes)
        Py_INCREF(fresh)
        self._bytes = <PyObject *>fresh
        self.data = <uint8_t *>PyBytes_AS_STRING(fresh) + V2_HEADER_SIZE
        self.capacity = cap
        return 0

    cdef bytes take(self):
        """The bytes object, cut to header + records; the buffer is spent."""
        cdef object out
        if self._bytes == NULL:
            self.reserve(1)
        try:
            _PyBytes_Resize(&self._bytes, V2_HEADER_SIZE + self.size)   # shrinks
        except MemoryError:
            self._bytes = NULL          # freed by the failed resize
            self.data = NULL
            self.capacity = 0
            raise
        out = <object>self._bytes
        Py_XDECREF(self._bytes)
        self._bytes = NULL
        self.data = NULL
        self.capacity = 0
        return out


# Enum members looked up once: TimestampType.X costs a class attribute lookup per use.
cdef object _TS_NO_TIMESTAMP_TYPE = TimestampType.NO_TIMESTAMP_TYPE
cdef object _TS_LOG_APPEND_TIME = TimestampType.LOG_APPEND_TIME


cdef inline uint8_t *put_bytes(uint8_t *p, const uint8_t *src, Py_ssize_t n) noexcept:
    if n <= 0:
        return p            # n == -1 is a null: its length varint was written, no bytes follow
    c_memcpy(p, src, n)
    return p + n


@cython.final
cdef class RecordBatchBuilder:
    """Builds one v2 record batch.

        builder = RecordBatchBuilder(compression=Compression.LZ4, base_offset=100)
        builder.append(b"value", key=b"key", timestamp=1700000000000, headers=[("h", b"v")])
        data = builder.build()

    Offsets must increase (gaps are allowed); timestamps are ms since the epoch
    or -1.  With ``max_batch_size`` set, ``has_room_for`` answers as Kafka's
    producer does (the first record always fits) and ``append`` refuses a
    record that does not fit rather than dropping it.
    """
    cdef _BatchBytes _records
    cdef readonly int record_count
    cdef int64_t _base_offset
    cdef int64_t _last_offset
    cdef int64_t _base_timestamp
    cdef int64_t _max_timestamp
    cdef int64_t _log_append_time
    cdef int16_t _attributes
    cdef int64_t _producer_id
    cdef int16_t _producer_epoch
    cdef int32_t _base_sequence
    cdef int32_t _partition_leader_epoch
    cdef Py_ssize_t _max_batch_size
    cdef int _codec
    cdef object _level
    cdef bint _raw_snappy
    cdef bint _has_delete_horizon
    cdef bint _built

    def __init__(self, *, compression=Compression.NONE, compression_level=None,
                 base_offset=0, timestamp_type=TimestampType.CREATE_TIME, log_append_time=None,
                 producer_id=-1, producer_epoch=-1, base_sequence=-1,
                 is_transactional=False, is_control=False, partition_leader_epoch=-1,
                 delete_horizon_ms=None, max_batch_size=None, snappy_framing="xerial"):
        self._records = _BatchBytes()
        self._codec = codec_id(compression)
        self._level = check_level(self._codec, compression_level)
        if snappy_framing not in ("xerial", "raw"):
            raise EncodeError(f"snappy_framing must be 'xerial' or 'raw', not {snappy_framing!r}")
        self._raw_snappy = snappy_framing == "raw"
        self._base_offset = base_offset
        self._last_offset = base_offset - 1
        ts_type = timestamp_type if type(timestamp_type) is TimestampType else TimestampType(timestamp_type)
        if ts_type is _TS_NO_TIMESTAMP_TYPE:
            raise EncodeError("magic 2 batches need CREATE_TIME or LOG_APPEND_TIME")
        self._attributes = self._codec
        if ts_type is _TS_LOG_APPEND_TIME:
            self._attributes |= ATTR_LOG_APPEND_TIME
            self._log_append_time = (int(_time.time() * 1000) if log_append_time is None
                                     else log_append_time)
        elif log_append_time is not None:
            raise EncodeError("log_append_time needs timestamp_type=LOG_APPEND_TIME")
        if is_transactional:
            self._attributes |= ATTR_TRANSACTIONAL
        if is_control:
            self._attributes |= ATTR_CONTROL
        if is_transactional and producer_id < 0:
            raise EncodeError("Cannot write transactional messages without a valid producer ID")
        if producer_id >= 0:
            if producer_epoch < 0:
                raise EncodeError("Invalid negative producer epoch")
            if base_sequence < 0 and not is_control:
                raise EncodeError("Invalid negative sequence number used")
        self._producer_id = producer_id
        self._producer_epoch = producer_epoch
        self._base_sequence = base_sequence
        self._partition_leader_epoch = partition_leader_epoch
        if delete_horizon_ms is not None:
            if delete_horizon_ms < 0 and delete_horizon_ms != -1:
                raise EncodeError(f"Invalid message timestamp {delete_horizon_ms}")
            self._attributes |= ATTR_DELETE_HORIZON
            self._has_delete_horizon = True
            self._base_timestamp = delete_horizon_ms
        self._max_timestamp = -1
        self._max_batch_size = -1 if max_batch_size is None else max_batch_size

    @property
    def is_control(self) -> bool:
        return (self._attributes & ATTR_CONTROL) != 0

    @property
    def size_in_bytes(self) -> int:
        """Bytes the batch would take uncompressed (header + records so far)."""
        return V2_HEADER_SIZE + self._records.size

    def has_room_for(self, value, key=None, *, timestamp=None, headers=()) -> bool:
        """Whether the record fits under max_batch_size, computed exactly as Kafka's
        MemoryRecordsBuilder.hasRoomFor does (the first record always fits)."""
        cdef Py_ssize_t klen = -1 if key is None else len(key)
        cdef Py_ssize_t vlen = -1 if value is None else len(value)
        cdef Py_ssize_t hsize = 0
        cdef int64_t ts = int(_time.time() * 1000) if timestamp is None else timestamp
        if headers:
            encode_headers(headers, &hsize)
        return self.fits(self._last_offset + 1, ts, klen, vlen, len(headers) if headers else 0, hsize)

    cdef bint fits(self, int64_t offset, int64_t ts, Py_ssize_t klen, Py_ssize_t vlen,
                   Py_ssize_t n_headers, Py_ssize_t hsize):
        if self.record_count == 0 or self._max_batch_size < 0:
            return True
        return (V2_HEADER_SIZE + self._records.size
                + record_size(offset - self._base_offset, ts - self._base_timestamp,
                              klen, vlen, n_headers, hsize) <= self._max_batch_size)

    def append(self, value, key=None, *, timestamp=None, headers=(), offset=None):
        """Append a record; returns its offset."""
        if self._attributes & ATTR_CONTROL:
            raise EncodeError("a control batch takes control records only: use append_control()")
        return self.append_record(value, key, timestamp, headers, offset)

    def extend(self, values, keys=None, timestamps=None, headers=None, offsets=None):
        """Append whole columns at once (lists, or pyarrow binary/int64 arrays) without a
        Python call per record.  None in keys/values is null; missing columns mean
        null keys, the current time, no headers and consecutive offsets."""
        if self._attributes & ATTR_CONTROL:
            raise EncodeError("a control batch takes control records only: use append_control()")
        extend_columns(self, values, keys, timestamps, headers, offsets)
        return self

    def append_control(self, control_type, value=None, *, timestamp=None, offset=None,
                       key_version=0):
        """Append a control record; ``value`` is the dict shape Record.control_value returns
        (for ABORT/COMMIT: ``{"coordinator_epoch": N}``)."""
        control = control_module()
        if not self._attributes & ATTR_CONTROL:
            raise EncodeError("Control records can only be appended to control batches")
        kind = ControlRecordType.from_id(int(control_type))
        if kind is ControlRecordType.UNKNOWN:
            raise EncodeError(f"Cannot append record with unknown control record type {control_type}")
        if kind in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
            if self._producer_id < 0 or not self._attributes & ATTR_TRANSACTIONAL:
                raise EncodeError("End transaction marker requires a valid producerId and a "
                                  "transactional batch")
        elif kind is ControlRecordType.LEADER_CHANGE and self._partition_leader_epoch < 0:
            raise EncodeError("LeaderChange message requires a valid partition leader epoch")
        try:
            encoded = control.encode_control_value(kind, value or {})
        except (KeyError, TypeError, ValueError, struct_error) as exc:
            raise EncodeError(f"invalid {kind.name} control value {value!r}: {exc}") from None
        return self.append_record(encoded, control.encode_control_key(kind, key_version),
                                  timestamp, (), offset)

    def _append(self, value, key, timestamp, headers, offset):
        """append() without the control-batch check (convert.py copies control records)."""
        return self.append_record(value, key, timestamp, headers, offset)

    cdef object append_record(self, object value, object key, object timestamp, object headers,
                              object offset):
        cdef int64_t off = self._last_offset + 1 if offset is None else offset
        cdef int64_t ts = int(_time.time() * 1000) if timestamp is None else timestamp
        cdef const uint8_t *kp
        cdef const uint8_t *vp
        cdef Py_ssize_t klen, vlen, hsize = 0
        cdef list keep = None
        cdef list hs = None
        if type(key) is not bytes or type(value) is not bytes:
            keep = []
        borrow_bytes(key, &kp, &klen, keep)
        borrow_bytes(value, &vp, &vlen, keep)
        if headers:
            hs = encode_headers(headers, &hsize)
        self.add_record(off, ts, kp, klen, vp, vlen, hs, hsize)
        return off

    cdef int add_record(self, int64_t off, int64_t ts, const uint8_t *kp, Py_ssize_t klen,
                        const uint8_t *vp, Py_ssize_t vlen, list hs, Py_ssize_t hsize) except -1:
        """Kafka's appendWithOffset checks, then the record is written once."""
        if self._built:
            raise EncodeError("this builder has already built its batch")
        if self.record_count:
            if off <= self._last_offset:
                raise EncodeError(f"Illegal offset {off} following previous offset {self._last_offset} "
                                  "(Offsets must increase monotonically).")
            if not self.fits(off, ts, klen, vlen, 0 if hs is None else len(hs), hsize):
                raise EncodeError(
                    f"record does not fit in the batch (max_batch_size={self._max_batch_size}); "
                    "check has_room_for() and start a new batch")
            if self.record_count == INT32_MAX:
                raise EncodeError("Maximum number of records per batch exceeded")
        if off < self._base_offset:
            raise EncodeError(f"offset {off} is below the batch's base offset {self._base_offset}")
        if off - self._base_offset > INT32_MAX:
            raise EncodeError("Maximum offset delta exceeded")
        if ts < 0 and ts != -1:
            raise EncodeError(f"Invalid negative timestamp {ts}")
        if self.record_count == 0 and not self._has_delete_horizon:
            self._base_timestamp = ts
        encode_record(self._records, off - self._base_offset, ts - self._base_timestamp,
                      kp, klen, vp, vlen, hs, hsize)
        self._last_offset = off
        if ts > self._max_timestamp:
            self._max_timestamp = ts
        self.record_count += 1
        return 0

    def build(self) -> bytes:
        """The finished batch (b"" if nothing was appended, as Kafka writes no empty batch)."""
        self._built = True
        if self.record_count == 0:
            return b""
        cdef bytes out
        max_ts = self._log_append_time if self._attributes & ATTR_LOG_APPEND_TIME else self._max_timestamp
        if self._codec == CODEC_NONE:
            out = self._records.take()      # records already in place behind the header
        else:
            out = compressed_batch_bytes(self._codec, self._records.data, self._records.size,
                                         self._level, self._raw_snappy)
        write_v2_header(<uint8_t *>PyBytes_AS_STRING(out), len(out), self._base_offset,
                        self._partition_leader_epoch, self._attributes,
                        <int32_t>(self._last_offset - self._base_offset), self._base_timestamp,
                        max_ts, self._producer_id, self._producer_epoch, self._base_sequence,
                        self.record_count)
        return out


cdef inline int borrow_bytes(object obj, const uint8_t **p, Py_ssize_t *n, list keep) except -1:
    """Pointer and length of a bytes-like object (length -1 for None)."""
    cdef bytes copy
    if obj is None:
        p[0] = NULL
        n[0] = -1
    elif type(obj) is bytes:
        p[0] = <const uint8_t *>PyBytes_AS_STRING(obj)
        n[0] = len(<bytes>obj)
    else:
        # bytearray / memoryview / any buffer: keep an immutable copy alive.
        # Through memoryview so that an int is refused, not read as bytes(n)
        # (n zero bytes).
        copy = bytes(memoryview(obj))
        keep.append(copy)
        p[0] = <const uint8_t *>PyBytes_AS_STRING(copy)
        n[0] = len(copy)
    return 0


cdef list encode_headers(object headers, Py_ssize_t *size):
    """Header keys as UTF-8 bytes; adds their encoded size to size[0]."""
    cdef list out = []
    cdef Py_ssize_t vlen
    for hk, hv in headers:
        if hk is None:
            raise EncodeError("Invalid null header key found in headers")
        hkb = (<str>hk).encode("utf-8") if isinstance(hk, str) else bytes(hk)
        if hv is not None and type(hv) is not bytes:
            hv = bytes(hv)
        out.append((hkb, hv))
        size[0] += varint_size(len(hkb)) + len(hkb)
        vlen = -1 if hv is None else len(hv)
        size[0] += varint_size(vlen) + (vlen if vlen > 0 else 0)
    return out


cdef inline Py_ssize_t record_body_size(int64_t offset_delta, int64_t timestamp_delta,
                                        Py_ssize_t key_len, Py_ssize_t value_len,
                                        Py_ssize_t n_headers, Py_ssize_t headers_size) noexcept:
    cdef Py_ssize_t body = 1 + varint_size(timestamp_delta) + varint_size(offset_delta)
    body += varint_size(key_len) + (key_len if key_len > 0 else 0)
    body += varint_size(value_len) + (value_len if value_len > 0 else 0)
    return body + varint_size(n_headers) + headers_size


cdef inline Py_ssize_t record_size(int64_t offset_delta, int64_t timestamp_delta,
                                   Py_ssize_t key_len, Py_ssize_t value_len,
                                   Py_ssize_t n_headers, Py_ssize_t headers_size) noexcept:
    """Bytes a record takes on the wire (DefaultRecord.sizeInBytes)."""
    cdef Py_ssize_t body = record_body_size(offset_delta, timestamp_delta, key_len, value_len,
                                            n_headers, headers_size)
    return varint_size(body) + body


cdef int encode_record(_Growable out, int64_t offset_delta, int64_t timestamp_delta,
                       const uint8_t *key, Py_ssize_t key_len,
                       const uint8_t *value, Py_ssize_t value_len,
                       list headers, Py_ssize_t headers_size) except -1:
    """Append one record; `headers` from encode_headers (or None), `headers_size` their bytes."""
    cdef Py_ssize_t n_headers = 0 if headers is None else len(headers)
    cdef Py_ssize_t body
    cdef uint8_t *p
    cdef bytes hkb
    body = record_body_size(offset_delta, timestamp_delta, key_len, value_len, n_headers,
                            headers_size)
    if out.size + body + 5 > out.capacity:
        out.reserve(body + 5)
    p = out.data + out.size
    p = kafkarec_put_uvarint(p, kafkarec_zigzag(body))
    p[0] = 0                                   # record attributes: unused
    p = kafkarec_put_uvarint(p + 1, kafkarec_zigzag(timestamp_delta))
    p = kafkarec_put_uvarint(p, kafkarec_zigzag(offset_delta))
    p = kafkarec_put_uvarint(p, kafkarec_zigzag(key_len))
    if key_len > 0:
        kafkarec_copy(p, key, key_len)
        p += key_len
    p = kafkarec_put_uvarint(p, kafkarec_zigzag(value_len))
    if value_len > 0:
        kafkarec_copy(p, value, value_len)
        p += value_len
    p = kafkarec_put_uvarint(p, kafkarec_zigzag(n_headers))
    if n_headers:
        for hkb, hv in headers:
            p = write_varlong(p, len(hkb))
            p = put_bytes(p, <const uint8_t *>PyBytes_AS_STRING(hkb), len(hkb))
            if hv is None:
                p = write_varlong(p, -1)
            else:
                p = write_varlong(p, len(<bytes>hv))
                p = put_bytes(p, <const uint8_t *>PyBytes_AS_STRING(hv), len(<bytes>hv))
    out.size = p - out.data
    return 0


cdef int write_v2_header(uint8_t *p, Py_ssize_t size, int64_t base_offset,
                         int32_t partition_leader_epoch, int16_t attributes,
                         int32_t last_offset_delta, int64_t base_timestamp, int64_t max_timestamp,
                         int64_t producer_id, int16_t producer_epoch, int32_t base_sequence,
                         int32_t count) except -1:
    """The 61-byte header in front of the records at p + 61; the CRC-32C over
    attributes..end is computed last."""
    if size - LOG_OVERHEAD > INT32_MAX:
        raise EncodeError(f"a batch of {size} bytes does not fit Kafka's int32 batch length")
    kr_store_be64(p, <uint64_t>base_offset)
    kr_store_be32(p + OFF_LENGTH, <uint32_t>(size - LOG_OVERHEAD))
    kr_store_be32(p + OFF_PARTITION_LEADER_EPOCH, <uint32_t>partition_leader_epoch)
    p[OFF_MAGIC] = 2
    kr_store_be16(p + OFF_ATTRIBUTES, <uint16_t>attributes)
    kr_store_be32(p + OFF_LAST_OFFSET_DELTA, <uint32_t>last_offset_delta)
    kr_store_be64(p + OFF_BASE_TIMESTAMP, <uint64_t>base_timestamp)
    kr_store_be64(p + OFF_MAX_TIMESTAMP, <uint64_t>max_timestamp)
    kr_store_be64(p + OFF_PRODUCER_ID, <uint64_t>producer_id)
    kr_store_be16(p + OFF_PRODUCER_EPOCH, <uint16_t>producer_epoch)
    kr_store_be32(p + OFF_BASE_SEQUENCE, <uint32_t>base_sequence)
    kr_store_be32(p + OFF_RECORDS_COUNT, <uint32_t>count)
    kr_store_be32(p + OFF_CRC, crc32c_of(p + OFF_ATTRIBUTES, size - OFF_ATTRIBUTES))
    return 0


# --- compression on write ----------------------------------------------------

cdef int codec_id(object compression) except -1:
    if type(compression) is int or type(compression) is Compression:
        if 0 <= compression <= CODEC_ZSTD:
            return compression          # no Enum call on the common path
    try:
        return int(Compression(compression))
    except ValueError:
        raise EncodeError(f"Unknown compression type id: {compression}") from None


cdef object check_level(int codec, object level):
    """Kafka's accepted level ranges (CompressionType / Compression builders)."""
    if level is None:
        return None
    ranges = {1: (1, 9), 3: (1, 17), 4: (-131072, 22)}
    if codec == 0 or codec == 2:
        raise EncodeError(f"{_CODEC_NAMES[codec]} has no compression level")
    low, high = ranges[codec]
    if not (low <= level <= high or (codec == 1 and level == -1)):
        raise EncodeError(f"{_CODEC_NAMES[codec]} compression level {level} is outside "
                          f"[{low}, {high}]")
    return level


cdef bytes compressed_batch_bytes(int codec, const uint8_t *records, Py_ssize_t n, object level,
                                  bint raw_snappy):
    """V2_HEADER_SIZE bytes left for the header, then the records compressed.
    Snappy compresses straight into the returned bytes; the other libraries
    return their own bytes, copied there once."""
    cdef object data = view_of(records, n)
    if codec == 2:
        return snappy_batch_bytes(data, n, raw_snappy)
    if codec == 1:
        zlib = codec_lib("zlib", "zlib")
        c = zlib.compressobj(-1 if level is None else level, zlib.DEFLATED, 31)
        return with_header_room(c.compress(data), c.flush())
    return with_header_room(compress(codec, data, level, raw_snappy, 2), None)


cdef bytes with_header_room(object first, object second):
    """V2_HEADER_SIZE bytes of room, then first and second (bytes-like; second may be None)."""
    cdef _Buffer a = buffer_of(first)
    cdef _Buffer b = buffer_of(second) if second is not None else None
    cdef Py_ssize_t nb = b.size if b is not None else 0
    cdef bytes out = PyBytes_FromStringAndSize(NULL, V2_HEADER_SIZE + a.size + nb)
    cdef uint8_t *p = <uint8_t *>PyBytes_AS_STRING(out) + V2_HEADER_SIZE
    if a.size:
        c_memcpy(p, a.ptr, a.size)
    if nb:
        c_memcpy(p + a.size, b.ptr, nb)
    return out


from cpython.buffer cimport PyBUF_WRITE


cdef bytes snappy_batch_bytes(object data, Py_ssize_t n, bint raw):
    """Snappy (xerial framing as snappy-java writes it, or raw) written by
    cramjam's compress_raw_into straight into the batch's bytes."""
    cjsnappy = codec_lib("cramjam", "python-snappy").snappy
    cdef _BatchBytes out = _BatchBytes()
    cdef Py_ssize_t start, written, pos, block_bound
    cdef object view = data
    if raw:
        block_bound = cjsnappy.compress_raw_max_len(view)
        out.reserve(block_bound)
        out.size = cjsnappy.compress_raw_into(
            view, PyMemoryView_FromMemory(<char *>out.data, out.capacity, PyBUF_WRITE))
        return out.take()
    # magic, version 1, compatible 1, then (BE32 length, block) per 32 KiB of input
    block_bound = 4 + cjsnappy.compress_raw_max_len(view[:XERIAL_BLOCK_SIZE])
    out.reserve(XERIAL_HEADER_SIZE + (n + XERIAL_BLOCK_SIZE - 1) // XERIAL_BLOCK_SIZE * block_bound)
    c_memcpy(out.data, <const char *>XERIAL_MAGIC, 8)
    c_memcpy(out.data + 8, b"\x00\x00\x00\x01\x00\x00\x00\x01", 8)
    pos = XERIAL_HEADER_SIZE
    for start in range(0, n, XERIAL_BLOCK_SIZE):
        written = cjsnappy.compress_raw_into(
            view[start:start + XERIAL_BLOCK_SIZE],
            PyMemoryView_FromMemory(<char *>out.data + pos + 4, out.capacity - pos - 4, PyBUF_WRITE))
        kr_store_be32(out.data + pos, <uint32_t>written)
        pos += 4 + written
    out.size = pos
    return out.take()


import threading as _threading
cdef object _zstd_local = _threading.local()


cdef object zstd_compressor(object level):
    """A ZstdCompressor per thread and level, reused (creating one costs a few
    microseconds; one instance must not be used by two threads at once)."""
    cdef dict cache
    try:
        cache = _zstd_local.compressors
    except AttributeError:
        cache = _zstd_local.compressors = {}
    compressor = cache.get(level)
    if compressor is None:
        zstandard = codec_lib("zstandard", "zstandard")
        # Streaming like Kafka's ZstdOutputStream: no content size in the frame.
        compressor = cache[level] = zstandard.ZstdCompressor(level=level, write_content_size=False)
    return compressor


cdef object compress(int codec, object data, object level, bint raw_snappy, int magic):
    if codec == 1:
        zlib = codec_lib("zlib", "zlib")
        c = zlib.compressobj(-1 if level is None else level, zlib.DEFLATED, 31)
        return c.compress(data) + c.flush()
    if codec == 2:
        cjsnappy = codec_lib("cramjam", "python-snappy").snappy
        if raw_snappy:
            return bytes(cjsnappy.compress_raw(data))
        # xerial framing as snappy-java writes it: magic, version 1, compatible 1, 32 KiB blocks
        parts = [XERIAL_MAGIC, b"\x00\x00\x00\x01\x00\x00\x00\x01"]
        view = memoryview(data)
        for start in range(0, len(view), XERIAL_BLOCK_SIZE):
            block = bytes(cjsnappy.compress_raw(view[start:start + XERIAL_BLOCK_SIZE]))
            parts.append(len(block).to_bytes(4, "big"))
            parts.append(block)
        return b"".join(parts)
    if codec == 3:
        lz4frame = codec_lib("lz4.frame", "lz4")
        frame = lz4frame.compress(
            data, block_size=lz4frame.BLOCKSIZE_MAX64KB, block_linked=False,
            content_checksum=False, block_checksum=False, store_size=False,
            compression_level=0 if level is None or level == 9 else level)
        if magic == 0:
            # KAFKA-3160: Kafka writes magic-0 LZ4 with the header checksum over the magic too.
            fixed = bytearray(frame)
            fixed[6] = _lz4_header_checksum(bytes(fixed[0:6]))
            return bytes(fixed)
        return frame
    if codec == 4:
        return zstd_compressor(3 if level is None else level).compress(data)
    raise EncodeError(f"Unknown compression type id: {codec}")


# --- bulk input: whole columns -------------------------------------------------

cdef extern from "arrow_c_data.h":
    struct ArrowSchema:
        const char *format
    struct ArrowArray:
        int64_t length
        int64_t null_count
        int64_t offset
        int64_t n_buffers
        const void **buffers

from cpython.pycapsule cimport PyCapsule_GetPointer


@cython.final
cdef class _ArrowCArray:
    """One array taken through the Arrow C data interface (``__arrow_c_array__``):
    raw buffer pointers without going through pyarrow objects.  The capsules own
    the array and release it when they are collected."""
    cdef object capsules
    cdef bytes format
    cdef const ArrowArray *array


cdef _ArrowCArray arrow_c_array(object column):
    cdef _ArrowCArray a = _ArrowCArray()
    schema_capsule, array_capsule = column.__arrow_c_array__()
    a.capsules = (schema_capsule, array_capsule)
    a.format = (<const ArrowSchema *>PyCapsule_GetPointer(schema_capsule, "arrow_schema")).format
    a.array = <const ArrowArray *>PyCapsule_GetPointer(array_capsule, "arrow_array")
    return a


from cpython.sequence cimport PySequence_Fast_ITEMS
from libc.stdlib cimport malloc as c_malloc, free as c_free


cdef int list_shrank() except -1:
    # Columns given as lists are read in place; converting an item with bytes()
    # can run Python code, which could shorten a list under us.
    raise EncodeError("a column list changed size while the batch was being built")


@cython.final
cdef class _BinaryInput:
    """Uniform access to a column of binary values: a list, or a pyarrow
    binary/large_binary/string array read straight from its buffers."""
    cdef list items
    cdef Py_ssize_t length
    cdef kafkarec_bin_col c       # mode, list items or Arrow buffers (for the bulk loop too)
    cdef object owners

    cdef inline int get(self, Py_ssize_t i, const uint8_t **p, Py_ssize_t *n, list keep) except -1:
        cdef Py_ssize_t j, start
        if self.c.mode == KAFKAREC_BIN_LIST:
            if i >= len(self.items):
                list_shrank()
            item = self.items[i]
            # Held until the record is written: reading another column (a key's
            # bytes(), a header) can run Python code that replaces items[i].
            keep.append(item)
            return borrow_bytes(item, p, n, keep)
        if self.c.mode == KAFKAREC_BIN_NULL:
            p[0] = NULL
            n[0] = -1
            return 0
        j = i + self.c.array_offset
        if self.c.validity != NULL and not (self.c.validity[j >> 3] >> (j & 7)) & 1:
            p[0] = NULL
            n[0] = -1
            return 0
        if self.c.mode == KAFKAREC_BIN_ARROW32:
            start = self.c.offsets32[j]
            n[0] = self.c.offsets32[j + 1] - start
        else:
            start = self.c.offsets64[j]
            n[0] = self.c.offsets64[j + 1] - start
        p[0] = self.c.data + start
        return 0

    cdef inline Py_ssize_t bulk_end(self, Py_ssize_t n):
        """How far the bulk loop may read: a list may have shrunk while a record
        was written the general way (which can run Python code)."""
        if self.c.mode == KAFKAREC_BIN_LIST:
            self.c.items = PySequence_Fast_ITEMS(self.items)
            return min(n, len(self.items))
        return n


cdef inline const uint8_t *buffer_address(object buf, list owners) except? NULL:
    cdef _Buffer b
    if buf is None or buf.size == 0:
        return NULL
    b = buffer_of(buf)
    owners.append(b)
    return b.ptr


import sys as _sys

cdef dict _pyarrow_kinds = None

cdef int pyarrow_kind(object column) except -2:
    """For an array of one of pyarrow's own classes read directly below, its
    layout (KAFKAREC_BIN_ARROW32 / _ARROW64, or ARROW_INT64); else -1."""
    global _pyarrow_kinds
    if _pyarrow_kinds is None:
        pa = _sys.modules.get("pyarrow")
        if pa is None:
            return -1               # not imported: column cannot be a pyarrow array
        _pyarrow_kinds = {pa.BinaryArray: KAFKAREC_BIN_ARROW32, pa.StringArray: KAFKAREC_BIN_ARROW32,
                          pa.LargeBinaryArray: KAFKAREC_BIN_ARROW64,
                          pa.LargeStringArray: KAFKAREC_BIN_ARROW64, pa.Int64Array: ARROW_INT64}
    return _pyarrow_kinds.get(type(column), -1)


cdef enum:
    ARROW_INT64 = 10


cdef inline const void *pyarrow_address(object buf):
    return NULL if buf is None else <const void *><uintptr_t>buf.address


cdef inline list pyarrow_buffers(object column):
    """A pyarrow array's buffers, read through pyarrow's own API: cheaper per call
    than exporting it through the C data interface and releasing it again.
    None for an array not in CPU memory (left to the C data interface)."""
    cdef list bufs = column.buffers()
    data = bufs[1]
    return bufs if data is not None and data.is_cpu else None


cdef _BinaryInput binary_input(object column, Py_ssize_t length, str name):
    cdef _BinaryInput col = _BinaryInput()
    cdef _ArrowCArray arr
    cdef bytes fmt
    cdef int kind
    cdef list bufs
    col.length = length
    if column is None:
        col.c.mode = KAFKAREC_BIN_NULL
        return col
    if type(column) is not list:
        kind = pyarrow_kind(column)
        if kind == KAFKAREC_BIN_ARROW32 or kind == KAFKAREC_BIN_ARROW64:
            bufs = pyarrow_buffers(column)
            if bufs is not None:
                if len(column) != length:
                    raise EncodeError(f"{name} has {len(column)} items, values has {length}")
                col.c.mode = kind
                col.owners = column                 # holds its (immutable) buffers
                col.c.validity = <const uint8_t *>pyarrow_address(bufs[0])
                if kind == KAFKAREC_BIN_ARROW32:
                    col.c.offsets32 = <const int32_t *>pyarrow_address(bufs[1])
                else:
                    col.c.offsets64 = <const int64_t *>pyarrow_address(bufs[1])
                col.c.data = <const uint8_t *>pyarrow_address(bufs[2])
                col.c.array_offset = column.offset
                return col
        elif not hasattr(column, "__arrow_c_array__") and hasattr(column, "combine_chunks"):
            column = column.combine_chunks()       # a ChunkedArray: one contiguous array
            return binary_input(column, length, name)
    if isinstance(column, list):
        col.c.mode = KAFKAREC_BIN_LIST
        col.items = column
    elif hasattr(column, "__arrow_c_array__"):
        arr = arrow_c_array(column)
        fmt = arr.format
        if fmt == b"z" or fmt == b"u":
            col.c.mode = KAFKAREC_BIN_ARROW32
        elif fmt == b"Z" or fmt == b"U":
            col.c.mode = KAFKAREC_BIN_ARROW64
        else:
            raise EncodeError(f"{name} must be a binary or string array, not Arrow format "
                              f"{fmt.decode()!r}")
        if arr.array.length != length:
            raise EncodeError(f"{name} has {arr.array.length} items, values has {length}")
        col.owners = arr
        col.c.validity = <const uint8_t *>arr.array.buffers[0] if arr.array.null_count else NULL
        if col.c.mode == KAFKAREC_BIN_ARROW32:
            col.c.offsets32 = <const int32_t *>arr.array.buffers[1]
        else:
            col.c.offsets64 = <const int64_t *>arr.array.buffers[1]
        col.c.data = <const uint8_t *>arr.array.buffers[2]
        col.c.array_offset = arr.array.offset
        return col
    else:
        col.c.mode = KAFKAREC_BIN_LIST
        col.items = list(column)
    if len(col.items) != length:
        raise EncodeError(f"{name} has {len(col.items)} items, values has {length}")
    return col


cdef Py_ssize_t LIST_ESTIMATE_CAP = 64 * 1024 * 1024


cdef Py_ssize_t data_bytes(_BinaryInput col):
    """Bytes of data a column holds (an estimate for lists, exact for arrays)."""
    cdef Py_ssize_t j
    if col.c.mode == KAFKAREC_BIN_ARROW32:
        j = col.c.array_offset
        return col.c.offsets32[j + col.length] - col.c.offsets32[j] if col.length else 0
    if col.c.mode == KAFKAREC_BIN_ARROW64:
        j = col.c.array_offset
        return col.c.offsets64[j + col.length] - col.c.offsets64[j] if col.length else 0
    if col.c.mode == KAFKAREC_BIN_LIST and col.length:
        # The first item times the count, capped: one large first value must
        # not ask for terabytes (the batch grows as needed past the estimate).
        first = col.items[0]
        try:
            width = len(first) if first is not None else 0
        except TypeError:
            return 0
        return min(col.length * width, LIST_ESTIMATE_CAP)
    return 0


@cython.final
cdef class _Int64Input:
    """An int64 column: an array read through its buffer, or a list read item by
    item.  A list's leading plain ints are also converted up front into `values`
    (`n_values` of them) for the bulk loop."""
    cdef list items
    cdef const int64_t *values      # arrays: the first value (offset applied)
    cdef Py_ssize_t n_values        # how many of `values` are valid
    cdef int64_t *converted         # owned: a list's values, converted
    cdef bint is_list
    cdef object owner

    def __dealloc__(self):
        c_free(self.converted)

    cdef inline int64_t get(self, Py_ssize_t i) except? -1:
        if self.is_list:
            if i >= len(self.items):
                list_shrank()
            return self.items[i]
        return self.values[i]

    cdef int convert(self) except -1:
        """`values` = the list's leading items, as far as they are ints that fit."""
        cdef Py_ssize_t i = 0, n = len(self.items)
        cdef object item
        self.converted = <int64_t *>c_malloc(max(n, 1) * sizeof(int64_t))
        if self.converted == NULL:
            raise MemoryError()
        try:
            while i < n:
                item = self.items[i]
                if type(item) is not int:
                    break
                self.converted[i] = item
                i += 1
        except OverflowError:
            pass        # left to the general path, which raises it in its place
        self.values = self.converted
        self.n_values = i
        return 0


cdef _Int64Input int64_input(object column, Py_ssize_t length, str name, bint convert):
    cdef _Int64Input col = _Int64Input()
    cdef _ArrowCArray arr
    cdef _Buffer owner
    cdef list bufs = None
    if type(column) is not list:
        if pyarrow_kind(column) == ARROW_INT64:
            bufs = pyarrow_buffers(column)
        if bufs is not None:
            if bufs[0] is not None and column.null_count:
                raise EncodeError(f"{name} must not contain nulls")
            if len(column) != length:
                raise EncodeError(f"{name} has {len(column)} items, values has {length}")
            if length:
                col.owner = column
                col.values = <const int64_t *>pyarrow_address(bufs[1]) + <Py_ssize_t>column.offset
                col.n_values = length
                return col
        elif not hasattr(column, "__arrow_c_array__") and hasattr(column, "combine_chunks"):
            column = column.combine_chunks()       # a ChunkedArray: one contiguous array
    if isinstance(column, list) or len(column) == 0:
        col.is_list = True
        col.items = column if type(column) is list else list(column)
        if len(col.items) != length:
            raise EncodeError(f"{name} has {len(col.items)} items, values has {length}")
        if convert:
            col.convert()
        return col
    col.n_values = length
    if hasattr(column, "__arrow_c_array__"):
        arr = arrow_c_array(column)
        if arr.array.null_count:
            raise EncodeError(f"{name} must not contain nulls")
        if arr.array.length != length:
            raise EncodeError(f"{name} has {arr.array.length} items, values has {length}")
        if arr.format == b"l" or arr.format.startswith(b"tsm:"):
            # int64 / timestamp[ms]: read the values buffer in place
            col.owner = arr
            col.values = <const int64_t *>arr.array.buffers[1] + arr.array.offset
            return col
        pa = pyarrow()
        if not isinstance(column, (pa.Array, pa.ChunkedArray)):
            column = pa.array(column)              # through the C data interface
        if arr.format.startswith(b"ts"):
            # Kafka timestamps are milliseconds: seconds, micro- and nanoseconds
            # are converted (truncated), not written as if they were ms.
            column = column.cast(pa.timestamp("ms", tz=column.type.tz), safe=False)
        column = column.cast(pa.int64()).to_numpy(zero_copy_only=False)
    np = codec_lib("numpy", "numpy")
    values = np.ascontiguousarray(column, dtype=np.int64)
    if values.shape != (length,):
        raise EncodeError(f"{name} has {values.shape[0] if values.ndim else 0} items, "
                          f"values has {length}")
    owner = buffer_of(values)
    col.owner = owner
    col.values = <const int64_t *>owner.ptr
    return col


cdef int extend_columns(RecordBatchBuilder b, object values, object keys, object timestamps,
                        object headers, object offsets) except -1:
    cdef Py_ssize_t n = len(values)
    cdef _BinaryInput vcol = binary_input(values, n, "values")
    cdef _BinaryInput kcol = binary_input(keys, n, "keys")
    cdef _Int64Input ts_col = None
    cdef _Int64Input off_col = None
    cdef bint has_ts = timestamps is not None
    cdef bint has_off = offsets is not None
    cdef bint bulk
    cdef int64_t now = 0
    cdef Py_ssize_t i, klen, vlen, hsize
    cdef const uint8_t *kp
    cdef const uint8_t *vp
    cdef list keep = []
    cdef list hs
    cdef list header_rows = None
    # No headers, consecutive offsets and no size limit: the bulk loop writes
    # the records, handing the odd one (a bytearray in a list, say) back here.
    bulk = headers is None and not has_off and b._max_batch_size < 0 and not b._built
    if has_ts:
        ts_col = int64_input(timestamps, n, "timestamps", bulk)
    else:
        now = int(_time.time() * 1000)
    if has_off:
        off_col = int64_input(offsets, n, "offsets", False)
    b._records.reserve(n * (MAX_RECORD_OVERHEAD + 8) + data_bytes(vcol) + data_bytes(kcol))
    if headers is not None:
        header_rows = list(headers)
        if len(header_rows) != n:
            raise EncodeError(f"headers has {len(header_rows)} items, values has {n}")
    i = 0
    while i < n:
        if bulk:
            i = extend_bulk(b, vcol, kcol, ts_col, now, i, n)
            if i == n:
                break
        vcol.get(i, &vp, &vlen, keep)
        kcol.get(i, &kp, &klen, keep)
        hs = None
        hsize = 0
        if header_rows is not None and header_rows[i]:
            hs = encode_headers(header_rows[i], &hsize)
        b.add_record(off_col.get(i) if has_off else b._last_offset + 1,
                     ts_col.get(i) if has_ts else now, kp, klen, vp, vlen, hs, hsize)
        if keep:
            keep.clear()
        i += 1
    return 0


cdef Py_ssize_t extend_bulk(RecordBatchBuilder b, _BinaryInput vcol, _BinaryInput kcol,
                            _Int64Input ts_col, int64_t now, Py_ssize_t start,
                            Py_ssize_t n) except -1:
    """Records start.. through the C loop (kafkarec_bulk_write): the same checks
    and the same bytes as add_record + encode_record.  Returns the index of the
    first record it did not write (n when done)."""
    cdef kafkarec_bulk_state st
    cdef int status = KAFKAREC_BULK_DONE
    cdef Py_ssize_t i = start
    cdef Py_ssize_t end = min(vcol.bulk_end(n), kcol.bulk_end(n))
    cdef int64_t first_offset = b._last_offset + 1
    cdef _Growable out = b._records
    if ts_col is not None:
        end = min(end, ts_col.n_values)
        st.timestamps = ts_col.values
    else:
        st.timestamps = NULL
    if i >= end:
        return i
    if first_offset - b._base_offset + (end - i) - 1 > INT32_MAX or b.record_count + (end - i) > INT32_MAX:
        raise EncodeError("Maximum offset delta exceeded")
    st.now = now
    st.offset_delta = first_offset - b._base_offset
    st.base_timestamp = b._base_timestamp
    st.max_timestamp = b._max_timestamp
    st.first = b.record_count == 0 and not b._has_delete_horizon
    st.length_guess = 2                     # bodies of 64 B .. 8 KiB
    st.p = out.data + out.size
    st.limit = out.data + out.capacity
    while True:
        i = kafkarec_bulk_write(&st, &vcol.c, &kcol.c, i, end, &status)
        # Records written so far stay, with the builder's state matching them.
        out.size = st.p - out.data
        b.record_count += <int>(i - start)
        b._last_offset = b._base_offset + st.offset_delta - 1
        b._base_timestamp = st.base_timestamp
        b._max_timestamp = st.max_timestamp
        start = i
        if status == KAFKAREC_BULK_ROOM:
            out.reserve(max(st.need, (end - i) * 16))
            st.p = out.data + out.size
            st.limit = out.data + out.capacity
            continue
        if status == KAFKAREC_BULK_BAD_TS:
            raise EncodeError(f"Invalid negative timestamp {st.timestamps[i]}")
        return i


def build_batch(values, keys=None, timestamps=None, headers=None, offsets=None, **options) -> bytes:
    """One v2 batch from whole columns: ``RecordBatchBuilder(**options).extend(...).build()``."""
    return RecordBatchBuilder(**options).extend(values, keys, timestamps, headers, offsets).build()
