# _protobuf.pxi: Protobuf wire format straight into Arrow columns, driven by plans.
#
# kafkarec/protobuf/ compiles, on the driver, a .proto schema into plain plans: the column's message as a tree
# of typed-rows _Column builders (Spark from_protobuf's types), and for each writer message a _PbMsgPlan that says, per
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
    PBC_ANY_JSON = 13       # a google.protobuf.Any as JSON text (convert.any.fields.to.json)


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


# ---------------------------------------------------------------- columns

# A Protobuf column kind's Arrow layout (the typed-rows builder's ColumnKind); the PBC_* kind stays the
# column's role, which the steps below dispatch on.
cdef int pb_layout(int kind) except -1:
    if kind == PBC_INT32:
        return CK_I32
    if kind == PBC_INT64 or kind == PBC_TIMESTAMP or kind == PBC_DURATION:
        return CK_I64
    if kind == PBC_FLOAT:
        return CK_F32
    if kind == PBC_DOUBLE:
        return CK_F64
    if kind == PBC_BOOL:
        return CK_BOOL
    if kind == PBC_STRING or kind == PBC_BINARY or kind == PBC_ANY_JSON:
        return CK_BIN
    if kind == PBC_STRUCT:
        return CK_STRUCT
    if kind == PBC_LIST or kind == PBC_MAP:
        return CK_LIST
    raise ValueError(f"unknown protobuf column kind {kind}")


def pb_column(int kind, arrow_type, list children=None):
    """A builder of one column of `kind` (PBC_*) and Arrow type; children: a struct's columns in order, or the
    one element column of a list, or the key/value struct of a map."""
    if (kind == PBC_LIST or kind == PBC_MAP) and (not children or len(children) != 1):
        raise ValueError("a list or map column has one child column")
    return new_column(pb_layout(kind), arrow_type, True, children, kind)


# ---------------------------------------------------------------- plans

cdef struct PbTime:
    # where a message shaped like Timestamp / Duration keeps seconds and nanos (see pb_put_time)
    uint64_t seconds_number
    uint64_t nanos_number
    int seconds_type
    int nanos_type
    int seconds_wire
    int nanos_wire
    int64_t seconds_default
    int32_t nanos_default


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
    const PbTime *time  # a time-shaped message field: its layout (its _PbTimeLayout stays in subplans)


cdef struct PbSlot:
    const uint8_t *first    # tag of the first occurrence (repeated fields are re-walked from here)
    const uint8_t *value    # value of the last occurrence (LEN: after the length; group: its body)
    Py_ssize_t size         # LEN / group: byte count
    int count
    int field               # index into fields


cdef class _PbMsgPlan:
    """How one writer message lands in one struct column (see kafkarec/protobuf/plans.py)."""
    cdef PbField *fields
    cdef int n_fields
    cdef PbSlot *slots
    cdef int *slot_kind
    cdef int n_slots
    cdef _Column target
    cdef list children          # target.children
    cdef list subplans          # per field: _PbMsgPlan of a message / map entry field, _PbTimeLayout of a
                                # time-shaped message (copied into its PbField), the printer of an Any read as JSON
                                # (kafkarec/protobuf/json_print.py), else None
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

    def __init__(self, _Column target, list fields, bint emit_defaults=False, list slot_defaults=None,
                 required=()):
        """fields: (number, type, slot, repeated, implicit, closed_enum, oneof, subplan, enum_names,
        enum_unknown, mismatch) per writer field; required: the numbers of proto2 required fields."""
        cdef int i
        cdef _Column c
        if target.role != PBC_STRUCT:
            raise ValueError("a message plan fills a struct column")
        self.target = target
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
            self.slot_kind[i] = c.role
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
            self.fields[i].time = &(<_PbTimeLayout>subplan).time if isinstance(subplan, _PbTimeLayout) else NULL
            self.subplans.append(subplan)
            self.enum_names.append(names)
            self.enum_unknown.append(unknown)
            self.mismatch.append(why)


cdef class _PbTimeLayout:
    """Where a message shaped like Timestamp / Duration keeps seconds and nanos: each field's number, type and
    proto2 default; a plan copies it into the field it describes."""
    cdef PbTime time

    def __init__(self, uint64_t seconds_number, int seconds_type, int64_t seconds_default,
                 uint64_t nanos_number, int nanos_type, int32_t nanos_default):
        self.time.seconds_number, self.time.seconds_type = seconds_number, seconds_type
        self.time.nanos_number, self.time.nanos_type = nanos_number, nanos_type
        self.time.seconds_default, self.time.nanos_default = seconds_default, nanos_default
        self.time.seconds_wire = pb_wire_of(seconds_type)
        self.time.nanos_wire = pb_wire_of(nanos_type)


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


