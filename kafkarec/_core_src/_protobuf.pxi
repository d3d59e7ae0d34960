# _protobuf.pxi: Protobuf wire format straight into Arrow columns, driven by plans.
#
# kafkarec/protobuf.py compiles, on the driver, a .proto schema into plain plans: the column's message as a tree
# of _PbColumn builders (Spark from_protobuf's types), and for each writer message a _PbMsgPlan that says, per
# writer field number, how to read the value and which column it lands in (fields matched by name).  Executors run
# the plans; they need neither protoc nor the protobuf package.
#
# A message is decoded in two passes over its bytes: a scan that checks every field's framing against the bytes
# left and remembers, per column, the last occurrence (last one wins) and the first one (where repeated fields
# start), then an emit in column order.  A record that fails is truncated out of every builder and becomes a null
# row with its reason.  Nesting is bounded (PB_MAX_DEPTH), nothing is allocated by a count read from the input.

cdef enum:
    PB_WT_VARINT = 0
    PB_WT_I64 = 1
    PB_WT_LEN = 2
    PB_WT_SGROUP = 3
    PB_WT_EGROUP = 4
    PB_WT_I32 = 5
    PB_MAX_DEPTH = 100
    PB_MAX_INDEXES = 64

# A writer field's type: FieldDescriptorProto.Type numbers.
cdef enum:
    PBT_DOUBLE = 1
    PBT_FLOAT = 2
    PBT_INT64 = 3
    PBT_UINT64 = 4
    PBT_INT32 = 5
    PBT_FIXED64 = 6
    PBT_FIXED32 = 7
    PBT_BOOL = 8
    PBT_STRING = 9
    PBT_GROUP = 10
    PBT_MESSAGE = 11
    PBT_BYTES = 12
    PBT_UINT32 = 13
    PBT_ENUM = 14
    PBT_SFIXED32 = 15
    PBT_SFIXED64 = 16
    PBT_SINT32 = 17
    PBT_SINT64 = 18

# A column's kind (the Arrow type it builds; enums are string columns).
cdef enum:
    PBC_INT32 = 1
    PBC_INT64 = 2
    PBC_FLOAT = 3
    PBC_DOUBLE = 4
    PBC_BOOL = 5
    PBC_STRING = 6
    PBC_BINARY = 7
    PBC_STRUCT = 8
    PBC_LIST = 9
    PBC_MAP = 10
    PBC_TIMESTAMP = 11
    PBC_DURATION = 12


cdef inline uint64_t pb_load_le64(const uint8_t *p) noexcept nogil:
    return (<uint64_t>kr_load_le32(p)) | ((<uint64_t>kr_load_le32(p + 4)) << 32)


cdef inline int pb_wire_of(int t) noexcept nogil:
    if t == PBT_DOUBLE or t == PBT_FIXED64 or t == PBT_SFIXED64:
        return PB_WT_I64
    if t == PBT_FLOAT or t == PBT_FIXED32 or t == PBT_SFIXED32:
        return PB_WT_I32
    if t == PBT_STRING or t == PBT_BYTES or t == PBT_MESSAGE:
        return PB_WT_LEN
    if t == PBT_GROUP:
        return PB_WT_SGROUP
    return PB_WT_VARINT


cdef struct PbCtx:
    const uint8_t *base     # first byte of the record's value: error positions count from here


cdef int pb_fail(const PbCtx *ctx, const uint8_t *at, str reason) except -1:
    raise ProtobufDecodeError(reason, at - ctx.base)


# ---------------------------------------------------------------- column builders

cdef class _PbColumn:
    """One Arrow column being built (validity + values); see pb_column()."""
    cdef readonly int kind
    cdef readonly object arrow_type
    cdef _Bits valid

    def __cinit__(self):
        self.valid = _Bits()

    cdef int append_null(self) except -1:
        raise NotImplementedError

    cdef int truncate(self, Py_ssize_t n) except -1:
        raise NotImplementedError

    cdef object finish(self):
        """The Arrow array of the rows so far; the builder starts over empty."""
        raise NotImplementedError

    def __len__(self):
        return self.valid.length

    def to_arrow(self):
        return self.finish()


@cython.final
cdef class _PbFixed(_PbColumn):
    cdef _Growable values
    cdef int width

    cdef inline int put(self, const void *v) except -1:
        grow_put(self.values, v, self.width)
        return self.valid.append(True)

    cdef int append_null(self) except -1:
        cdef uint64_t zero = 0
        grow_put(self.values, &zero, self.width)
        return self.valid.append(False)

    cdef int truncate(self, Py_ssize_t n) except -1:
        self.values.size = n * self.width
        return self.valid.truncate(n)

    cdef object finish(self):
        pa = pyarrow()
        out = pa.Array.from_buffers(self.arrow_type, self.valid.length,
                                    [pa.py_buffer(self.valid.bytes) if self.valid.zeros else None,
                                     pa.py_buffer(self.values)], null_count=self.valid.zeros)
        self.values = _ArrowGrowable()
        self.valid = _Bits()
        return out


