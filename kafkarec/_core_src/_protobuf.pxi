# _protobuf.pxi: Protobuf wire format straight into Arrow columns, driven by plans.
#
# kafkarec/protobuf/ compiles, on the driver, a .proto schema into plain plans: the column's message as a tree
# of typed-rows _Column templates (Spark from_protobuf's types), numbered by a _PbLayout, and for each writer
# message a _PbMsgPlan that says, per writer field number, how to read the value and which column (by number) it
# lands in (fields matched by name).  Executors run the plans; they need neither protoc nor the protobuf package.
#
# A message is decoded in two passes over its bytes: a scan that checks every field's framing against the bytes
# left and remembers, per column, the last occurrence (last one wins) and the first one (where repeated fields
# start), then an emit in column order.  A record that fails is truncated out of every builder and becomes a null
# row with its reason.  Nesting is bounded (PB_MAX_DEPTH), nothing is allocated by a count read from the input.
#
# The rows run without the GIL (as Avro's, _avro.pxi): a plan is C data (PbPlan: its fields, enum names, slot
# defaults and subplans as C arrays and pointers; the _PbMsgPlan keeps the Python objects they point into), a
# message's scratch (where each column's occurrences are) lives in the decode's state, not in the plan, and each
# decode writes fresh columns through raw room (ColRoom), so threads can share one decoder.  An error row, an Any
# printed as JSON (a Python printer), and a column's growth take the GIL back.

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
    """A template of one column of `kind` (PBC_*) and Arrow type; children: a struct's columns in order, or the
    one element column of a list, or the key/value struct of a map."""
    if (kind == PBC_LIST or kind == PBC_MAP) and (not children or len(children) != 1):
        raise ValueError("a list or map column has one child column")
    return new_column(pb_layout(kind), arrow_type, True, children, kind)


@cython.final
cdef class _PbLayout:
    """A decoder's column tree, numbered in pre-order (the root is 0): plans name their columns by these numbers,
    and each decode builds fresh columns of the templates' shapes (nothing a decode writes is shared)."""
    cdef list templates         # the template _Column of each number
    cdef dict numbers           # id(template) -> its number
    cdef list kids              # per number: its children's numbers
    cdef int *roles             # per number: its PBC_* kind
    cdef Py_ssize_t nkids

    def __dealloc__(self):
        free(self.roles)

    def __init__(self, _Column root not None):
        cdef _Column col
        cdef Py_ssize_t i
        self.templates, self.numbers, self.kids = [], {}, []
        stack = [root]
        while stack:
            col = stack.pop()
            if id(col) in self.numbers:
                raise ValueError("a column sits twice in the message's column tree")
            self.numbers[id(col)] = len(self.templates)
            self.templates.append(col)
            stack.extend(reversed(col.children))
        for col in self.templates:
            self.kids.append([self.numbers[id(c)] for c in col.children])
            self.nkids += len(col.children)
        self.roles = <int *>malloc(len(self.templates) * sizeof(int))
        if self.roles == NULL:
            raise MemoryError()
        for i, col in enumerate(self.templates):
            self.roles[i] = col.role

    def number(self, _Column col not None):
        """The number of template column `col`."""
        n = self.numbers.get(id(col))
        if n is None or self.templates[n] is not col:
            raise ValueError("the column is not in the decoder's column tree")
        return n

    cdef list fresh(self):
        """New empty columns of the templates' shapes, by number."""
        cdef Py_ssize_t i, n = len(self.templates)
        cdef list cols = [None] * n
        cdef _Column t
        for i in range(n - 1, -1, -1):         # children are numbered after their parent
            t = self.templates[i]
            cols[i] = new_column(t.kind, t.arrow_type, t.nullable, [cols[k] for k in self.kids[i]], t.role)
        return cols


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


cdef struct PbEnumName:
    # one value of an enum field (a field's names are sorted by number)
    int32_t number
    const uint8_t *name         # in a bytes object the plan keeps
    Py_ssize_t size


cdef struct PbPlan


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
    bint mismatch       # its writer type does not fit the column (the reason: the plan's mismatch, with the GIL)
    int oneof           # oneof index in the writer message, -1 if none
    const PbTime *time  # a time-shaped message field: its layout (its _PbTimeLayout stays in subplans)
    const PbPlan *sub   # a message / map entry field: its plan (kept in subplans)
    const PbEnumName *names     # an enum field's values by number, else NULL
    int n_names
    const uint8_t *unknown      # b"UNKNOWN_ENUM_VALUE_<Enum>_" (Java's name for an open enum's unknown)
    Py_ssize_t unknown_size


cdef struct PbDefault:
    # the value of an unset field (see pb_put_default), as its column takes it
    bint set            # an explicit value (else null, or with emit_defaults the zero value)
    int64_t i           # integer and bool columns
    double f            # float and double columns
    const uint8_t *p    # string, binary and Any-as-JSON columns (bytes the plan keeps)
    Py_ssize_t size
    const PbPlan *plan  # a struct column: the plan of an empty message, else NULL


cdef struct PbPlan:
    # a _PbMsgPlan as the rows that run without the GIL read it
    const PbField *fields
    int n_fields
    int n_slots
    const int *slot_kind        # per slot: its column's PBC_* kind
    const int *slot_col         # per slot: its column's number (_PbLayout)
    const PbDefault *defaults   # per slot
    int col                     # the struct column's number
    bint emit_defaults
    int n_required
    int need_slots              # scratch slots a message of this plan takes, its nested messages' included
    int need_seen               # required-field flags likewise
    PyObject *owner             # the _PbMsgPlan: mismatch reasons and Any printers, read with the GIL


