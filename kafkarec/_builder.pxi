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


from cpython.ref cimport PyObject, Py_XDECREF, Py_INCREF

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
        if self._bytes == NULL:
            fresh = PyBytes_FromStringAndSize(NULL, V2_HEADER_SIZE + cap)
            Py_INCREF(fresh)
            self._bytes = <PyObject *>fresh
        else:
            _PyBytes_Resize(&self._bytes, V2_HEADER_SIZE + cap)
        self.data = <uint8_t *>PyBytes_AS_STRING(<object>self._bytes) + V2_HEADER_SIZE
        self.capacity = cap
        return 0

    cdef bytes take(self):
        """The bytes object, cut to header + records; the buffer is spent."""
        cdef object out
        if self._bytes == NULL:
            self.reserve(1)
        _PyBytes_Resize(&self._bytes, V2_HEADER_SIZE + self.size)
        out = <object>self._bytes
        Py_XDECREF(self._bytes)
        self._bytes = NULL
        self.data = NULL
        self.capacity = 0
        return out


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
        if ts_type is TimestampType.NO_TIMESTAMP_TYPE:
            raise EncodeError("magic 2 batches need CREATE_TIME or LOG_APPEND_TIME")
        self._attributes = self._codec
        if ts_type is TimestampType.LOG_APPEND_TIME:
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
        return self._append(value, key, timestamp, headers, offset)

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
        return self._append(encoded, control.encode_control_key(kind, key_version), timestamp,
                            (), offset)

    def _append(self, value, key, timestamp, headers, offset):
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
        cdef const uint8_t *records = self._records.data
        cdef Py_ssize_t n = self._records.size
        cdef object compressed
        cdef _Buffer owner
        if self._codec != CODEC_NONE:
            compressed = compress(self._codec, view_of(records, n), self._level, self._raw_snappy, 2)
            owner = buffer_of(compressed)
            records = owner.ptr
            n = owner.size
        max_ts = self._log_append_time if self._attributes & ATTR_LOG_APPEND_TIME else self._max_timestamp
        if self._codec == CODEC_NONE:
            out = self._records.take()      # records already in place behind the header
            write_v2_header(<uint8_t *>PyBytes_AS_STRING(out), len(out), self._base_offset,
                            self._partition_leader_epoch, self._attributes,
                            <int32_t>(self._last_offset - self._base_offset), self._base_timestamp,
                            max_ts, self._producer_id, self._producer_epoch, self._base_sequence,
                            self.record_count)
            return out
        return write_v2_batch(records, n, self._base_offset, self._partition_leader_epoch,
                              self._attributes, <int32_t>(self._last_offset - self._base_offset),
                              self._base_timestamp, max_ts, self._producer_id,
                              self._producer_epoch, self._base_sequence, self.record_count)


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
        copy = bytes(obj)          # bytearray / memoryview: keep an immutable copy alive
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
    p = write_varlong(p, body)
    p[0] = 0                                   # record attributes: unused
    p = write_varlong(p + 1, timestamp_delta)
    p = write_varlong(p, offset_delta)
    p = write_varlong(p, key_len)
    p = put_bytes(p, key, key_len)
    p = write_varlong(p, value_len)
    p = put_bytes(p, value, value_len)
    p = write_varlong(p, n_headers)
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


cdef bytes write_v2_batch(const uint8_t *records, Py_ssize_t n, int64_t base_offset,
                          int32_t partition_leader_epoch, int16_t attributes,
                          int32_t last_offset_delta, int64_t base_timestamp, int64_t max_timestamp,
                          int64_t producer_id, int16_t producer_epoch, int32_t base_sequence,
                          int32_t count):
    """Header + a copy of the records."""
    cdef bytes out = PyBytes_FromStringAndSize(NULL, V2_HEADER_SIZE + n)
    cdef uint8_t *p = <uint8_t *>PyBytes_AS_STRING(out)
    if n:
        c_memcpy(p + V2_HEADER_SIZE, records, n)
    write_v2_header(p, V2_HEADER_SIZE + n, base_offset, partition_leader_epoch, attributes,
                    last_offset_delta, base_timestamp, max_timestamp, producer_id,
                    producer_epoch, base_sequence, count)
    return out


cdef int write_v2_header(uint8_t *p, Py_ssize_t size, int64_t base_offset,
                         int32_t partition_leader_epoch, int16_t attributes,
                         int32_t last_offset_delta, int64_t base_timestamp, int64_t max_timestamp,
                         int64_t producer_id, int16_t producer_epoch, int32_t base_sequence,
                         int32_t count) except -1:
    """The 61-byte header in front of the records at p + 61; the CRC-32C over
    attributes..end is computed last."""
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
        zstandard = codec_lib("zstandard", "zstandard")
        # Streaming like Kafka's ZstdOutputStream: no content size in the frame.
        return zstandard.ZstdCompressor(level=3 if level is None else level,
                                        write_content_size=False).compress(data)
    raise EncodeError(f"Unknown compression type id: {codec}")