@cython.final
cdef class _PbBool(_PbColumn):
    cdef _Bits values

    cdef int append_null(self) except -1:
        self.values.append(False)
        return self.valid.append(False)

    cdef int truncate(self, Py_ssize_t n) except -1:
        self.values.truncate(n)
        return self.valid.truncate(n)

    cdef object finish(self):
        pa = pyarrow()
        out = pa.Array.from_buffers(self.arrow_type, self.valid.length,
                                    [pa.py_buffer(self.valid.bytes) if self.valid.zeros else None,
                                     pa.py_buffer(self.values.bytes)], null_count=self.valid.zeros)
        self.values = _Bits()
        self.valid = _Bits()
        return out


@cython.final
cdef class _PbBinary(_PbColumn):
    cdef _BinaryColumn col

    cdef inline int put(self, const uint8_t *p, Py_ssize_t n) except -1:
        if n > INT32_LIMIT:
            raise ColumnOverflowError("protobuf column over 2 GiB")
        self.valid.length += 1          # (validity lives in self.col; this counts rows)
        return self.col.append(p, <int32_t>n)

    cdef int append_null(self) except -1:
        self.valid.length += 1
        return self.col.append(NULL, -1)

    cdef int truncate(self, Py_ssize_t n) except -1:
        self.valid.length = n
        return self.col.truncate(n)

    cdef object finish(self):
        out = self.col.to_arrow(self.arrow_type)
        self.col = _BinaryColumn()
        self.valid.length = 0
        return out


@cython.final
cdef class _PbStruct(_PbColumn):
    cdef list children

    cdef int append_null(self) except -1:
        cdef _PbColumn c
        for c in self.children:
            c.append_null()
        return self.valid.append(False)

    cdef int truncate(self, Py_ssize_t n) except -1:
        cdef _PbColumn c
        for c in self.children:
            c.truncate(n)
        return self.valid.truncate(n)

    cdef object finish(self):
        pa = pyarrow()
        cdef _PbColumn c
        out = pa.Array.from_buffers(self.arrow_type, self.valid.length,
                                    [pa.py_buffer(self.valid.bytes) if self.valid.zeros else None],
                                    null_count=self.valid.zeros,
                                    children=[c.finish() for c in self.children])
        self.valid = _Bits()
        return out


@cython.final
cdef class _PbList(_PbColumn):
    """A list column, or a map column (a list of key/value structs)."""
    cdef _Growable offsets
    cdef _PbColumn child

    cdef inline int close_row(self, bint valid) except -1:
        cdef Py_ssize_t n = self.child.valid.length
        if n > INT32_LIMIT:
            raise ColumnOverflowError("protobuf list column over 2^31 elements")
        put_i32(self.offsets, <int32_t>n)
        return self.valid.append(valid)

    cdef int append_null(self) except -1:
        return self.close_row(False)

    cdef int truncate(self, Py_ssize_t n) except -1:
        self.offsets.size = (n + 1) * 4
        self.child.truncate((<int32_t *>self.offsets.data)[n])
        return self.valid.truncate(n)

    cdef object finish(self):
        pa = pyarrow()
        out = pa.Array.from_buffers(self.arrow_type, self.valid.length,
                                    [pa.py_buffer(self.valid.bytes) if self.valid.zeros else None,
                                     pa.py_buffer(self.offsets)],
                                    null_count=self.valid.zeros, children=[self.child.finish()])
        self.offsets = _ArrowGrowable()
        put_i32(self.offsets, 0)
        self.valid = _Bits()
        return out


def pb_column(int kind, arrow_type, list children=None):
    """A builder of one column of `kind` (PBC_*) and Arrow type; children: a struct's columns in order, or the
    one element column of a list, or the key/value struct of a map."""
    cdef _PbColumn col
    cdef int width
    if kind in (PBC_INT32, PBC_FLOAT, PBC_INT64, PBC_DOUBLE, PBC_TIMESTAMP, PBC_DURATION):
        col = _PbFixed.__new__(_PbFixed)
        (<_PbFixed>col).values = _ArrowGrowable()
        (<_PbFixed>col).width = 4 if kind in (PBC_INT32, PBC_FLOAT) else 8
    elif kind == PBC_BOOL:
        col = _PbBool.__new__(_PbBool)
        (<_PbBool>col).values = _Bits()
    elif kind == PBC_STRING or kind == PBC_BINARY:
        col = _PbBinary.__new__(_PbBinary)
        (<_PbBinary>col).col = _BinaryColumn()
    elif kind == PBC_STRUCT:
        col = _PbStruct.__new__(_PbStruct)
        (<_PbStruct>col).children = list(children or ())
    elif kind == PBC_LIST or kind == PBC_MAP:
        if not children or len(children) != 1:
            raise ValueError("a list or map column has one child column")
        col = _PbList.__new__(_PbList)
        (<_PbList>col).offsets = _ArrowGrowable()
        put_i32((<_PbList>col).offsets, 0)
        (<_PbList>col).child = children[0]
    else:
        raise ValueError(f"unknown protobuf column kind {kind}")
    col.kind = kind
    col.arrow_type = arrow_type
    return col


# ---------------------------------------------------------------- plans