cdef class _PbMsgPlan:
    """How one writer message lands in one struct column (see kafkarec/protobuf/plans.py)."""
    cdef PbPlan c
    cdef PbField *fields
    cdef int *slot_kind
    cdef int *slot_col
    cdef PbDefault *defaults
    cdef PbEnumName *names      # every enum field's names, one array
    cdef list subplans          # per field: _PbMsgPlan of a message / map entry field, _PbTimeLayout of a
                                # time-shaped message (copied into its PbField), the printer of an Any read as JSON
                                # (kafkarec/protobuf/json_print.py), else None
    cdef list enum_names        # per field: {number: name bytes} of an enum field, else None
    cdef list enum_unknown      # per field: b"UNKNOWN_ENUM_VALUE_<Enum>_" (Java's name for an open enum's unknown)
    cdef list mismatch          # per field: why its writer type does not fit the column, else None
    cdef list slot_defaults     # per slot: the value of an unset field (explicit proto2 default; in map
                                # entries the zero value, or the plan of an empty message), else None

    def __dealloc__(self):
        free(self.fields)
        free(self.slot_kind)
        free(self.slot_col)
        free(self.defaults)
        free(self.names)

    def __init__(self, _PbLayout layout not None, _Column target not None, list fields, bint emit_defaults=False,
                 list slot_defaults=None, required=()):
        """target: a column of `layout`; fields: (number, type, slot, repeated, implicit, closed_enum, oneof,
        subplan, enum_names, enum_unknown, mismatch) per writer field; required: the numbers of proto2 required
        fields."""
        cdef int i, j, k, n_names = 0, n_slots
        cdef _Column c
        cdef _PbMsgPlan sub
        cdef PbField *f
        cdef PbDefault *d
        if target.role != PBC_STRUCT:
            raise ValueError("a message plan fills a struct column")
        children = target.children
        n_slots = len(children)
        self.slot_defaults = list(slot_defaults) if slot_defaults is not None else [None] * n_slots
        if len(self.slot_defaults) != n_slots:
            raise ValueError("one default per column of the struct")
        fields = sorted(fields, key=lambda f: f[0])
        for field in fields:
            if field[8] is not None:
                n_names += len(field[8])
        self.fields = <PbField *>calloc(max(1, len(fields)), sizeof(PbField))
        self.slot_kind = <int *>calloc(max(1, n_slots), sizeof(int))
        self.slot_col = <int *>calloc(max(1, n_slots), sizeof(int))
        self.defaults = <PbDefault *>calloc(max(1, n_slots), sizeof(PbDefault))
        self.names = <PbEnumName *>calloc(max(1, n_names), sizeof(PbEnumName))
        if not (self.fields and self.slot_kind and self.slot_col and self.defaults and self.names):
            raise MemoryError()
        self.c.fields = self.fields
        self.c.n_fields = len(fields)
        self.c.n_slots = n_slots
        self.c.slot_kind = self.slot_kind
        self.c.slot_col = self.slot_col
        self.c.defaults = self.defaults
        self.c.col = layout.number(target)
        self.c.emit_defaults = emit_defaults
        self.c.owner = <PyObject *>self
        for i in range(n_slots):
            c = children[i]
            self.slot_kind[i] = c.role
            self.slot_col[i] = layout.number(c)
        self.subplans, self.enum_names, self.enum_unknown, self.mismatch = [], [], [], []
        n_names = 0
        for i, (number, ftype, slot, repeated, implicit, closed_enum, oneof, subplan, names, unknown,
                why) in enumerate(fields):
            if not (0 < number < (1 << 29)) or not (-1 <= slot < n_slots):
                raise ValueError(f"bad field {number} -> slot {slot}")
            f = &self.fields[i]
            f.number = number
            f.type = ftype
            f.wire = pb_wire_of(ftype)
            f.slot = slot
            f.repeated = repeated
            f.packable = repeated and pb_wire_of(ftype) in (PB_WT_VARINT, PB_WT_I32, PB_WT_I64)
            f.implicit = implicit
            f.closed_enum = closed_enum
            f.required = number in required
            self.c.n_required += f.required
            f.mismatch = why is not None
            f.oneof = oneof
            f.time = &(<_PbTimeLayout>subplan).time if isinstance(subplan, _PbTimeLayout) else NULL
            f.sub = &(<_PbMsgPlan>subplan).c if isinstance(subplan, _PbMsgPlan) else NULL
            if names is not None:
                names = {k: bytes(v) for k, v in names.items()}
                f.names = &self.names[n_names]
                f.n_names = len(names)
                for number_k, name in sorted(names.items()):
                    self.names[n_names].number = number_k
                    self.names[n_names].name = <const uint8_t *>PyBytes_AS_STRING(name)
                    self.names[n_names].size = len(name)
                    n_names += 1
            if unknown is not None:
                unknown = bytes(unknown)
                f.unknown = <const uint8_t *>PyBytes_AS_STRING(unknown)
                f.unknown_size = len(unknown)
            self.subplans.append(subplan)
            self.enum_names.append(names)
            self.enum_unknown.append(unknown)
            self.mismatch.append(why)
        for i in range(n_slots):
            pb_default_of(&self.defaults[i], self.slot_kind[i], self.slot_defaults[i])
        # the scratch a message of this plan takes: its own, then the deepest of the messages inside it
        self.c.need_slots, self.c.need_seen = 0, 0
        for sub in [s for s in self.subplans + self.slot_defaults if isinstance(s, _PbMsgPlan)]:
            self.c.need_slots = max(self.c.need_slots, sub.c.need_slots)
            self.c.need_seen = max(self.c.need_seen, sub.c.need_seen)
        self.c.need_slots += n_slots
        self.c.need_seen += self.c.n_fields


cdef int pb_default_of(PbDefault *d, int kind, object value) except -1:
    """A slot default (None, a number, bytes, or the plan of an empty message) as its column kind takes it
    (pb_put_default); the converted values are those the column held when the default was read per row."""
    cdef int32_t i32
    d.set = value is not None
    d.p = <const uint8_t *>_TYPED_EMPTY
    if value is None:
        return 0
    if kind == PBC_STRING or kind == PBC_BINARY or kind == PBC_ANY_JSON:
        if not isinstance(value, bytes):
            raise TypeError(f"the default of a {kind} column is bytes, not {type(value).__name__}")
        d.p = <const uint8_t *>PyBytes_AS_STRING(value)      # (the plan's slot_defaults keep it)
        d.size = len(value)
    elif kind == PBC_BOOL:
        d.i = bool(value)
    elif kind == PBC_INT32:
        i32 = value
        d.i = i32
    elif kind == PBC_INT64 or kind == PBC_TIMESTAMP or kind == PBC_DURATION:
        d.i = value if isinstance(value, int) else 0
    elif kind == PBC_FLOAT or kind == PBC_DOUBLE:
        d.f = value
    elif kind == PBC_STRUCT and isinstance(value, _PbMsgPlan):
        d.plan = &(<_PbMsgPlan>value).c
    return 0


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


cdef struct PbNode:
    # a message of a writer's file for message indexes, as the rows read it
    const PbPlan *plan          # NULL: it cannot be read as the column's message
    const PbNode **nested
    Py_ssize_t n_nested
    PyObject *obj               # its _PbNode (the name, for errors)


