# Writing v2 batches (Kafka's MemoryRecordsBuilder rules for magic 2).
#
# Records are encoded straight into a growable C buffer as they are appended;
# build() compresses the records section if asked, writes the 61-byte header
# and computes the CRC once, over attributes..end.

import time as _time
from struct import error as struct_error

from kafkarec.errors import EncodeError

cdef enum:
    MAX_RECORD_OVERHEAD = 21     # DefaultRecord.MAX_RECORD_OVERHEAD



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
            memcpy(PyBytes_AS_STRING(fresh) + V2_HEADER_SIZE, self.data, self.size)
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
    memcpy(p, src, n)
    return p + n


cdef extern from "Python.h":
    long long PyLong_AsLongLongAndOverflow(object obj, int *overflow) except? -1


cdef inline int64_t int64_arg(object value, str what) except? -1:
    """A builder argument that Kafka stores as a long (offsets, timestamps): an
    EncodeError, not Python's OverflowError, when it does not fit (checked without
    raising and catching, as this runs for every record)."""
    cdef int overflow = 0
    cdef long long v = PyLong_AsLongLongAndOverflow(value, &overflow)
    if overflow:
        raise EncodeError(f"{what} {value} does not fit a signed 64-bit integer")
    return v


#: MemoryRecordsBuilder's COMPRESSION_RATE_ESTIMATION_FACTOR (a Java float)
cdef float COMPRESSION_RATE_ESTIMATION_FACTOR = 1.05


@cython.final
cdef class RecordBatchBuilder:
    """Builds one v2 record batch.

        builder = RecordBatchBuilder(compression=Compression.LZ4, base_offset=100)
        builder.append(b"value", key=b"key", timestamp=1700000000000, headers=[("h", b"v")])
        data = builder.build()

    Offsets must increase (gaps are allowed); timestamps are ms since the epoch
    or -1.  With ``max_batch_size`` set, ``has_room_for`` answers as Kafka's
    producer does (the first record always fits) and ``append`` refuses a
    record that does not fit rather than dropping it.  A compressed batch's size
    is estimated as Kafka's MemoryRecordsBuilder estimates it: the uncompressed
    records times ``estimated_compression_ratio`` (what the producer learnt from
    its earlier batches; 1.0 by default) times 1.05, in single precision.
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
    cdef float _estimated_ratio
    cdef int _codec
    cdef object _level
    cdef bint _raw_snappy
    cdef bint _has_delete_horizon
    cdef bint _built

    def __init__(self, *, compression=Compression.NONE, compression_level=None,
                 base_offset=0, timestamp_type=TimestampType.CREATE_TIME, log_append_time=None,
                 producer_id=-1, producer_epoch=-1, base_sequence=-1,
                 is_transactional=False, is_control=False, partition_leader_epoch=-1,
                 delete_horizon_ms=None, max_batch_size=None, snappy_framing="xerial",
                 estimated_compression_ratio=1.0):
        self._records = _BatchBytes()
        try:
            ratio = float(estimated_compression_ratio)
        except (TypeError, ValueError):
            raise EncodeError(f"estimated_compression_ratio must be a positive number, "
                              f"not {estimated_compression_ratio!r}") from None
        if not 0.0 < ratio < 1e6:
            raise EncodeError(f"estimated_compression_ratio must be a positive number, not {ratio!r}")
        self._estimated_ratio = ratio
        self._codec = codec_id(compression)
        self._level = check_level(self._codec, compression_level)
        if snappy_framing not in ("xerial", "raw"):
            raise EncodeError(f"snappy_framing must be 'xerial' or 'raw', not {snappy_framing!r}")
        self._raw_snappy = snappy_framing == "raw"
        self._base_offset = int64_arg(base_offset, "base offset")
        self._last_offset = self._base_offset      # meaningful once a record is in
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
        cdef int64_t ts = int(_time.time() * 1000) if timestamp is None else int64_arg(timestamp, "timestamp")
        if headers:
            encode_headers(headers, &hsize)
        if self.record_count and self._last_offset == INT64_MAX:
            return False                            # no offset follows
        return self.fits(self.next_offset(), ts, klen, vlen, len(headers) if headers else 0, hsize)

    cdef inline int64_t next_offset(self) except? -1:
        """The offset a record appended without one gets (Kafka's nextSequentialOffset)."""
        if self.record_count == 0:
            return self._base_offset
        if self._last_offset == INT64_MAX:
            raise EncodeError(f"no offset follows {INT64_MAX} (offsets are signed 64-bit)")
        return self._last_offset + 1

    cdef bint fits(self, int64_t offset, int64_t ts, Py_ssize_t klen, Py_ssize_t vlen,
                   Py_ssize_t n_headers, Py_ssize_t hsize):
        cdef Py_ssize_t written = self._records.size
        cdef float estimate
        if self.record_count == 0 or self._max_batch_size < 0:
            return True
        if self._codec != CODEC_NONE:
            # Java's (int) (uncompressed * ratio * 1.05f): float products, truncated
            estimate = <float>self._records.size * self._estimated_ratio
            estimate = estimate * COMPRESSION_RATE_ESTIMATION_FACTOR
            written = <Py_ssize_t>estimate
        return (V2_HEADER_SIZE + written
                + record_size(wrapping_sub64(offset, self._base_offset),
                              wrapping_sub64(ts, self._base_timestamp),
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
        (for ABORT/COMMIT: ``{"coordinatorEpoch": N}``)."""
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
            encoded = encode_control_value(kind, value or {})
        except (KeyError, TypeError, ValueError, OverflowError, struct_error) as exc:
            raise EncodeError(f"invalid {kind.name} control value {value!r}: {exc}") from None
        return self.append_record(encoded, encode_control_key(kind, key_version),
                                  timestamp, (), offset)

    def _append(self, value, key, timestamp, headers, offset):
        """append() without the control-batch check (convert.py copies control records)."""
        return self.append_record(value, key, timestamp, headers, offset)

    cdef object append_record(self, object value, object key, object timestamp, object headers,
                              object offset):
        cdef int64_t off, ts
        try:
            off = self.next_offset() if offset is None else offset
            ts = int(_time.time() * 1000) if timestamp is None else timestamp
        except OverflowError:
            # (one try for both: a check per value would cost every record)
            what = "offset" if offset is not None and not -2**63 <= offset < 2**63 else "timestamp"
            raise EncodeError(f"{what} {offset if what == 'offset' else timestamp} does not fit a "
                              "signed 64-bit integer") from None
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
        if <uint64_t>off - <uint64_t>self._base_offset > INT32_MAX:   # exact: off >= base
            raise EncodeError("Maximum offset delta exceeded")
        if ts < 0 and ts != -1:
            raise EncodeError(f"Invalid negative timestamp {ts}")
        if self.record_count == 0 and not self._has_delete_horizon:
            self._base_timestamp = ts
        # the timestamp delta wraps as Java's long does (-1 then Long.MAX: a delta of Long.MIN), and the
        # reader's wrapping add gives the timestamp back
        encode_record(self._records, off - self._base_offset, wrapping_sub64(ts, self._base_timestamp),
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