cdef struct PbField:
    uint64_t number
    int type            # the writer's FieldDescriptorProto.Type
    int wire            # its wire type
    int slot            # the column it lands in, -1: skipped
    bint repeated
    bint packable       # a repeated scalar: packed (one LEN) and unpacked both accepted
    bint implicit       # proto3 implicit presence: the zero value reads as "not set" (null)
    bint closed_enum    # proto2 enum: an unknown number is an unknown field
    bint required       # proto2 required: a message without it does not parse (Java's parseFrom)
    bint seen
    int oneof           # oneof index in the writer message, -1 if none


cdef struct PbSlot:
    const uint8_t *first    # tag of the first occurrence (repeated fields are re-walked from here)
    const uint8_t *value    # value of the last occurrence (LEN: after the length; group: its body)
    Py_ssize_t size         # LEN / group: byte count
    int count
    int field               # index into fields


cdef class _PbMsgPlan:
    """How one writer message lands in one struct column (see kafkarec/protobuf.py)."""
    cdef PbField *fields
    cdef int n_fields
    cdef PbSlot *slots
    cdef int *slot_kind
    cdef int n_slots
    cdef _PbStruct target
    cdef list children          # target.children
    cdef list subplans          # per field: _PbMsgPlan of a message / map entry field, else None
    cdef list enum_names        # per field: {number: name bytes} of an enum field, else None
    cdef list enum_unknown      # per field: b"UNKNOWN_ENUM_VALUE_<Enum>_" (Java's name for an open enum's unknown)
    cdef list mismatch          # per field: why its writer type does not fit the column, else None
    cdef list slot_defaults     # per slot: the value of an unset field (explicit proto2 default; in map
                                # entries the zero value, or the plan of an empty message), else None
    cdef bint emit_defaults
    cdef int n_required
    cdef const uint8_t *msg_end

    def __dealloc__(self):
        free(self.fields)
        free(self.slots)
        free(self.slot_kind)

    def __init__(self, _PbColumn target, list fields, bint emit_defaults=False, list slot_defaults=None,
                 required=()):
        """fields: (number, type, slot, repeated, implicit, closed_enum, oneof, subplan, enum_names,
        enum_unknown, mismatch) per writer field; required: the numbers of proto2 required fields."""
        cdef int i
        cdef _PbColumn c
        if target.kind != PBC_STRUCT:
            raise ValueError("a message plan fills a struct column")
        self.target = <_PbStruct>target
        self.children = self.target.children
        self.n_slots = len(self.children)
        self.emit_defaults = emit_defaults
        self.slot_defaults = slot_defaults if slot_defaults is not None else [None] * self.n_slots
        fields = sorted(fields, key=lambda f: f[0])
        self.n_fields = len(fields)
        self.fields = <PbField *>malloc(max(1, self.n_fields) * sizeof(PbField))
        self.slots = <PbSlot *>malloc(max(1, self.n_slots) * sizeof(PbSlot))
        self.slot_kind = <int *>malloc(max(1, self.n_slots) * sizeof(int))
        if self.fields == NULL or self.slots == NULL or self.slot_kind == NULL:
            raise MemoryError()
        for i in range(self.n_slots):
            c = self.children[i]
            self.slot_kind[i] = c.kind
            self.slots[i].count = 0
        self.subplans, self.enum_names, self.enum_unknown, self.mismatch = [], [], [], []
        for i, (number, ftype, slot, repeated, implicit, closed_enum, oneof, subplan, names, unknown,
                why) in enumerate(fields):
            if not (0 < number < (1 << 29)) or not (-1 <= slot < self.n_slots):
                raise ValueError(f"bad field {number} -> slot {slot}")
            self.fields[i].number = number
            self.fields[i].type = ftype
            self.fields[i].wire = pb_wire_of(ftype)
            self.fields[i].slot = slot
            self.fields[i].repeated = repeated
            self.fields[i].packable = repeated and pb_wire_of(ftype) in (PB_WT_VARINT, PB_WT_I32, PB_WT_I64)
            self.fields[i].implicit = implicit
            self.fields[i].closed_enum = closed_enum
            self.fields[i].required = number in required
            self.fields[i].seen = False
            self.n_required += self.fields[i].required
            self.fields[i].oneof = oneof
            self.subplans.append(subplan)
            self.enum_names.append(names)
            self.enum_unknown.append(unknown)
            self.mismatch.append(why)


cdef class _PbNode:
    """A message of a writer's .proto file, for message indexes: its plan and its nested messages in order."""
    cdef readonly _PbMsgPlan plan
    cdef readonly list nested
    cdef readonly str name

    def __init__(self, str name, _PbMsgPlan plan, list nested):
        self.name = name
        self.plan = plan
        self.nested = nested


# ---------------------------------------------------------------- wire walking

cdef inline int pb_find(_PbMsgPlan plan, uint64_t number, int hint) noexcept:
    """Index of the writer field `number` (fields are sorted; `hint`, the one after the previous field, is
    tried first), or -1."""
    cdef int lo = 0, hi = plan.n_fields - 1, mid
    if hint < plan.n_fields and plan.fields[hint].number == number:
        return hint
    while lo <= hi:
        mid = (lo + hi) >> 1
        if plan.fields[mid].number == number:
            return mid
        if plan.fields[mid].number < number:
            lo = mid + 1
        else:
            hi = mid - 1
    return -1