# --- bulk input: whole columns -------------------------------------------------

cdef extern from *:
    """
    /* The Arrow C data interface (arrow.apache.org/docs/format/CDataInterface.html). */
    #ifndef ARROW_C_DATA_INTERFACE
    #define ARROW_C_DATA_INTERFACE
    struct ArrowSchema {
        const char *format; const char *name; const char *metadata; int64_t flags;
        int64_t n_children; struct ArrowSchema **children; struct ArrowSchema *dictionary;
        void (*release)(struct ArrowSchema *); void *private_data;
    };
    struct ArrowArray {
        int64_t length; int64_t null_count; int64_t offset; int64_t n_buffers; int64_t n_children;
        const void **buffers; struct ArrowArray **children; struct ArrowArray *dictionary;
        void (*release)(struct ArrowArray *); void *private_data;
    };
    #endif
    """
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


@cython.final
cdef class _BinaryInput:
    """Uniform access to a column of binary values: a list, or a pyarrow
    binary/large_binary/string array read straight from its buffers."""
    cdef list items
    cdef Py_ssize_t length
    cdef int mode                 # 0 all null, 1 list, 2 arrow int32 offsets, 3 arrow int64 offsets
    cdef const uint8_t *data
    cdef const int32_t *offsets32
    cdef const int64_t *offsets64
    cdef const uint8_t *validity
    cdef Py_ssize_t array_offset
    cdef object owners

    cdef inline int get(self, Py_ssize_t i, const uint8_t **p, Py_ssize_t *n, list keep) except -1:
        cdef Py_ssize_t j, start
        if self.mode == 1:
            return borrow_bytes(self.items[i], p, n, keep)
        if self.mode == 0:
            p[0] = NULL
            n[0] = -1
            return 0
        j = i + self.array_offset
        if self.validity != NULL and not (self.validity[j >> 3] >> (j & 7)) & 1:
            p[0] = NULL
            n[0] = -1
            return 0
        if self.mode == 2:
            start = self.offsets32[j]
            n[0] = self.offsets32[j + 1] - start
        else:
            start = self.offsets64[j]
            n[0] = self.offsets64[j + 1] - start
        p[0] = self.data + start
        return 0


cdef inline const uint8_t *buffer_address(object buf, list owners) except? NULL:
    cdef _Buffer b
    if buf is None or buf.size == 0:
        return NULL
    b = buffer_of(buf)
    owners.append(b)
    return b.ptr


cdef _BinaryInput binary_input(object column, Py_ssize_t length, str name):
    cdef _BinaryInput col = _BinaryInput()
    cdef _ArrowCArray arr
    col.length = length
    if column is None:
        col.mode = 0
        return col
    if hasattr(column, "combine_chunks"):
        column = column.combine_chunks()       # a ChunkedArray: one contiguous array
    if isinstance(column, list):
        col.mode = 1
        col.items = column
    elif hasattr(column, "__arrow_c_array__"):
        arr = arrow_c_array(column)
        if arr.format in (b"z", b"u"):
            col.mode = 2
        elif arr.format in (b"Z", b"U"):
            col.mode = 3
        else:
            raise EncodeError(f"{name} must be a binary or string array, not Arrow format "
                              f"{arr.format.decode()!r}")
        if arr.array.length != length:
            raise EncodeError(f"{name} has {arr.array.length} items, values has {length}")
        col.owners = arr
        col.validity = <const uint8_t *>arr.array.buffers[0] if arr.array.null_count else NULL
        if col.mode == 2:
            col.offsets32 = <const int32_t *>arr.array.buffers[1]
        else:
            col.offsets64 = <const int64_t *>arr.array.buffers[1]
        col.data = <const uint8_t *>arr.array.buffers[2]
        col.array_offset = arr.array.offset
        return col
    else:
        col.mode = 1
        col.items = list(column)
    if len(col.items) != length:
        raise EncodeError(f"{name} has {len(col.items)} items, values has {length}")
    return col


cdef Py_ssize_t data_bytes(_BinaryInput col):
    """Bytes of data a column holds (an estimate for lists, exact for arrays)."""
    cdef Py_ssize_t j
    if col.mode == 2:
        j = col.array_offset
        return col.offsets32[j + col.length] - col.offsets32[j] if col.length else 0
    if col.mode == 3:
        j = col.array_offset
        return col.offsets64[j + col.length] - col.offsets64[j] if col.length else 0
    if col.mode == 1 and col.length:
        first = col.items[0]
        return col.length * (len(first) if first is not None else 0)
    return 0


@cython.final
cdef class _Int64Input:
    """An int64 column: a list read item by item, or an array read through its buffer."""
    cdef list items
    cdef const int64_t *values      # arrays: the first value (offset applied)
    cdef bint is_list
    cdef object owner

    cdef inline int64_t get(self, Py_ssize_t i) except? -1:
        if self.is_list:
            return self.items[i]
        return self.values[i]