cdef class _PbNode:
    """A message of a writer's .proto file, for message indexes: its plan and its nested messages in order."""
    cdef readonly _PbMsgPlan plan
    cdef readonly list nested
    cdef readonly str name
    cdef PbNode c
    cdef const PbNode **kids

    def __dealloc__(self):
        free(self.kids)

    def __init__(self, str name, _PbMsgPlan plan, list nested):
        cdef Py_ssize_t i
        self.name = name
        self.plan = plan
        self.nested = list(nested)
        self.kids = <const PbNode **>malloc(max(1, len(self.nested)) * sizeof(PbNode *))
        if self.kids == NULL:
            raise MemoryError()
        for i in range(len(self.nested)):
            self.kids[i] = &(<_PbNode?>self.nested[i]).c
        self.c.plan = &plan.c if plan is not None else NULL
        self.c.nested = self.kids
        self.c.n_nested = len(self.nested)
        self.c.obj = <PyObject *>self


@cython.final
cdef class _PbWriter:
    """A writer schema as a decode reads it: its top-level messages (a root whose nested ones they are), and the
    scratch a message of it takes at most (the decode sizes its scratch by it before the writer's rows)."""
    cdef readonly _PbNode root
    cdef int need_slots
    cdef int need_seen

    def __init__(self, list top):
        self.root = _PbNode("", None, top)
        cdef list stack = list(top)
        cdef _PbNode node
        while stack:
            node = stack.pop()
            if node.plan is not None:
                self.need_slots = max(self.need_slots, node.plan.c.need_slots)
                self.need_seen = max(self.need_seen, node.plan.c.need_seen)
            stack.extend(node.nested)


# ---------------------------------------------------------------- the state of one decode

cdef struct PbGather:
    # merged occurrences of a singular message field (pb_gather): n_chunks PbChunk after this header, then the
    # merged bytes
    PbGather *next
    Py_ssize_t size
    Py_ssize_t n_chunks


cdef struct PbChunk:
    # one occurrence in merged bytes: where its bytes start there, and where they came from (the value, or
    # the merged bytes of an outer message), so that an error in merged bytes names the value's byte
    Py_ssize_t offset
    const uint8_t *source


cdef struct PbSlot:
    const uint8_t *first    # tag of the first occurrence (repeated fields are re-walked from here)
    const uint8_t *value    # value of the last occurrence (LEN: after the length; group: its body)
    Py_ssize_t size         # LEN / group: byte count
    int count
    int field               # index into fields


cdef struct PbCtx:
    const uint8_t *base     # first byte of the record's value: error positions count from here
    ColRoom *rooms          # the decode's columns, by number
    const int *roles        # each column's PBC_* kind, by number
    PbSlot *slots           # scratch: a message takes n_slots from `top` on, the messages inside it the next ones
    Py_ssize_t top
    Py_ssize_t slot_cap
    uint8_t *seen           # required fields seen, n_fields a message from `seen_top` on
    Py_ssize_t seen_top
    Py_ssize_t seen_cap
    PbGather *gathered      # merged bytes in use, innermost first (a failed row leaves them to failed())


cdef Py_ssize_t pb_position(const PbCtx *ctx, const uint8_t *at) noexcept:
    """Where byte `at` is in the record's value: a byte of merged occurrences (pb_gather) is the byte it was
    copied from, through every merge it went through (ctx.gathered: innermost first)."""
    cdef const PbGather *g = ctx.gathered
    cdef const PbChunk *chunks
    cdef const uint8_t *data
    cdef Py_ssize_t rel, k
    while g != NULL:
        chunks = <const PbChunk *>(g + 1)
        data = <const uint8_t *>(chunks + g.n_chunks)
        if g.n_chunks and data <= at <= data + g.size:
            rel = at - data
            k = g.n_chunks - 1
            while k > 0 and chunks[k].offset > rel:
                k -= 1
            at = chunks[k].source + (rel - chunks[k].offset)
        g = g.next
    return at - ctx.base


cdef int pb_fail(const PbCtx *ctx, const uint8_t *at, str reason) except -1:
    raise ProtobufDecodeError(reason, pb_position(ctx, at))


cdef int pb_fail_varint(const PbCtx *ctx, const uint8_t *at, const char *what, uint64_t number,
                        int status) except -1 nogil:
    """A varint that does not read: "<what>: <why>" (what: "field %d length" and the like, %d the field's
    number; empty: the why alone)."""
    with gil:
        text = what.decode("ascii").replace("%d", str(number))
        reason = varint_problem(status, "the value")
        pb_fail(ctx, at, f"{text}: {reason}" if text else reason)
    return -1


cdef int pb_fail_short(const PbCtx *ctx, const uint8_t *at, uint64_t number, bint named, int size,
                       Py_ssize_t left) except -1 nogil:
    """A fixed-size value past the end: "[field N: ]S-byte value needs S bytes but only L remain"."""
    with gil:
        pb_fail(ctx, at, (f"field {number}: " if named else "") +
                f"{size}-byte value needs {size} bytes but only {left} remain")
    return -1


# ---------------------------------------------------------------- wire walking

cdef inline int pb_find(const PbPlan *plan, uint64_t number, int hint) noexcept nogil:
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


cdef inline int pb_enum_find(const PbField *f, int32_t number) noexcept nogil:
    """Index of enum value `number` in f.names, or -1."""
    cdef int lo = 0, hi = f.n_names - 1, mid
    while lo <= hi:
        mid = (lo + hi) >> 1
        if f.names[mid].number == number:
            return mid
        if f.names[mid].number < number:
            lo = mid + 1
        else:
            hi = mid - 1
    return -1


cdef int pb_tag_failed(const PbCtx *ctx, const uint8_t *at, int status, uint64_t number) except -1 nogil:
    with gil:
        if status != VARINT_OK:
            pb_fail(ctx, at, f"field tag: {varint_problem(status, 'the value')}")
        pb_fail(ctx, at, f"field number {number} is out of range (1 to 2^29-1)")
    return -1


cdef inline always_inline_int pb_tag(const PbCtx *ctx, const uint8_t **pp, const uint8_t *end, uint64_t *number,
                                     int *wire) except -1 nogil:
    cdef const uint8_t *at = pp[0]
    cdef uint64_t tag
    cdef int status = take_uvarint64(pp, end, &tag)
    if unlikely(status != VARINT_OK):
        pb_tag_failed(ctx, at, status, 0)
    number[0] = tag >> 3
    wire[0] = <int>(tag & 7)
    if unlikely(number[0] == 0 or number[0] >= (1 << 29)):
        pb_tag_failed(ctx, at, VARINT_OK, number[0])
    return 0