cdef inline int pb_tag(const PbCtx *ctx, const uint8_t **pp, const uint8_t *end, uint64_t *number,
                       int *wire) except -1:
    cdef const uint8_t *at = pp[0]
    cdef uint64_t tag
    cdef int status = take_uvarint64(pp, end, &tag)
    if unlikely(status != VARINT_OK):
        pb_fail(ctx, at, f"field tag: {varint_problem(status, "the value")}")
    number[0] = tag >> 3
    wire[0] = <int>(tag & 7)
    if unlikely(number[0] == 0 or number[0] >= (1 << 29)):
        pb_fail(ctx, at, f"field number {number[0]} is out of range (1 to 2^29-1)")
    return 0


cdef int pb_skip(const PbCtx *ctx, int wire, uint64_t number, const uint8_t **pp, const uint8_t *end,
                 int depth, const uint8_t **body_end) except -1:
    """Move past one field value of `wire`; a group's body ends where its end tag starts (body_end)."""
    cdef const uint8_t *p = pp[0]
    cdef const uint8_t *tag_at
    cdef uint64_t u, inner
    cdef int status, inner_wire
    if wire == PB_WT_VARINT:
        status = take_uvarint64(&p, end, &u)
        if unlikely(status != VARINT_OK):
            pb_fail(ctx, p, f"field {number}: {varint_problem(status, "the value")}")
    elif wire == PB_WT_I64:
        if unlikely(end - p < 8):
            pb_fail(ctx, p, f"field {number}: 8-byte value needs 8 bytes but only {end - p} remain")
        p += 8
    elif wire == PB_WT_I32:
        if unlikely(end - p < 4):
            pb_fail(ctx, p, f"field {number}: 4-byte value needs 4 bytes but only {end - p} remain")
        p += 4
    elif wire == PB_WT_LEN:
        status = take_uvarint64(&p, end, &u)
        if unlikely(status != VARINT_OK):
            pb_fail(ctx, p, f"field {number} length: {varint_problem(status, "the value")}")
        if unlikely(u > <uint64_t>(end - p)):
            pb_fail(ctx, p, f"field {number} declares {u} bytes but only {end - p} remain")
        p += u
    elif wire == PB_WT_SGROUP:
        if unlikely(depth >= PB_MAX_DEPTH):
            pb_fail(ctx, p, f"groups nested deeper than {PB_MAX_DEPTH}")
        while True:
            if unlikely(p >= end):
                pb_fail(ctx, p, f"group {number} has no end tag")
            tag_at = p
            pb_tag(ctx, &p, end, &inner, &inner_wire)
            if inner_wire == PB_WT_EGROUP:
                if unlikely(inner != number):
                    pb_fail(ctx, tag_at, f"group {number} ends with the end tag of group {inner}")
                if body_end != NULL:
                    body_end[0] = tag_at
                break
            pb_skip(ctx, inner_wire, inner, &p, end, depth + 1, NULL)
    elif wire == PB_WT_EGROUP:
        pb_fail(ctx, p, f"end-group tag of field {number} outside any group")
    else:
        pb_fail(ctx, p, f"field {number} has wire type {wire}, which protobuf does not define")
    pp[0] = p
    return 0


cdef inline int pb_read_number(const PbCtx *ctx, int wire, const uint8_t **pp, const uint8_t *end,
                               uint64_t *out) except -1:
    """A scalar of `wire` (varint, fixed32, fixed64) as its raw 64 bits."""
    cdef const uint8_t *p = pp[0]
    cdef int status
    if wire == PB_WT_VARINT:
        status = take_uvarint64(pp, end, out)
        if unlikely(status != VARINT_OK):
            pb_fail(ctx, p, varint_problem(status, "the value"))
    elif wire == PB_WT_I32:
        if unlikely(end - p < 4):
            pb_fail(ctx, p, f"4-byte value needs 4 bytes but only {end - p} remain")
        out[0] = kr_load_le32(p)
        pp[0] = p + 4
    else:
        if unlikely(end - p < 8):
            pb_fail(ctx, p, f"8-byte value needs 8 bytes but only {end - p} remain")
        out[0] = pb_load_le64(p)
        pp[0] = p + 8
    return 0


# ---------------------------------------------------------------- values into columns