cdef inline always_inline_int pb_tag(const PbCtx *ctx, const uint8_t **pp, const uint8_t *end, uint64_t *number,
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
        if unlikely(span_take(&p, end, 8) == NULL):
            pb_fail(ctx, p, f"field {number}: 8-byte value needs 8 bytes but only {end - p} remain")
    elif wire == PB_WT_I32:
        if unlikely(span_take(&p, end, 4) == NULL):
            pb_fail(ctx, p, f"field {number}: 4-byte value needs 4 bytes but only {end - p} remain")
    elif wire == PB_WT_LEN:
        status = take_uvarint64(&p, end, &u)
        if unlikely(status != VARINT_OK):
            pb_fail(ctx, p, f"field {number} length: {varint_problem(status, "the value")}")
        if unlikely(u > <uint64_t>(end - p) or span_take(&p, end, <int64_t>u) == NULL):
            pb_fail(ctx, p, f"field {number} declares {u} bytes but only {end - p} remain")
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


cdef inline always_inline_int pb_read_number(const PbCtx *ctx, int wire, const uint8_t **pp, const uint8_t *end,
                               uint64_t *out) except -1:
    """A scalar of `wire` (varint, fixed32, fixed64) as its raw 64 bits."""
    cdef const uint8_t *p = pp[0]
    cdef int status
    if wire == PB_WT_VARINT:
        status = take_uvarint64(pp, end, out)
        if unlikely(status != VARINT_OK):
            pb_fail(ctx, p, varint_problem(status, "the value"))
    elif wire == PB_WT_I32:
        if unlikely(span_take(pp, end, 4) == NULL):
            pb_fail(ctx, p, f"4-byte value needs 4 bytes but only {end - p} remain")
        out[0] = kr_load_le32(p)
    else:
        if unlikely(span_take(pp, end, 8) == NULL):
            pb_fail(ctx, p, f"8-byte value needs 8 bytes but only {end - p} remain")
        out[0] = kr_load_le64(p)
    return 0


# ---------------------------------------------------------------- values into columns

cdef int pb_put_number(_PbMsgPlan plan, int fidx, _Column col, int kind, uint64_t u, bint implicit,
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
            return col_null(col)
        return col_put_fixed(col, &i32)
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
            return col_null(col)
        return col_put_fixed(col, &i64)
    if kind == PBC_DOUBLE:
        if t == PBT_FLOAT:
            bits32 = <uint32_t>u
            memcpy(&f32, &bits32, 4)
            f64 = f32
        else:
            memcpy(&f64, &u, 8)
        if implicit and ((t == PBT_FLOAT and <uint32_t>u == 0) or (t != PBT_FLOAT and u == 0)):
            return col_null(col)
        return col_put_fixed(col, &f64)
    if kind == PBC_FLOAT:
        bits32 = <uint32_t>u
        if implicit and bits32 == 0:
            return col_null(col)
        return col_put_fixed(col, &bits32)
    if kind == PBC_BOOL:
        b = u != 0
        if implicit and not b:
            return col_null(col)
        return col_put_bool(col, b)
    if kind == PBC_STRING and t == PBT_ENUM:
        i32 = <int32_t>u
        if implicit and i32 == 0:
            return col_null(col)
        names = plan.enum_names[fidx]
        name = names.get(i32)
        if name is None:
            name = plan.enum_unknown[fidx] + str(i32).encode("ascii")
        return col_put_bytes(col, <bytes>name)
    return pb_fail(ctx, at, f"field {plan.fields[fidx].number}: no conversion to column kind {kind}")


cdef int pb_put_bytes(_PbMsgPlan plan, int fidx, _Column col, int kind, const uint8_t *p, Py_ssize_t n,
                      bint implicit, const PbCtx *ctx) except -1:
    if implicit and n == 0:
        return col_null(col)
    if kind == PBC_STRING:
        if unlikely(not is_utf8(p, <int32_t>n)):
            pb_fail(ctx, p, f"field {plan.fields[fidx].number}: string is not valid UTF-8")
    return col_put_bin(col, p, n, p + n)


cdef int pb_put_time(_Column col, int kind, const PbTime *layout, const uint8_t *p, const uint8_t *end,
                     const PbCtx *ctx, int depth) except -1:
    """A message shaped like google.protobuf.Timestamp / Duration as microseconds, as Spark reads it: its first
    declared field (seconds, a 64-bit integer type) * 10^6 + its second (nanos, a 32-bit one) / 1000 (truncated),
    each read by its own number and type; a value of another wire type is an unknown field, as protobuf reads it."""
    cdef int64_t seconds = layout.seconds_default, micros
    cdef int32_t nanos = layout.nanos_default
    cdef uint64_t number, u
    cdef int wire
    cdef const uint8_t *start = p
    while p < end:
        pb_tag(ctx, &p, end, &number, &wire)
        if number == layout.seconds_number and wire == layout.seconds_wire:
            pb_read_number(ctx, wire, &p, end, &u)
            seconds = zigzag64(u) if layout.seconds_type == PBT_SINT64 else <int64_t>u
        elif number == layout.nanos_number and wire == layout.nanos_wire:
            pb_read_number(ctx, wire, &p, end, &u)
            nanos = zigzag32(<uint32_t>u) if layout.nanos_type == PBT_SINT32 else <int32_t><uint32_t>u
        else:
            pb_skip(ctx, wire, number, &p, end, depth, NULL)
    if seconds > 9223372036853 or seconds < -9223372036853:
        pb_fail(ctx, start, f"{'timestamp' if kind == PBC_TIMESTAMP else 'duration'} of {seconds} s "
                            "does not fit 64-bit microseconds")
    # Java's int division truncates toward zero; in 64 bits, so that -nanos cannot overflow
    cdef int64_t wide_nanos = nanos
    micros = seconds * 1000000 + (wide_nanos // 1000 if wide_nanos >= 0 else -((-wide_nanos) // 1000))
    return col_put_fixed(col, &micros)


cdef int pb_put_default(_PbMsgPlan plan, int slot, _Column col, int kind, const PbCtx *ctx,
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
        return col_close_list(col)
    if d is None and not plan.emit_defaults:
        return col_null(col)
    if kind == PBC_STRING or kind == PBC_BINARY or kind == PBC_ANY_JSON:
        if d is None:
            d = b""
        return col_put_bytes(col, <bytes>d)
    if kind == PBC_BOOL:
        return col_put_bool(col, bool(d))
    if kind == PBC_INT32:
        i32 = d if d is not None else 0
        return col_put_fixed(col, &i32)
    if kind == PBC_INT64 or kind == PBC_TIMESTAMP or kind == PBC_DURATION:
        i64 = d if isinstance(d, int) else 0
        return col_put_fixed(col, &i64)
    if kind == PBC_FLOAT:
        f32 = d if d is not None else 0.0
        return col_put_fixed(col, &f32)
    if kind == PBC_DOUBLE:
        f64 = d if d is not None else 0.0
        return col_put_fixed(col, &f64)
    if kind == PBC_STRUCT and isinstance(d, _PbMsgPlan):
        return pb_decode_message(<_PbMsgPlan>d, ctx.base, ctx.base, ctx, depth + 1)
    return col_null(col)


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


cdef int pb_put_any_json(object printer, _Column col, const uint8_t *p, const uint8_t *end, const PbCtx *ctx,
                         const uint8_t *at) except -1:
    """A google.protobuf.Any's bytes as the JSON text its printer gives (not the hot path: only with
    convert.any.fields.to.json).  What it cannot print fails the record, at the Any's byte `at` plus the
    printer's position."""
    cdef bytes text
    cdef Py_ssize_t inside = 0
    try:
        text = printer(view_of(p, end - p))
    except ProtobufDecodeError as exc:
        if at == p:
            inside = exc.position
        pb_fail(ctx, at + inside, exc.reason)
    return col_put_bytes(col, text)


cdef int pb_put_message(_PbMsgPlan plan, int fidx, _Column col, int kind, const uint8_t *p,
                        const uint8_t *end, const PbCtx *ctx, int depth) except -1:
    if kind == PBC_TIMESTAMP or kind == PBC_DURATION:
        return pb_put_time(col, kind, plan.fields[fidx].time, p, end, ctx, depth + 1)
    if kind == PBC_ANY_JSON:
        return pb_put_any_json(plan.subplans[fidx], col, p, end, ctx, p)
    return pb_decode_message(<_PbMsgPlan>plan.subplans[fidx], p, end, ctx, depth + 1)


cdef inline always_inline_int pb_emit_repeated(_PbMsgPlan plan, int slot, _Column col, const PbCtx *ctx, int depth) except -1:
    """Every occurrence of a repeated field (packed or not) / map, in order, as one list / map row."""
    cdef PbSlot *s = &plan.slots[slot]
    cdef int fidx = s.field
    cdef PbField *f = &plan.fields[fidx]
    cdef _Column elem = <_Column>col.children[0]
    cdef int ekind = elem.role
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
    return col_close_list(col)


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


cdef int pb_required_seen(_PbMsgPlan plan, int fidx, const uint8_t *p, const uint8_t *end,
                          const PbCtx *ctx) except -1:
    """A required field the column does not hold counts as set when its value is one protobuf keeps (a closed
    enum's unknown number is an unknown field, so the field stays unset and the message does not parse)."""
    cdef uint64_t u
    cdef PbField *f = &plan.fields[fidx]
    if f.closed_enum and f.wire == PB_WT_VARINT:
        pb_read_number(ctx, f.wire, &p, end, &u)
        if <int32_t>u not in plan.enum_names[fidx]:
            return 0
    f.seen = True
    return 0


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
    cdef _Column col
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
        if fidx < 0 or plan.fields[fidx].slot < 0:
            if fidx >= 0 and plan.fields[fidx].required and wire == plan.fields[fidx].wire:
                pb_required_seen(plan, fidx, p, end, ctx)
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
            v = span_take(&p, end, <int64_t>n)
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
        # a required field is set by a value protobuf keeps: one its slot took (an own wire type, a known
        # closed-enum number), or, outside the column, one pb_required_seen saw
        for i in range(plan.n_fields):
            f = &plan.fields[i]
            if f.required and not f.seen and not (f.slot >= 0 and plan.slots[f.slot].count):
                pb_fail(ctx, start, f"required field {plan.fields[i].number} is missing (a proto2 message "
                                    "without it does not parse)")
    for i in range(plan.n_slots):
        col = <_Column>plan.children[i]
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
            pb_emit_repeated(plan, i, col, ctx, depth)
        elif f.type == PBT_MESSAGE or f.type == PBT_GROUP:
            if s.count == 1:
                pb_put_message(plan, fidx, col, kind, s.value, s.value + s.size, ctx, depth)
            else:
                merged = pb_gather(plan, i, ctx, depth)
                if kind == PBC_ANY_JSON:        # (errors at its last occurrence: the merged bytes are not the value's)
                    pb_put_any_json(plan.subplans[fidx], col, <const uint8_t *>PyBytes_AS_STRING(merged),
                                    <const uint8_t *>PyBytes_AS_STRING(merged) + len(merged), ctx, s.value)
                else:
                    pb_put_message(plan, fidx, col, kind, <const uint8_t *>PyBytes_AS_STRING(merged),
                                   <const uint8_t *>PyBytes_AS_STRING(merged) + len(merged), ctx, depth)
        elif f.wire == PB_WT_LEN:
            pb_put_bytes(plan, fidx, col, kind, s.value, s.size, f.implicit and not plan.emit_defaults, ctx)
        else:
            v = s.value
            pb_read_number(ctx, f.wire, &v, plan.msg_end, &u)
            pb_put_number(plan, fidx, col, kind, u, f.implicit and not plan.emit_defaults, ctx, s.value)
    return col_ok(plan.target)


# ---------------------------------------------------------------- a column of records

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


@cython.final
cdef class _PbRows(_TypedRows):
    """Protobuf's per-row step: the message indexes pick the writer message, its plan fills the root."""

    cdef int row(self, object writer, const uint8_t *value, Py_ssize_t length, Py_ssize_t body) except -1:
        cdef PbCtx ctx
        ctx.base = value
        cdef const uint8_t *p = value + body
        cdef const uint8_t *end = value + length
        cdef _PbNode node = pb_message_by_indexes(<list>writer, &ctx, &p, end)
        if node.plan is None:
            raise ProtobufDecodeError(f"writer message {node.name} cannot be read as the column's message", body)
        return pb_decode_message(node.plan, p, end, &ctx, 0)


def pb_decode_column(_Column root, dict writers, values, writer_ids, body_offsets):
    """Decode Protobuf payloads into one struct column (see kafkarec.protobuf.ProtobufDecoder.decode).
    writers: writer id -> list of top-level _PbNode.  Returns (struct array, string array of errors)."""
    if root.role != PBC_STRUCT:
        raise ValueError("the root column must be a struct")
    cdef _PbRows step = _PbRows()
    step.writers = writers
    return decode_typed_column(step, root, values, writer_ids, body_offsets)


# Column kinds by name, for kafkarec/protobuf/arrow_types.py.
PB_COLUMN_KINDS = {"int32": PBC_INT32, "int64": PBC_INT64, "float": PBC_FLOAT, "double": PBC_DOUBLE,
                   "bool": PBC_BOOL, "string": PBC_STRING, "binary": PBC_BINARY, "struct": PBC_STRUCT,
                   "list": PBC_LIST, "map": PBC_MAP, "timestamp": PBC_TIMESTAMP, "duration": PBC_DURATION,
                   "anyjson": PBC_ANY_JSON}