cdef int pb_skip(const PbCtx *ctx, int wire, uint64_t number, const uint8_t **pp, const uint8_t *end,
                 int depth, const uint8_t **body_end) except -1 nogil:
    """Move past one field value of `wire`; a group's body ends where its end tag starts (body_end)."""
    cdef const uint8_t *p = pp[0]
    cdef const uint8_t *tag_at
    cdef uint64_t u, inner
    cdef int status, inner_wire
    if wire == PB_WT_VARINT:
        status = take_uvarint64(&p, end, &u)
        if unlikely(status != VARINT_OK):
            pb_fail_varint(ctx, p, "field %d", number, status)
    elif wire == PB_WT_I64:
        if unlikely(span_take(&p, end, 8) == NULL):
            pb_fail_short(ctx, p, number, True, 8, end - p)
    elif wire == PB_WT_I32:
        if unlikely(span_take(&p, end, 4) == NULL):
            pb_fail_short(ctx, p, number, True, 4, end - p)
    elif wire == PB_WT_LEN:
        status = take_uvarint64(&p, end, &u)
        if unlikely(status != VARINT_OK):
            pb_fail_varint(ctx, p, "field %d length", number, status)
        if unlikely(u > <uint64_t>(end - p) or span_take(&p, end, <int64_t>u) == NULL):
            with gil:
                pb_fail(ctx, p, f"field {number} declares {u} bytes but only {end - p} remain")
    elif wire == PB_WT_SGROUP:
        if unlikely(depth >= PB_MAX_DEPTH):
            with gil:
                pb_fail(ctx, p, f"groups nested deeper than {PB_MAX_DEPTH}")
        while True:
            if unlikely(p >= end):
                with gil:
                    pb_fail(ctx, p, f"group {number} has no end tag")
            tag_at = p
            pb_tag(ctx, &p, end, &inner, &inner_wire)
            if inner_wire == PB_WT_EGROUP:
                if unlikely(inner != number):
                    with gil:
                        pb_fail(ctx, tag_at, f"group {number} ends with the end tag of group {inner}")
                if body_end != NULL:
                    body_end[0] = tag_at
                break
            pb_skip(ctx, inner_wire, inner, &p, end, depth + 1, NULL)
    elif wire == PB_WT_EGROUP:
        with gil:
            pb_fail(ctx, p, f"end-group tag of field {number} outside any group")
    else:
        with gil:
            pb_fail(ctx, p, f"field {number} has wire type {wire}, which protobuf does not define")
    pp[0] = p
    return 0


cdef inline always_inline_int pb_read_number(const PbCtx *ctx, int wire, const uint8_t **pp, const uint8_t *end,
                                             uint64_t *out) except -1 nogil:
    """A scalar of `wire` (varint, fixed32, fixed64) as its raw 64 bits."""
    cdef const uint8_t *p = pp[0]
    cdef int status
    if wire == PB_WT_VARINT:
        status = take_uvarint64(pp, end, out)
        if unlikely(status != VARINT_OK):
            pb_fail_varint(ctx, p, "", 0, status)
    elif wire == PB_WT_I32:
        if unlikely(span_take(pp, end, 4) == NULL):
            pb_fail_short(ctx, p, 0, False, 4, end - p)
        out[0] = kr_load_le32(p)
    else:
        if unlikely(span_take(pp, end, 8) == NULL):
            pb_fail_short(ctx, p, 0, False, 8, end - p)
        out[0] = kr_load_le64(p)
    return 0


# ---------------------------------------------------------------- values into columns

cdef int pb_put_unknown_enum(ColRoom *col, const PbField *f, int32_t number) except -1 nogil:
    """An open enum's number without a name: Java's UNKNOWN_ENUM_VALUE_<Enum>_<number>."""
    cdef char digits[16]
    cdef int nd = 0, k
    cdef int64_t v = number
    cdef bint negative = v < 0
    cdef Py_ssize_t n
    if negative:
        v = -v
    while True:
        digits[15 - nd] = <char>(48 + v % 10)
        nd += 1
        v //= 10
        if v == 0:
            break
    if negative:
        digits[15 - nd] = 45        # '-'
        nd += 1
    n = f.unknown_size + nd
    if unlikely(n > INT32_LIMIT - col.vsize):
        with gil:
            raise ColumnOverflowError("binary column over 2 GiB")
    if unlikely(col.vsize + n > col.vcap):
        room_grow(col, ROOM_VALUES, n)
    if f.unknown_size:
        memcpy(col.v + col.vsize, f.unknown, f.unknown_size)
    memcpy(col.v + col.vsize + f.unknown_size, &digits[16 - nd], nd)
    col.vsize += n
    room_put_offset(col, <int32_t>col.vsize)
    return room_ok(col)


cdef int pb_no_conversion(const PbCtx *ctx, const uint8_t *at, uint64_t number, int kind) except -1 nogil:
    with gil:
        pb_fail(ctx, at, f"field {number}: no conversion to column kind {kind}")
    return -1


cdef int pb_put_number(const PbCtx *ctx, const PbField *f, ColRoom *col, int kind, uint64_t u, bint implicit,
                       const uint8_t *at) except -1 nogil:
    """A varint / fixed value of writer field f into a scalar column; implicit: zero means not set."""
    cdef int t = f.type
    cdef int32_t i32
    cdef int64_t i64
    cdef uint32_t bits32
    cdef float f32
    cdef double f64
    cdef bint b
    cdef int k
    if kind == PBC_INT32:
        i32 = zigzag32(<uint32_t>u) if t == PBT_SINT32 else <int32_t><uint32_t>u
        if implicit and i32 == 0:
            return room_null(col)
        room_put(col, &i32, 4)
        return room_ok(col)
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
            return room_null(col)
        room_put(col, &i64, 8)
        return room_ok(col)
    if kind == PBC_DOUBLE:
        if t == PBT_FLOAT:
            bits32 = <uint32_t>u
            memcpy(&f32, &bits32, 4)
            f64 = f32
        else:
            memcpy(&f64, &u, 8)
        if implicit and ((t == PBT_FLOAT and <uint32_t>u == 0) or (t != PBT_FLOAT and u == 0)):
            return room_null(col)
        room_put(col, &f64, 8)
        return room_ok(col)
    if kind == PBC_FLOAT:
        bits32 = <uint32_t>u
        if implicit and bits32 == 0:
            return room_null(col)
        room_put(col, &bits32, 4)
        return room_ok(col)
    if kind == PBC_BOOL:
        b = u != 0
        if implicit and not b:
            return room_null(col)
        return room_put_bool(col, b)
    if kind == PBC_STRING and t == PBT_ENUM:
        i32 = <int32_t>u
        if implicit and i32 == 0:
            return room_null(col)
        k = pb_enum_find(f, i32)
        if k < 0:
            return pb_put_unknown_enum(col, f, i32)
        return room_put_bin(col, f.names[k].name, f.names[k].size, f.names[k].name + f.names[k].size)
    return pb_no_conversion(ctx, at, f.number, kind)


