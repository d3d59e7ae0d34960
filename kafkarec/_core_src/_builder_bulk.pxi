# Bulk input: whole columns (Arrow arrays or lists) appended in one C loop
# (bulk_writer.h), for RecordBatchBuilder.extend and build_batch.

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
        free(self.converted)

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
        self.converted = <int64_t *>malloc(max(n, 1) * sizeof(int64_t))
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
    np = require("numpy")
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
        b.add_record(off_col.get(i) if has_off else b.next_offset(),
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
    cdef int64_t first_offset
    cdef _Growable out = b._records
    if ts_col is not None:
        end = min(end, ts_col.n_values)
        st.timestamps = ts_col.values
    else:
        st.timestamps = NULL
    if i >= end:
        return i
    first_offset = b.next_offset()
    if end - i - 1 > INT64_MAX - first_offset:
        raise EncodeError(f"{end - i} records from offset {first_offset} run past {INT64_MAX} "
                          "(offsets are signed 64-bit)")
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
