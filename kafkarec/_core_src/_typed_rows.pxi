# Typed values (Avro, Protobuf) into nested Arrow columns: the one driver over a column of typed values.
#
# A format's steps write into the core's one column builder (_column.pxi: _Column, col_put_* / col_ok /
# col_null / col_close_list); a row that fails midway is cut out of every column with col_truncate.
#
# decode_typed_column is the one loop over a column of record values: nulls (tombstones, and values the
# registry left without a writer), the writer lookup by schema id, where the body starts, and a row that
# fails becoming a null row with its reason worded once (value_problem).  The format supplies a
# _TypedRows step that decodes one value's body into the root column.

cdef const char *_TYPED_EMPTY = b""     # a non-NULL pointer to nothing


# ---------------------------------------------------------------- the driver

cdef struct TypedSpan:
    # One value the step is to decode: its bytes (framing included), where the body starts, and
    # the writer (borrowed from the step's writers) with what the step made of it (code_of).
    const uint8_t *value
    Py_ssize_t length
    Py_ssize_t body
    PyObject *writer
    const void *code


cdef enum:
    TYPED_SPAN_ROWS = 4096      # values handed to the step at a time (its rows may run without the GIL)


cdef class _TypedRows:
    """A typed format's step: decodes record values' bodies into the root column."""
    cdef dict writers               # writer schema id -> the format's compiled writer
    cdef _Column root

    cdef int row(self, object writer, const uint8_t *value, Py_ssize_t length, Py_ssize_t body) except -1:
        """Append one row for `value` (its `length` bytes, framing included; the body starts at byte
        `body`) or raise a DecodeError / ColumnOverflowError with the position in the value."""
        raise NotImplementedError

    cdef const void *code_of(self, object writer) except? NULL:
        """What run() needs of a writer beside the object itself (NULL: nothing)."""
        return NULL

    cdef int run(self, TypedSpan *spans, Py_ssize_t count, Py_ssize_t *done) except -1:
        """Rows for spans[done[0]:count], in order; done[0] counts the spans decoded, so that a row
        that raises is spans[done[0]] (its partial row is the driver's to cut).  This one: row()
        after row(), with the GIL; a format whose rows run without it overrides run()."""
        cdef Py_ssize_t k
        for k in range(done[0], count):
            self.row(<object>spans[k].writer, spans[k].value, spans[k].length, spans[k].body)
            done[0] = k + 1
        return 0

    cdef Py_ssize_t rows(self) noexcept:
        """The root's rows so far."""
        return self.root.length

    cdef int null_row(self) except -1:
        return col_null(self.root)

    cdef int failed(self, Py_ssize_t before) except -1:
        """The row after the first `before` failed: cut it and put a null row in its place."""
        self.row_failed()
        col_truncate(self.root, before)
        return col_null(self.root)

    cdef object finish(self):
        return col_finish(self.root)

    cdef void row_failed(self) noexcept:
        """Forget the state a failed row left behind."""
        pass


cdef object int_column(object column, object arrow_type, Py_ssize_t n, str name):
    pa = pyarrow()
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if not pa.types.is_integer(column.type):
        raise TypeError(f"{name} must be an integer array, not {column.type}")
    if len(column) != n:
        raise ValueError(f"{name} has {len(column)} items, values has {n}")
    return column.cast(arrow_type)


cdef inline bint bit_set(const uint8_t *bits, Py_ssize_t i) noexcept:
    return bits == NULL or (bits[i >> 3] >> (i & 7)) & 1