cdef int pb_put_bytes(const PbCtx *ctx, const PbField *f, ColRoom *col, int kind, const uint8_t *p, Py_ssize_t n,
                      bint implicit, const uint8_t *src_end) except -1 nogil:
    """A string / bytes value; src_end: how far past it the message's bytes may be read (the copy's blocks)."""
    if implicit and n == 0:
        return room_null(col)
    if kind == PBC_STRING:
        if unlikely(not is_utf8(p, <int32_t>n)):
            with gil:
                pb_fail(ctx, p, f"field {f.number}: string is not valid UTF-8")
    return room_put_bin(col, p, n, src_end)


cdef int pb_put_time(const PbCtx *ctx, ColRoom *col, int kind, const PbTime *layout, const uint8_t *p,
                     const uint8_t *end, int depth) except -1 nogil:
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
    if seconds > 9223372036853LL or seconds < -9223372036853LL:
        with gil:
            pb_fail(ctx, start, f"{'timestamp' if kind == PBC_TIMESTAMP else 'duration'} of {seconds} s "
                                "does not fit 64-bit microseconds")
    # Java's int division truncates toward zero; in 64 bits, so that -nanos cannot overflow
    cdef int64_t wide_nanos = nanos
    micros = seconds * 1000000 + (wide_nanos // 1000 if wide_nanos >= 0 else -((-wide_nanos) // 1000))
    room_put(col, &micros, 8)
    return room_ok(col)


cdef int pb_put_default(PbCtx *ctx, const PbPlan *plan, int slot, ColRoom *col, int kind,
                        int depth) except -1 nogil:
    """An unset field: an empty list / map; the writer field's explicit proto2 default (Spark's from_protobuf
    reads a field with hasDefaultValue as its default); in a map entry, which always has a key and a value, the
    type's zero value; else null."""
    cdef const PbDefault *d = &plan.defaults[slot]
    cdef int32_t i32
    cdef int64_t i64
    cdef float f32
    cdef double f64
    if kind == PBC_LIST or kind == PBC_MAP:
        return room_close_list(col)
    if not d.set and not plan.emit_defaults:
        return room_null(col)
    if kind == PBC_STRING or kind == PBC_BINARY or kind == PBC_ANY_JSON:
        return room_put_bin(col, d.p, d.size, d.p + d.size)
    if kind == PBC_BOOL:
        return room_put_bool(col, d.i != 0)
    if kind == PBC_INT32:
        i32 = <int32_t>d.i
        room_put(col, &i32, 4)
        return room_ok(col)
    if kind == PBC_INT64 or kind == PBC_TIMESTAMP or kind == PBC_DURATION:
        i64 = d.i
        room_put(col, &i64, 8)
        return room_ok(col)
    if kind == PBC_FLOAT:
        f32 = <float>d.f
        room_put(col, &f32, 4)
        return room_ok(col)
    if kind == PBC_DOUBLE:
        f64 = d.f
        room_put(col, &f64, 8)
        return room_ok(col)
    if kind == PBC_STRUCT and d.plan != NULL:
        return pb_decode_message(ctx, d.plan, ctx.base, ctx.base, depth + 1)
    return room_null(col)


cdef const uint8_t *pb_gather(PbCtx *ctx, const PbField *f, const PbSlot *s, const uint8_t *end, int depth,
                              Py_ssize_t *size) except NULL nogil:
    """The values of every occurrence of a singular message field, concatenated (parsing them as one is how
    protobuf merges repeated occurrences of an embedded message), in a buffer of the decode's (ctx.gathered:
    pb_gathered_done frees it after its message, failed() after a failed row), with where each occurrence came
    from (pb_position).  Two walks over the message (the scan checked its framing): the sizes, then the bytes."""
    cdef const uint8_t *p
    cdef const uint8_t *v
    cdef const uint8_t *body_end
    cdef uint64_t number, n
    cdef int wire, walk
    cdef Py_ssize_t total = 0, chunks = 0
    cdef PbGather *g = NULL
    cdef PbChunk *chunk = NULL
    cdef uint8_t *out = NULL
    for walk in range(2):
        if walk == 1:
            g = <PbGather *>malloc(sizeof(PbGather) + chunks * sizeof(PbChunk) + total)
            if g == NULL:
                with gil:
                    raise MemoryError()
            g.next = ctx.gathered
            g.size = total
            g.n_chunks = chunks
            ctx.gathered = g
            chunk = <PbChunk *>(g + 1)
            out = <uint8_t *>(chunk + chunks)
            total = 0
            chunks = 0
        p = s.first
        while p < end:
            pb_tag(ctx, &p, end, &number, &wire)
            v = p
            if number == f.number and wire == f.wire:
                if wire == PB_WT_LEN:
                    take_uvarint64(&p, end, &n)
                    v = p
                    p += n
                    if walk == 0:
                        pb_frames_alone(ctx, v, p, depth + 1)
                else:
                    pb_skip(ctx, wire, number, &p, end, depth, &body_end)
                    n = body_end - v
                if walk == 1:
                    chunk[chunks].offset = total
                    chunk[chunks].source = v
                    memcpy(out + total, v, n)
                total += n
                chunks += 1
            else:
                pb_skip(ctx, wire, number, &p, end, depth, NULL)
    size[0] = total
    return out


cdef int pb_frames_alone(PbCtx *ctx, const uint8_t *p, const uint8_t *end, int depth) except -1 nogil:
    """One occurrence's fields framed within it: protobuf parses each occurrence on its own and merges the
    results, so a field may not run on into the next occurrence (read glued together, it would)."""
    cdef uint64_t number
    cdef int wire
    while p < end:
        pb_tag(ctx, &p, end, &number, &wire)
        pb_skip(ctx, wire, number, &p, end, depth, NULL)
    return 0


cdef inline void pb_gathered_done(PbCtx *ctx) noexcept nogil:
    cdef PbGather *g = ctx.gathered
    ctx.gathered = g.next
    free(g)


cdef void pb_gathered_free(PbCtx *ctx) noexcept nogil:
    """Every merged buffer a failed row left."""
    while ctx.gathered != NULL:
        pb_gathered_done(ctx)


cdef int pb_put_any_json(const PbCtx *ctx, const PbPlan *plan, int fidx, ColRoom *col, const uint8_t *p,
                         const uint8_t *end, const uint8_t *at) except -1:
    """A google.protobuf.Any's bytes as the JSON text its printer gives (not the hot path: only with
    convert.any.fields.to.json; called with the GIL).  What it cannot print fails the record, at the Any's byte
    `at` plus the printer's position."""
    cdef bytes text
    cdef Py_ssize_t inside = 0
    printer = (<_PbMsgPlan>plan.owner).subplans[fidx]
    try:
        text = printer(view_of(p, end - p))
    except ProtobufDecodeError as exc:
        if at == p:
            inside = exc.position
        pb_fail(ctx, at + inside, exc.reason)
    return room_put_bin(col, <const uint8_t *>PyBytes_AS_STRING(text), len(text),
                        <const uint8_t *>PyBytes_AS_STRING(text) + len(text))


cdef int pb_put_message(PbCtx *ctx, const PbPlan *plan, int fidx, ColRoom *col, int kind, const uint8_t *p,
                        const uint8_t *end, int depth) except -1 nogil:
    cdef const PbField *f = &plan.fields[fidx]
    if kind == PBC_TIMESTAMP or kind == PBC_DURATION:
        return pb_put_time(ctx, col, kind, f.time, p, end, depth + 1)
    if kind == PBC_ANY_JSON:
        with gil:
            pb_put_any_json(ctx, plan, fidx, col, p, end, p)
        return 0
    if unlikely(f.sub == NULL):
        with gil:
            raise AssertionError(f"field {f.number} has no plan for its message")
    return pb_decode_message(ctx, f.sub, p, end, depth + 1)


cdef inline always_inline_int pb_emit_repeated(PbCtx *ctx, const PbPlan *plan, const PbSlot *s, ColRoom *col,
                                               const uint8_t *end, int depth) except -1 nogil:
    """Every occurrence of a repeated field (packed or not) / map, in order, as one list / map row."""
    cdef int fidx = s.field
    cdef const PbField *f = &plan.fields[fidx]
    cdef ColRoom *elem = col.kids[0]
    cdef int ekind = ctx.roles[elem - ctx.rooms]
    cdef const uint8_t *p = s.first
    cdef const uint8_t *v
    cdef const uint8_t *vend
    cdef const uint8_t *body_end
    cdef uint64_t number, u, n
    cdef int wire
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
                pb_put_message(ctx, plan, fidx, elem, ekind, v, p, depth)
            elif f.type == PBT_STRING or f.type == PBT_BYTES:
                pb_put_bytes(ctx, f, elem, ekind, v, <Py_ssize_t>n, False, end)
            elif f.packable:
                while v < p:
                    vend = v
                    pb_read_number(ctx, f.wire, &v, p, &u)
                    if f.closed_enum and pb_enum_find(f, <int32_t>u) < 0:
                        continue
                    pb_put_number(ctx, f, elem, ekind, u, False, vend)
        elif wire == f.wire and wire == PB_WT_SGROUP:
            v = p
            pb_skip(ctx, wire, number, &p, end, depth, &body_end)
            # through pb_put_message: a group shaped like Timestamp/Duration has a time column, no plan
            pb_put_message(ctx, plan, fidx, elem, ekind, v, body_end, depth)
        elif wire == f.wire:
            v = p
            pb_read_number(ctx, wire, &p, end, &u)
            if f.closed_enum and pb_enum_find(f, <int32_t>u) < 0:
                continue
            pb_put_number(ctx, f, elem, ekind, u, False, v)
        else:
            pb_skip(ctx, wire, number, &p, end, depth, NULL)
    return room_close_list(col)


cdef inline bint pb_superseded(const PbPlan *plan, const PbSlot *slots, int slot) noexcept nogil:
    """A oneof member set before another member of its oneof: only the last one set counts."""
    cdef int oneof = plan.fields[slots[slot].field].oneof
    cdef int j
    cdef const PbSlot *o
    for j in range(plan.n_slots):
        o = &slots[j]
        if j != slot and o.count and plan.fields[o.field].oneof == oneof and o.value > slots[slot].value:
            return True
    return False


cdef int pb_required_seen(const PbCtx *ctx, const PbPlan *plan, int fidx, const uint8_t *p, const uint8_t *end,
                          uint8_t *seen) except -1 nogil:
    """A required field the column does not hold counts as set when its value is one protobuf keeps (a closed
    enum's unknown number is an unknown field, so the field stays unset and the message does not parse)."""
    cdef uint64_t u
    cdef const PbField *f = &plan.fields[fidx]
    if f.closed_enum and f.wire == PB_WT_VARINT:
        pb_read_number(ctx, f.wire, &p, end, &u)
        if pb_enum_find(f, <int32_t>u) < 0:
            return 0
    seen[fidx] = 1
    return 0


cdef int pb_put_merged(PbCtx *ctx, const PbPlan *plan, const PbSlot *s, ColRoom *col, int kind,
                       const uint8_t *end, int depth) except -1 nogil:
    """A singular message field set more than once: its occurrences merged, as protobuf parses them."""
    cdef Py_ssize_t n
    cdef const uint8_t *merged = pb_gather(ctx, &plan.fields[s.field], s, end, depth, &n)
    if kind == PBC_ANY_JSON:        # (errors at its last occurrence: the merged bytes are not the value's)
        with gil:
            pb_put_any_json(ctx, plan, s.field, col, merged, merged + n, s.value)
    else:
        pb_put_message(ctx, plan, s.field, col, kind, merged, merged + n, depth)
    pb_gathered_done(ctx)
    return 0


cdef int pb_scratch_short(const PbCtx *ctx) except -1 nogil:
    with gil:
        raise AssertionError(f"protobuf scratch of {ctx.slot_cap} slots / {ctx.seen_cap} flags is too small")


cdef int pb_required_missing(const PbCtx *ctx, const uint8_t *at, uint64_t number) except -1 nogil:
    with gil:
        pb_fail(ctx, at, f"required field {number} is missing (a proto2 message without it does not parse)")
    return -1


cdef int pb_mismatch(const PbCtx *ctx, const PbPlan *plan, int fidx, const uint8_t *at) except -1 nogil:
    with gil:
        pb_fail(ctx, at, (<_PbMsgPlan>plan.owner).mismatch[fidx])
    return -1


cdef int pb_decode_message(PbCtx *ctx, const PbPlan *plan, const uint8_t *p, const uint8_t *end,
                           int depth) except -1 nogil:
    """Scan one message's bytes, then append one (valid) row to the plan's struct column.  The message's
    scratch: ctx.slots from ctx.top on (and its required flags from ctx.seen_top), the messages inside it
    taking theirs after it."""
    cdef const uint8_t *tag_at
    cdef const uint8_t *v
    cdef const uint8_t *body_end
    cdef uint64_t number, u, n
    cdef int wire, fidx, hint = 0, i, kind, status
    cdef const PbField *f
    cdef PbSlot *s
    cdef ColRoom *col
    cdef PbSlot *slots
    cdef uint8_t *seen
    if unlikely(depth > PB_MAX_DEPTH):
        with gil:
            pb_fail(ctx, p, f"messages nested deeper than {PB_MAX_DEPTH}")
    if unlikely(ctx.top + plan.n_slots > ctx.slot_cap or ctx.seen_top + plan.n_fields > ctx.seen_cap):
        pb_scratch_short(ctx)
    slots = ctx.slots + ctx.top
    seen = ctx.seen + ctx.seen_top
    ctx.top += plan.n_slots
    ctx.seen_top += plan.n_fields
    cdef const uint8_t *start = p
    for i in range(plan.n_slots):
        slots[i].count = 0
    if plan.n_required:
        memset(seen, 0, plan.n_fields)
    while p < end:
        tag_at = p
        pb_tag(ctx, &p, end, &number, &wire)
        fidx = pb_find(plan, number, hint)
        if fidx < 0 or plan.fields[fidx].slot < 0:
            if fidx >= 0 and plan.fields[fidx].required and wire == plan.fields[fidx].wire:
                pb_required_seen(ctx, plan, fidx, p, end, seen)
            pb_skip(ctx, wire, number, &p, end, depth, NULL)
            continue
        hint = fidx + 1
        f = &plan.fields[fidx]
        v = p
        if wire == PB_WT_LEN:
            status = take_uvarint64(&p, end, &n)
            if unlikely(status != VARINT_OK):
                pb_fail_varint(ctx, v, "field %d length", number, status)
            if unlikely(n > <uint64_t>(end - p)):
                with gil:
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
            if f.closed_enum and not f.repeated and pb_enum_find(f, <int32_t>u) < 0:
                continue        # proto2: an unknown enum number is kept as an unknown field
        s = &slots[f.slot]
        if s.count == 0:
            s.first = tag_at
        s.count += 1
        s.value = v
        s.size = <Py_ssize_t>n
        s.field = fidx
    if plan.n_required:
        # a required field is set by a value protobuf keeps: one its slot took (an own wire type, a known
        # closed-enum number), or, outside the column, one pb_required_seen saw
        for i in range(plan.n_fields):
            f = &plan.fields[i]
            if f.required and not seen[i] and not (f.slot >= 0 and slots[f.slot].count):
                pb_required_missing(ctx, start, f.number)
    for i in range(plan.n_slots):
        col = &ctx.rooms[plan.slot_col[i]]
        kind = plan.slot_kind[i]
        s = &slots[i]
        if s.count == 0:
            pb_put_default(ctx, plan, i, col, kind, depth)
            continue
        fidx = s.field
        f = &plan.fields[fidx]
        if unlikely(f.mismatch):
            pb_mismatch(ctx, plan, fidx, s.value)
        if f.oneof >= 0 and pb_superseded(plan, slots, i):
            pb_put_default(ctx, plan, i, col, kind, depth)
            continue
        if f.repeated:
            pb_emit_repeated(ctx, plan, s, col, end, depth)
        elif f.type == PBT_MESSAGE or f.type == PBT_GROUP:
            if s.count == 1:
                pb_put_message(ctx, plan, fidx, col, kind, s.value, s.value + s.size, depth)
            else:
                pb_put_merged(ctx, plan, s, col, kind, end, depth)
        elif f.wire == PB_WT_LEN:
            pb_put_bytes(ctx, f, col, kind, s.value, s.size, f.implicit and not plan.emit_defaults, end)
        else:
            v = s.value
            pb_read_number(ctx, f.wire, &v, end, &u)
            pb_put_number(ctx, f, col, kind, u, f.implicit and not plan.emit_defaults, s.value)
    ctx.top -= plan.n_slots
    ctx.seen_top -= plan.n_fields
    return room_ok(&ctx.rooms[plan.col])


# ---------------------------------------------------------------- a column of records

cdef int pb_index_failed(const PbCtx *ctx, const uint8_t *at, int status, int64_t index, const PbNode *node,
                         int what) except -1 nogil:
    """The message indexes' errors (what: 0 the count's varint, 1 an index's varint, 2 an index out of range,
    3 a count out of range, 4 no message at all)."""
    with gil:
        if what == 0:
            pb_fail(ctx, at, f"message index count: {varint_problem(status, 'the value')}")
        if what == 1:
            pb_fail(ctx, at, f"message index: {varint_problem(status, 'the value')}")
        if what == 2:
            pb_fail(ctx, at, f"message index {index} names no message of the writer schema"
                             f"{'' if node == NULL else ' nested in ' + (<_PbNode>node.obj).name}")
        if what == 3:
            pb_fail(ctx, at, f"message index count {index} is out of range (1 to {PB_MAX_INDEXES})")
        pb_fail(ctx, at, "the writer schema has no message")
    return -1


cdef const PbNode *pb_message_by_indexes(const PbCtx *ctx, const PbNode *root, const uint8_t **pp,
                                         const uint8_t *end) except NULL nogil:
    """Confluent's message indexes: a zig-zag varint count, then zig-zag indexes (the file's top-level message,
    then nested ones); the single byte 0 means [0].  Apicurio's `02 00` is the same path written in full.
    root: a node over the writer's top-level messages."""
    cdef const uint8_t *at = pp[0]
    cdef uint64_t u
    cdef int64_t count, index
    cdef int64_t k
    cdef int status = take_uvarint64(pp, end, &u)
    cdef const PbNode *level = root
    cdef const PbNode *node = NULL
    if unlikely(status != VARINT_OK):
        pb_index_failed(ctx, at, status, 0, NULL, 0)
    count = zigzag64(u)
    if count == 0:
        if level.n_nested == 0:
            pb_index_failed(ctx, at, 0, 0, NULL, 4)
        return level.nested[0]
    if unlikely(count < 0 or count > PB_MAX_INDEXES):
        pb_index_failed(ctx, at, 0, count, NULL, 3)
    for k in range(count):
        at = pp[0]
        status = take_uvarint64(pp, end, &u)
        if unlikely(status != VARINT_OK):
            pb_index_failed(ctx, at, status, 0, NULL, 1)
        index = zigzag64(u)
        if unlikely(index < 0 or index >= level.n_nested):
            pb_index_failed(ctx, at, 0, index, node, 2)
        node = level.nested[index]
        level = node
    return node


cdef int pb_unreadable(const PbNode *node, Py_ssize_t body) except -1 nogil:
    with gil:
        raise ProtobufDecodeError(f"writer message {(<_PbNode>node.obj).name} cannot be read as the column's "
                                  "message", body)


cdef int pb_row(PbCtx *ctx, const PbNode *root, const uint8_t *value, Py_ssize_t length,
                Py_ssize_t body) except -1 nogil:
    """One value's row: the message indexes pick the writer message, its plan fills the root."""
    cdef const uint8_t *p = value + body
    cdef const uint8_t *end = value + length
    ctx.base = value
    ctx.top = 0
    ctx.seen_top = 0
    cdef const PbNode *node = pb_message_by_indexes(ctx, root, &p, end)
    if node.plan == NULL:
        pb_unreadable(node, body)
    return pb_decode_message(ctx, node.plan, p, end, 0)


@cython.final
cdef class _PbExec(_TypedRows):
    """The state of one decode and its per-row step: the message's columns as raw room (rooms[i] is column i
    of the layout, written without the GIL; stored back into the columns before a failed row is cut and at the
    end), and the messages' scratch, sized by the writers met so far."""
    cdef list cols                  # the _Column of each room (owned here)
    cdef _PbLayout layout           # (its roles)
    cdef ColRoom *rooms
    cdef ColRoom **kid_rooms        # every room's kids, one array
    cdef Py_ssize_t nrooms
    cdef PbCtx ctx

    def __dealloc__(self):
        pb_gathered_free(&self.ctx)
        free(self.ctx.slots)
        free(self.ctx.seen)
        free(self.rooms)
        free(self.kid_rooms)

    cdef int load(self) except -1:
        cdef Py_ssize_t i
        for i in range(self.nrooms):
            room_load(&self.rooms[i])
        return 0

    cdef int store(self) except -1:
        cdef Py_ssize_t i
        for i in range(self.nrooms):
            room_store(&self.rooms[i])
        return 0

    cdef const void *code_of(self, object writer) except? NULL:
        # the scratch grows here, between runs of rows (no row holds a pointer into it)
        cdef _PbWriter w = <_PbWriter?>writer
        cdef void *grown
        if w.need_slots > self.ctx.slot_cap:
            grown = realloc(self.ctx.slots, w.need_slots * sizeof(PbSlot))
            if grown == NULL:
                raise MemoryError()
            self.ctx.slots = <PbSlot *>grown
            self.ctx.slot_cap = w.need_slots
        if w.need_seen > self.ctx.seen_cap:
            grown = realloc(self.ctx.seen, w.need_seen)
            if grown == NULL:
                raise MemoryError()
            self.ctx.seen = <uint8_t *>grown
            self.ctx.seen_cap = w.need_seen
        return <const void *>&w.root.c

    cdef int run(self, TypedSpan *spans, Py_ssize_t count, Py_ssize_t *done) except -1:
        with nogil:
            pb_rows(self, spans, count, done)
        return 0

    cdef int row(self, object writer, const uint8_t *value, Py_ssize_t length, Py_ssize_t body) except -1:
        cdef const PbNode *root = <const PbNode *>self.code_of(writer)
        with nogil:
            pb_row(&self.ctx, root, value, length, body)
        return 0

    cdef Py_ssize_t rows(self) noexcept:
        return self.rooms[0].length

    cdef int null_row(self) except -1:
        return room_null(&self.rooms[0])

    cdef int failed(self, Py_ssize_t before) except -1:
        pb_gathered_free(&self.ctx)
        self.store()
        col_truncate(self.root, before)
        col_null(self.root)
        return self.load()

    cdef object finish(self):
        self.store()
        return col_finish(self.root)


cdef int pb_rows(_PbExec ex, TypedSpan *spans, Py_ssize_t count, Py_ssize_t *done) except -1 nogil:
    """The rows of spans[done[0]:count]."""
    cdef Py_ssize_t k
    for k in range(done[0], count):
        pb_row(&ex.ctx, <const PbNode *>spans[k].code, spans[k].value, spans[k].length, spans[k].body)
        done[0] = k + 1
    return 0


def pb_decode_column(_PbLayout layout not None, dict writers not None, values, writer_ids, body_offsets):
    """Decode Protobuf payloads into fresh columns of `layout` (see kafkarec.protobuf.ProtobufDecoder.decode).
    writers: writer id -> _PbWriter.  Returns (struct array, string array of errors)."""
    cdef list cols = layout.fresh()
    cdef Py_ssize_t i, j, nkids = 0, ncols = len(cols)
    cdef list kids
    if (<_Column>cols[0]).role != PBC_STRUCT:
        raise ValueError("the root column must be a struct")
    cdef _PbExec ex = _PbExec()
    ex.writers = writers
    ex.cols = cols
    ex.layout = layout
    ex.nrooms = ncols
    ex.rooms = <ColRoom *>calloc(ncols, sizeof(ColRoom))
    ex.kid_rooms = <ColRoom **>calloc(max(1, layout.nkids), sizeof(ColRoom *))
    if ex.rooms == NULL or ex.kid_rooms == NULL:
        raise MemoryError()
    for i in range(ncols):
        ex.rooms[i].col = <PyObject *>cols[i]
        kids = layout.kids[i]
        ex.rooms[i].kids = ex.kid_rooms + nkids
        ex.rooms[i].nkids = len(kids)
        for j in range(len(kids)):
            ex.kid_rooms[nkids + j] = &ex.rooms[<Py_ssize_t>kids[j]]
        nkids += len(kids)
    ex.ctx.rooms = ex.rooms
    ex.ctx.roles = layout.roles
    ex.load()
    return decode_typed_column(ex, cols[0], values, writer_ids, body_offsets)


# Column kinds by name, for kafkarec/protobuf/arrow_types.py.
PB_COLUMN_KINDS = {"int32": PBC_INT32, "int64": PBC_INT64, "float": PBC_FLOAT, "double": PBC_DOUBLE,
                   "bool": PBC_BOOL, "string": PBC_STRING, "binary": PBC_BINARY, "struct": PBC_STRUCT,
                   "list": PBC_LIST, "map": PBC_MAP, "timestamp": PBC_TIMESTAMP, "duration": PBC_DURATION,
                   "anyjson": PBC_ANY_JSON}