cdef int pb_put_number(_PbMsgPlan plan, int fidx, _PbColumn col, int kind, uint64_t u, bint implicit,
                       const PbCtx *ctx, const uint8_t *at) except -1:
    """A varint / fixed value of writer field fidx into a scalar column; implicit: zero means not set."""
    cdef int t = plan.fields[fidx].type
    cdef int32_t i32
    cdef int64_t i64
    cdef uint32_t bits32
    cdef float f32
    cdef double f64
    cdef bint b
    cdef object names, name
    if kind == PBC_INT32:
        i32 = zigzag32(<uint32_t>u) if t == PBT_SINT32 else <int32_t><uint32_t>u
        if implicit and i32 == 0:
            return col.append_null()
        return (<_PbFixed>col).put(&i32)
    if kind == PBC_INT64:
        if t == PBT_SINT64:
            i64 = zigzag64(u)
        elif t == PBT_SINT32:
            i64 = zigzag32(<uint32_t>u)
        elif t == PBT_INT32 or t == PBT_SFIXED32:
            i64 = <int32_t><uint32_t>u
        elif t == PBT_UINT32 or t == PBT_FIXED32:
            i64 = <uint32_t>u
        else:
            i64 = <int64_t>u
        if implicit and i64 == 0:
            return col.append_null()
        return (<_PbFixed>col).put(&i64)
    if kind == PBC_DOUBLE:
        if t == PBT_FLOAT:
            bits32 = <uint32_t>u
            memcpy(&f32, &bits32, 4)
            f64 = f32
        else:
            memcpy(&f64, &u, 8)
        if implicit and ((t == PBT_FLOAT and <uint32_t>u == 0) or (t != PBT_FLOAT and u == 0)):
            return col.append_null()
        return (<_PbFixed>col).put(&f64)
    if kind == PBC_FLOAT:
        bits32 = <uint32_t>u
        if implicit and bits32 == 0:
            return col.append_null()
        return (<_PbFixed>col).put(&bits32)
    if kind == PBC_BOOL:
        b = u != 0
        if implicit and not b:
            return col.append_null()
        (<_PbBool>col).values.append(b)
        return col.valid.append(True)
    if kind == PBC_STRING and t == PBT_ENUM:
        i32 = <int32_t>u
        if implicit and i32 == 0:
            return col.append_null()
        names = plan.enum_names[fidx]
        name = names.get(i32)
        if name is None:
            name = plan.enum_unknown[fidx] + str(i32).encode("ascii")
        return (<_PbBinary>col).put(<const uint8_t *>PyBytes_AS_STRING(name), len(<bytes>name))
    return pb_fail(ctx, at, f"field {plan.fields[fidx].number}: no conversion to column kind {kind}")


cdef int pb_put_bytes(_PbMsgPlan plan, int fidx, _PbColumn col, int kind, const uint8_t *p, Py_ssize_t n,
                      bint implicit, const PbCtx *ctx) except -1:
    if implicit and n == 0:
        return col.append_null()
    if kind == PBC_STRING:
        if unlikely(not is_utf8(p, <int32_t>n)):
            pb_fail(ctx, p, f"field {plan.fields[fidx].number}: string is not valid UTF-8")
    return (<_PbBinary>col).put(p, n)