cdef tuple decode_typed_column(_TypedRows step, _Column root, object values, object writer_ids,
                               object body_offsets):
    """(root's array, string array of per-row errors) for a column of record values.  writer_ids
    (integers, None: all 0) pick the writer; body_offsets (None: all 0) say where each body starts.
    A null value or writer id is a null row without an error (the caller reports its framing).
    The values go to the step up to TYPED_SPAN_ROWS at a time (step.run), so that a format whose
    rows run without the GIL (Avro) releases it once for many rows."""
    pa = pyarrow()
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if not (pa.types.is_binary(values.type) or pa.types.is_large_binary(values.type)
            or pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
        raise TypeError(f"values must be a binary array, not {values.type}")
    cdef Py_ssize_t n = len(values)
    cdef _BinaryInput input = binary_input(values, n, "values")
    cdef list keep = []
    cdef const uint8_t *ivalid = NULL
    cdef const int64_t *ids = NULL
    cdef const uint8_t *ovalid = NULL
    cdef const int32_t *offsets = NULL
    cdef Py_ssize_t ioff = 0, ooff = 0
    if writer_ids is not None:
        writer_ids = int_column(writer_ids, pa.int64(), n, "writer_ids")
        bufs = writer_ids.buffers()
        ivalid = <const uint8_t *>pyarrow_address(bufs[0])
        ids = <const int64_t *>pyarrow_address(bufs[1])
        ioff = writer_ids.offset
    if body_offsets is not None:
        body_offsets = int_column(body_offsets, pa.int32(), n, "body_offsets")
        bufs = body_offsets.buffers()
        ovalid = <const uint8_t *>pyarrow_address(bufs[0])
        offsets = <const int32_t *>pyarrow_address(bufs[1])
        ooff = body_offsets.offset
    cdef _Column errors = new_column(CK_BIN, pa.string(), True)
    cdef Py_ssize_t i = 0, length, body, m, done, noted, start
    cdef const uint8_t *value
    cdef int64_t wid, last_wid = 0
    cdef object writer = None
    cdef const void *code = NULL
    cdef bint looked_up = False
    cdef list held = []             # the writers of the spans in hand: the spans borrow them, and
    cdef bytes why                  # another thread may replace one in step.writers meanwhile
    cdef TypedSpan *spans = <TypedSpan *>malloc(TYPED_SPAN_ROWS * sizeof(TypedSpan))
    if spans == NULL:
        raise MemoryError()
    step.root = root
    try:
        while i < n:
            # the next values the step can decode one after the other; a null row, or a value
            # that fails before its body is read, is settled here, once those before it are done
            m = 0
            held = [writer]
            while i < n and m < TYPED_SPAN_ROWS:
                input.get(i, &value, &length, keep)
                if length < 0 or not bit_set(ivalid, i + ioff):
                    if m:
                        break
                    step.null_row()     # a tombstone, or a value the registry left undecoded
                    col_null(errors)
                    i += 1
                    continue
                if value == NULL:
                    value = <const uint8_t *>_TYPED_EMPTY
                wid = ids[i + ioff] if ids != NULL else 0
                if not looked_up or wid != last_wid:
                    writer = step.writers.get(wid)
                    held.append(writer)
                    code = NULL if writer is None else step.code_of(writer)
                    last_wid = wid
                    looked_up = True
                body = offsets[i + ooff] if offsets != NULL and bit_set(ovalid, i + ooff) else 0
                if writer is None or body < 0 or body > length:
                    if m:
                        break
                    step.null_row()     # (nothing of the row was written: nothing to cut)
                    why = value_problem(body,
                                        f"unknown writer schema id {wid}" if writer is None else
                                        f"the body starts past the end of a {length}-byte value"
                                        ).encode("utf-8", "replace")
                    col_put_bytes(errors, why)
                    i += 1
                    continue
                spans[m].value = value
                spans[m].length = length
                spans[m].body = body
                spans[m].writer = <PyObject *>writer
                spans[m].code = code
                m += 1
                i += 1
            done = 0
            noted = 0
            start = step.rows()
            while done < m:
                try:
                    step.run(spans, m, &done)
                except (DecodeError, ColumnOverflowError) as exc:
                    col_null_rows(errors, done - noted)
                    step.failed(start + done)
                    why = value_problem(max(getattr(exc, "position", 0) or 0, spans[done].body),
                                        getattr(exc, "reason", str(exc))).encode("utf-8", "replace")
                    col_put_bytes(errors, why)
                    done += 1
                    noted = done
            col_null_rows(errors, m - noted)
    finally:
        free(spans)
    return step.finish(), col_finish(errors)