cdef _Int64Input int64_input(object column, Py_ssize_t length, str name):
    cdef _Int64Input col = _Int64Input()
    cdef _ArrowCArray arr
    cdef _Buffer owner
    if hasattr(column, "combine_chunks"):
        column = column.combine_chunks()       # a ChunkedArray: one contiguous array
    if isinstance(column, list) or len(column) == 0:
        col.is_list = True
        col.items = list(column)
        if len(col.items) != length:
            raise EncodeError(f"{name} has {len(col.items)} items, values has {length}")
        return col
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
        column = column.cast(pyarrow().int64()).to_numpy(zero_copy_only=False)
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
    cdef int64_t now = 0
    cdef Py_ssize_t i, klen, vlen, hsize
    cdef const uint8_t *kp
    cdef const uint8_t *vp
    cdef list keep = []
    cdef list hs
    cdef list header_rows = None
    if has_ts:
        ts_col = int64_input(timestamps, n, "timestamps")
    else:
        now = int(_time.time() * 1000)
    if has_off:
        off_col = int64_input(offsets, n, "offsets")
    b._records.reserve(n * (MAX_RECORD_OVERHEAD + 8) + data_bytes(vcol) + data_bytes(kcol))
    if headers is not None:
        header_rows = list(headers)
        if len(header_rows) != n:
            raise EncodeError(f"headers has {len(header_rows)} items, values has {n}")
    if (header_rows is None and vcol.mode != 1 and kcol.mode != 1 and not has_off
            and (ts_col is None or not ts_col.is_list) and b._max_batch_size < 0
            and not b._built and n):
        return extend_arrays(b, vcol, kcol, ts_col, now, n)
    for i in range(n):
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
    return 0


cdef int extend_arrays(RecordBatchBuilder b, _BinaryInput vcol, _BinaryInput kcol,
                       _Int64Input ts_col, int64_t now, Py_ssize_t n) except -1:
    """The bulk path for array columns: one tight loop, no Python object per record.
    Same checks and the same bytes as add_record + encode_record.  State lives in
    locals during the loop: stores through the uint8_t output pointer may alias
    anything, so fields read through `b` would be reloaded every record."""
    cdef Py_ssize_t i, klen, vlen, body
    cdef const uint8_t *kp
    cdef const uint8_t *vp
    cdef int64_t ts, ts_delta
    cdef int64_t off = b._last_offset + 1
    cdef int64_t base_offset = b._base_offset
    cdef int64_t base_ts = b._base_timestamp
    cdef int64_t max_ts = b._max_timestamp
    cdef bint first = b.record_count == 0 and not b._has_delete_horizon
    cdef const int64_t *tsp = NULL
    cdef _Growable out = b._records
    cdef uint8_t *p
    cdef uint8_t *limit
    if off - base_offset + n - 1 > INT32_MAX or b.record_count + n > INT32_MAX:
        raise EncodeError("Maximum offset delta exceeded")
    if ts_col is not None:
        tsp = ts_col.values
    p = out.data + out.size
    limit = out.data + out.capacity
    try:
        for i in range(n):
            vcol.get(i, &vp, &vlen, None)
            kcol.get(i, &kp, &klen, None)
            ts = tsp[i] if tsp != NULL else now
            if ts < 0 and ts != -1:
                raise EncodeError(f"Invalid negative timestamp {ts}")
            if first:
                base_ts = ts
                first = False
            ts_delta = ts - base_ts
            body = record_body_size(off - base_offset, ts_delta, klen, vlen, 0, 0)
            if limit - p < body + 5:
                out.size = p - out.data
                out.reserve(body + 5)
                p = out.data + out.size
                limit = out.data + out.capacity
            p = write_varlong(p, body)
            p[0] = 0
            p = write_varlong(p + 1, ts_delta)
            p = write_varlong(p, off - base_offset)
            p = write_varlong(p, klen)
            p = put_bytes(p, kp, klen)
            p = write_varlong(p, vlen)
            p = put_bytes(p, vp, vlen)
            p[0] = 0                                # no headers
            p += 1
            if ts > max_ts:
                max_ts = ts
            off += 1
    finally:
        # Records written so far stay, with the builder's state matching them.
        out.size = p - out.data
        b.record_count += <int>(off - (b._last_offset + 1))
        b._last_offset = off - 1
        b._base_timestamp = base_ts
        b._max_timestamp = max_ts
    return 0


def build_batch(values, keys=None, timestamps=None, headers=None, offsets=None, **options) -> bytes:
    """One v2 batch from whole columns: ``RecordBatchBuilder(**options).extend(...).build()``."""
    cdef RecordBatchBuilder b = RecordBatchBuilder(**options)
    extend_columns(b, values, keys, timestamps, headers, offsets)
    return b.build()