cdef int pb_put_time(_PbColumn col, int kind, const uint8_t *p, const uint8_t *end, const PbCtx *ctx,
                     int depth) except -1:
    """google.protobuf.Timestamp / Duration (seconds = 1, nanos = 2) as microseconds, as Spark reads them:
    seconds * 10^6 + nanos / 1000 (truncated)."""
    cdef int64_t seconds = 0, micros
    cdef int32_t nanos = 0
    cdef uint64_t number, u
    cdef int wire
    cdef const uint8_t *start = p
    while p < end:
        pb_tag(ctx, &p, end, &number, &wire)
        if (number == 1 or number == 2) and wire == PB_WT_VARINT:
            pb_read_number(ctx, wire, &p, end, &u)
            if number == 1:
                seconds = <int64_t>u
            else:
                nanos = <int32_t><uint32_t>u
        else:
            pb_skip(ctx, wire, number, &p, end, depth, NULL)
    if seconds > 9223372036853 or seconds < -9223372036853:
        pb_fail(ctx, start, f"{'timestamp' if kind == PBC_TIMESTAMP else 'duration'} of {seconds} s "
                            "does not fit 64-bit microseconds")
    # Java's int division truncates toward zero; in 64 bits, so that -nanos cannot overflow
    cdef int64_t wide_nanos = nanos
    micros = seconds * 1000000 + (wide_nanos // 1000 if wide_nanos >= 0 else -((-wide_nanos) // 1000))
    return (<_PbFixed>col).put(&micros)


cdef int pb_put_default(_PbMsgPlan plan, int slot, _PbColumn col, int kind, const PbCtx *ctx,
                        int depth) except -1:
    """An unset field: an empty list / map; the writer field's explicit proto2 default (Spark's from_protobuf
    reads a field with hasDefaultValue as its default); in a map entry, which always has a key and a value, the
    type's zero value; else null."""
    cdef object d = plan.slot_defaults[slot]
    cdef int32_t i32
    cdef int64_t i64
    cdef float f32
    cdef double f64
    if kind == PBC_LIST or kind == PBC_MAP:
        return (<_PbList>col).close_row(True)
    if d is None and not plan.emit_defaults:
        return col.append_null()
    if kind == PBC_STRING or kind == PBC_BINARY:
        if d is None:
            d = b""
        return (<_PbBinary>col).put(<const uint8_t *>PyBytes_AS_STRING(d), len(<bytes>d))
    if kind == PBC_BOOL:
        (<_PbBool>col).values.append(bool(d))
        return col.valid.append(True)
    if kind == PBC_INT32:
        i32 = d if d is not None else 0
        return (<_PbFixed>col).put(&i32)
    if kind == PBC_INT64 or kind == PBC_TIMESTAMP or kind == PBC_DURATION:
        i64 = d if isinstance(d, int) else 0
        return (<_PbFixed>col).put(&i64)
    if kind == PBC_FLOAT:
        f32 = d if d is not None else 0.0
        return (<_PbFixed>col).put(&f32)
    if kind == PBC_DOUBLE:
        f64 = d if d is not None else 0.0
        return (<_PbFixed>col).put(&f64)
    if kind == PBC_STRUCT and isinstance(d, _PbMsgPlan):
        return pb_decode_message(<_PbMsgPlan>d, ctx.base, ctx.base, ctx, depth + 1)
    return col.append_null()


cdef bytes pb_gather(_PbMsgPlan plan, int slot, const PbCtx *ctx, int depth):
    """The values of every occurrence of a singular message field, concatenated: parsing them as one is how
    protobuf merges repeated occurrences of an embedded message."""
    cdef PbSlot *s = &plan.slots[slot]
    cdef PbField *f = &plan.fields[s.field]
    cdef const uint8_t *p = s.first
    cdef const uint8_t *end = plan.msg_end
    cdef const uint8_t *v
    cdef const uint8_t *body_end
    cdef uint64_t number, n
    cdef int wire
    out = bytearray()
    while p < end:
        pb_tag(ctx, &p, end, &number, &wire)
        v = p
        if number == f.number and wire == f.wire:
            if wire == PB_WT_LEN:
                take_uvarint64(&p, end, &n)
                out += view_of(p, <Py_ssize_t>n)
                p += n
                continue
            pb_skip(ctx, wire, number, &p, end, depth, &body_end)
            out += view_of(v, body_end - v)
        else:
            pb_skip(ctx, wire, number, &p, end, depth, NULL)
    return bytes(out)


cdef int pb_put_message(_PbMsgPlan plan, int fidx, _PbColumn col, int kind, const uint8_t *p,
                        const uint8_t *end, const PbCtx *ctx, int depth) except -1:
    if kind == PBC_TIMESTAMP or kind == PBC_DURATION:
        return pb_put_time(col, kind, p, end, ctx, depth + 1)
    return pb_decode_message(<_PbMsgPlan>plan.subplans[fidx], p, end, ctx, depth + 1)


cdef int pb_emit_repeated(_PbMsgPlan plan, int slot, _PbList col, const PbCtx *ctx, int depth) except -1:
    """Every occurrence of a repeated field (packed or not) / map, in order, as one list / map row."""
    cdef PbSlot *s = &plan.slots[slot]
    cdef int fidx = s.field
    cdef PbField *f = &plan.fields[fidx]
    cdef _PbColumn elem = col.child
    cdef int ekind = elem.kind
    cdef const uint8_t *p = s.first
    cdef const uint8_t *end = plan.msg_end
    cdef const uint8_t *v
    cdef const uint8_t *vend
    cdef const uint8_t *body_end
    cdef uint64_t number, u, n
    cdef int wire
    cdef object names = plan.enum_names[fidx]
    while p < end:
        pb_tag(ctx, &p, end, &number, &wire)
        if number != f.number:
            pb_skip(ctx, wire, number, &p, end, depth, NULL)
            continue
        if wire == PB_WT_LEN:
            take_uvarint64(&p, end, &n)       # checked by the scan
            v = p
            p += n
            if f.type == PBT_MESSAGE:
                pb_put_message(plan, fidx, elem, ekind, v, p, ctx, depth)
            elif f.type == PBT_STRING or f.type == PBT_BYTES:
                pb_put_bytes(plan, fidx, elem, ekind, v, <Py_ssize_t>n, False, ctx)
            elif f.packable:
                while v < p:
                    vend = v
                    pb_read_number(ctx, f.wire, &v, p, &u)
                    if f.closed_enum and <int32_t>u not in names:
                        continue
                    pb_put_number(plan, fidx, elem, ekind, u, False, ctx, vend)
        elif wire == f.wire and wire == PB_WT_SGROUP:
            v = p
            pb_skip(ctx, wire, number, &p, end, depth, &body_end)
            # through pb_put_message: a group shaped like Timestamp/Duration has a time column, no plan
            pb_put_message(plan, fidx, elem, ekind, v, body_end, ctx, depth)
        elif wire == f.wire:
            v = p
            pb_read_number(ctx, wire, &p, end, &u)
            if f.closed_enum and <int32_t>u not in names:
                continue
            pb_put_number(plan, fidx, elem, ekind, u, False, ctx, v)
        else:
            pb_skip(ctx, wire, number, &p, end, depth, NULL)
    return col.close_row(True)


cdef inline bint pb_superseded(_PbMsgPlan plan, int slot) noexcept:
    """A oneof member set before another member of its oneof: only the last one set counts."""
    cdef int oneof = plan.fields[plan.slots[slot].field].oneof
    cdef int j
    cdef PbSlot *o
    for j in range(plan.n_slots):
        o = &plan.slots[j]
        if j != slot and o.count and plan.fields[o.field].oneof == oneof and o.value > plan.slots[slot].value:
            return True
    return False


cdef int pb_decode_message(_PbMsgPlan plan, const uint8_t *p, const uint8_t *end, const PbCtx *ctx,
                           int depth) except -1:
    """Scan one message's bytes, then append one (valid) row to the plan's struct column."""
    cdef const uint8_t *tag_at
    cdef const uint8_t *v
    cdef const uint8_t *body_end
    cdef uint64_t number, u, n
    cdef int wire, fidx, hint = 0, i, kind, status
    cdef PbField *f
    cdef PbSlot *s
    cdef _PbColumn col
    cdef bytes merged
    if unlikely(depth > PB_MAX_DEPTH):
        pb_fail(ctx, p, f"messages nested deeper than {PB_MAX_DEPTH}")
    cdef const uint8_t *start = p
    for i in range(plan.n_slots):
        plan.slots[i].count = 0
    if plan.n_required:
        for i in range(plan.n_fields):
            plan.fields[i].seen = False
    while p < end:
        tag_at = p
        pb_tag(ctx, &p, end, &number, &wire)
        fidx = pb_find(plan, number, hint)
        if fidx >= 0:
            plan.fields[fidx].seen = True
        if fidx < 0 or plan.fields[fidx].slot < 0:
            pb_skip(ctx, wire, number, &p, end, depth, NULL)
            continue
        hint = fidx + 1
        f = &plan.fields[fidx]
        v = p
        if wire == PB_WT_LEN:
            status = take_uvarint64(&p, end, &n)
            if unlikely(status != VARINT_OK):
                pb_fail(ctx, v, f"field {number} length: {varint_problem(status, "the value")}")
            if unlikely(n > <uint64_t>(end - p)):
                pb_fail(ctx, v, f"field {number} declares {n} bytes but only {end - p} remain")
            v = p
            p += n
            if f.wire != PB_WT_LEN and not f.packable:
                continue        # a wire type its type does not have: an unknown field, as protobuf reads it
        elif wire != f.wire:
            pb_skip(ctx, wire, number, &p, end, depth, NULL)
            continue
        elif wire == PB_WT_SGROUP:
            pb_skip(ctx, wire, number, &p, end, depth, &body_end)
            n = body_end - v
        else:
            pb_read_number(ctx, wire, &p, end, &u)
            if f.closed_enum and not f.repeated and <int32_t>u not in plan.enum_names[fidx]:
                continue        # proto2: an unknown enum number is kept as an unknown field
        s = &plan.slots[f.slot]
        if s.count == 0:
            s.first = tag_at
        s.count += 1
        s.value = v
        s.size = <Py_ssize_t>n
        s.field = fidx
    plan.msg_end = end
    if plan.n_required:
        for i in range(plan.n_fields):
            if plan.fields[i].required and not plan.fields[i].seen:
                pb_fail(ctx, start, f"required field {plan.fields[i].number} is missing (a proto2 message "
                                    "without it does not parse)")
    for i in range(plan.n_slots):
        col = <_PbColumn>plan.children[i]
        kind = plan.slot_kind[i]
        s = &plan.slots[i]
        if s.count == 0:
            pb_put_default(plan, i, col, kind, ctx, depth)
            continue
        fidx = s.field
        f = &plan.fields[fidx]
        if unlikely(plan.mismatch[fidx] is not None):
            pb_fail(ctx, s.value, plan.mismatch[fidx])
        if f.oneof >= 0 and pb_superseded(plan, i):
            pb_put_default(plan, i, col, kind, ctx, depth)
            continue
        if f.repeated:
            pb_emit_repeated(plan, i, <_PbList>col, ctx, depth)
        elif f.type == PBT_MESSAGE or f.type == PBT_GROUP:
            if s.count == 1:
                pb_put_message(plan, fidx, col, kind, s.value, s.value + s.size, ctx, depth)
            else:
                merged = pb_gather(plan, i, ctx, depth)
                pb_put_message(plan, fidx, col, kind, <const uint8_t *>PyBytes_AS_STRING(merged),
                               <const uint8_t *>PyBytes_AS_STRING(merged) + len(merged), ctx, depth)
        elif f.wire == PB_WT_LEN:
            pb_put_bytes(plan, fidx, col, kind, s.value, s.size, f.implicit and not plan.emit_defaults, ctx)
        else:
            v = s.value
            pb_read_number(ctx, f.wire, &v, plan.msg_end, &u)
            pb_put_number(plan, fidx, col, kind, u, f.implicit and not plan.emit_defaults, ctx, s.value)
    return plan.target.valid.append(True)


# ---------------------------------------------------------------- a column of records

cdef inline const uint8_t *pb_buffer_address(object buf):
    return NULL if buf is None else <const uint8_t *><uintptr_t>buf.address


cdef inline bint pb_bit(const uint8_t *bits, Py_ssize_t i) noexcept:
    return bits == NULL or (bits[i >> 3] >> (i & 7)) & 1


cdef _PbNode pb_message_by_indexes(list top, const PbCtx *ctx, const uint8_t **pp, const uint8_t *end):
    """Confluent's message indexes: a zig-zag varint count, then zig-zag indexes (the file's top-level message,
    then nested ones); the single byte 0 means [0].  Apicurio's `02 00` is the same path written in full."""
    cdef const uint8_t *at = pp[0]
    cdef uint64_t u
    cdef int64_t count, index
    cdef int64_t k
    cdef int status = take_uvarint64(pp, end, &u)
    cdef list level = top
    cdef _PbNode node = None
    if unlikely(status != VARINT_OK):
        pb_fail(ctx, at, f"message index count: {varint_problem(status, "the value")}")
    count = zigzag64(u)
    if count == 0:
        count = 1
        index = 0
        if not level:
            pb_fail(ctx, at, "the writer schema has no message")
        return <_PbNode>level[0]
    if unlikely(count < 0 or count > PB_MAX_INDEXES):
        pb_fail(ctx, at, f"message index count {count} is out of range (1 to {PB_MAX_INDEXES})")
    for k in range(count):
        at = pp[0]
        status = take_uvarint64(pp, end, &u)
        if unlikely(status != VARINT_OK):
            pb_fail(ctx, at, f"message index: {varint_problem(status, "the value")}")
        index = zigzag64(u)
        if unlikely(index < 0 or index >= len(level)):
            pb_fail(ctx, at, f"message index {index} names no message of the writer schema"
                             f"{'' if node is None else ' nested in ' + node.name}")
        node = <_PbNode>level[index]
        level = node.nested
    return node


def pb_decode_column(_PbColumn root, dict writers, values, writer_ids, body_offsets):
    """Decode Protobuf payloads into one struct column (see kafkarec.protobuf.ProtobufDecoder.decode).
    writers: writer id -> list of top-level _PbNode.  Returns (struct array, string array of errors)."""
    pa = pyarrow()
    cdef Py_ssize_t n = len(values), row, i
    cdef bint large = pa.types.is_large_binary(values.type) or pa.types.is_large_string(values.type)
    if len(writer_ids) != n or len(body_offsets) != n:
        raise ValueError("values, writer_ids and body_offsets must have the same length")
    if root.kind != PBC_STRUCT:
        raise ValueError("the root column must be a struct")
    vbufs = values.buffers()
    writer_ids = writer_ids.cast(pa.int64())
    body_offsets = body_offsets.cast(pa.int32())
    wbufs = writer_ids.buffers()
    bbufs = body_offsets.buffers()
    cdef Py_ssize_t voff = values.offset, woff = writer_ids.offset, boff = body_offsets.offset
    cdef const uint8_t *vvalid = pb_buffer_address(vbufs[0])
    cdef const uint8_t *voffsets = pb_buffer_address(vbufs[1])
    cdef const uint8_t *vdata = pb_buffer_address(vbufs[2]) if len(vbufs) > 2 else NULL
    cdef const uint8_t *wvalid = pb_buffer_address(wbufs[0])
    cdef const int64_t *wdata = <const int64_t *>pb_buffer_address(wbufs[1])
    cdef const uint8_t *bvalid = pb_buffer_address(bbufs[0])
    cdef const int32_t *bdata = <const int32_t *>pb_buffer_address(bbufs[1])
    cdef _BinaryColumn errors = _BinaryColumn()
    cdef int64_t start, stop, wid, last_wid = 0
    cdef int32_t body
    cdef list top = None
    cdef _PbNode node
    cdef PbCtx ctx
    cdef const uint8_t *p
    cdef const uint8_t *end
    cdef bytes why
    for row in range(n):
        i = row + voff
        if not pb_bit(vvalid, i) or not pb_bit(wvalid, row + woff):
            root.append_null()      # a tombstone, or a value the registry left undecoded: no error here
            errors.append(NULL, -1)
            continue
        if large:
            start = (<const int64_t *>voffsets)[i]
            stop = (<const int64_t *>voffsets)[i + 1]
        else:
            start = (<const int32_t *>voffsets)[i]
            stop = (<const int32_t *>voffsets)[i + 1]
        wid = wdata[row + woff]
        body = bdata[row + boff] if pb_bit(bvalid, row + boff) else -1
        ctx.base = vdata + start
        try:
            if body < 0 or body > stop - start:
                raise ProtobufDecodeError(f"the body starts past the end of a {stop - start}-byte value", body)
            if top is None or wid != last_wid:
                top = writers.get(wid)
                last_wid = wid
                if top is None:
                    raise ProtobufDecodeError(f"unknown writer schema id {wid}", body)
            p = vdata + start + body
            end = vdata + stop
            node = pb_message_by_indexes(top, &ctx, &p, end)
            if node.plan is None:
                raise ProtobufDecodeError(f"writer message {node.name} cannot be read as the column's message", body)
            pb_decode_message(node.plan, p, end, &ctx, 0)
            errors.append(NULL, -1)
        except (DecodeError, ColumnOverflowError) as exc:
            root.truncate(row)
            root.append_null()
            why = value_problem(getattr(exc, "position", 0), getattr(exc, "reason", str(exc)))
            errors.append(<const uint8_t *>PyBytes_AS_STRING(why), len(why))
    return root.finish(), errors.to_arrow(pa.string())


# Column kinds by name, for kafkarec/protobuf.py.
PB_COLUMN_KINDS = {"int32": PBC_INT32, "int64": PBC_INT64, "float": PBC_FLOAT, "double": PBC_DOUBLE,
                   "bool": PBC_BOOL, "string": PBC_STRING, "binary": PBC_BINARY, "struct": PBC_STRUCT,
                   "list": PBC_LIST, "map": PBC_MAP, "timestamp": PBC_TIMESTAMP, "duration": PBC_DURATION}
