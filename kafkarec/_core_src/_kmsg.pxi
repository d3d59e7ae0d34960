# _kmsg.pxi: Kafka's message protocol (the generated-message format of its internal topics), read by plan.
#
# A plan (_KStruct) is one struct of one schema at one version, compiled by kafkarec/internal/schema.py from
# the project's schema text: its fields in order, whether the version is flexible (compact lengths + tagged
# fields), and its tagged fields by tag. kmsg_decode walks the bytes with that plan into a dict.
#
# Every read goes through the core's Cursor (_reader.pxi), bounded by the end of the struct's bytes, and
# unsigned varints through _varint.pxi's one reader; array counts are checked against the bytes left (times
# the element's minimum size) before any element is read, so a lying count fails at once. Errors are
# InternalRecordError at the absolute byte position (the cursor's origin + the offset in the bytes).
#
# The same walk fills typed Arrow columns (_KSink, a row of the core's one column builder): a field the
# caller maps to a column is written there instead of into a dict, so __consumer_offsets columns come from
# the one plan that record decoding uses.
from kafkarec.errors import InternalRecordError, UnknownRecordTypeError

# The class of the walk's errors in a C global: every read passes it, and a module-global lookup per
# read cost more than the read itself (~90 instructions a __consumer_offsets record).
cdef object KM_ERROR = InternalRecordError
import base64 as _kmsg_base64
import binascii as _kmsg_binascii

# The field kinds of a plan; kafkarec/internal/schema.py takes them from KMSG_KINDS.
cdef enum:
    KM_BOOL = 1
    KM_INT8 = 2
    KM_INT16 = 3
    KM_UINT16 = 4
    KM_INT32 = 5
    KM_UINT32 = 6
    KM_INT64 = 7
    KM_FLOAT64 = 8
    KM_STRING = 9
    KM_BYTES = 10
    KM_UUID = 11
    KM_STRUCT = 12
    KM_ARRAY = 13

KMSG_KINDS = {"bool": KM_BOOL, "int8": KM_INT8, "int16": KM_INT16, "uint16": KM_UINT16, "int32": KM_INT32,
              "uint32": KM_UINT32, "int64": KM_INT64, "float64": KM_FLOAT64, "string": KM_STRING,
              "bytes": KM_BYTES, "uuid": KM_UUID, "struct": KM_STRUCT, "array": KM_ARRAY}

# Minimum encoded size of one value of each kind (arrays/strings/bytes: their length prefix, compact or not).
cdef Py_ssize_t _km_min_size(int kind, bint flexible, _KStruct sub):
    if kind == KM_BOOL or kind == KM_INT8:
        return 1
    if kind == KM_INT16 or kind == KM_UINT16:
        return 2
    if kind == KM_INT32 or kind == KM_UINT32:
        return 4
    if kind == KM_INT64 or kind == KM_FLOAT64:
        return 8
    if kind == KM_UUID:
        return 16
    if kind == KM_STRING:
        return 1 if flexible else 2
    if kind == KM_BYTES or kind == KM_ARRAY:
        return 1 if flexible else 4
    if kind == KM_STRUCT:
        return sub.min_size if sub is not None else 0
    return 1


cdef class _KField:
    """One field of a compiled struct plan (see kafkarec/internal/schema.py)."""
    cdef readonly str name
    cdef readonly int kind
    cdef readonly bint nullable
    cdef readonly int elem_kind
    cdef readonly _KStruct struct
    cdef readonly int tag
    cdef readonly object default
    cdef readonly bint has_default

    def __init__(self, str name, int kind, bint nullable, int elem_kind, _KStruct struct, int tag,
                 object default, bint has_default):
        self.name = name
        self.kind = kind
        self.nullable = nullable
        self.elem_kind = elem_kind
        self.struct = struct
        self.tag = tag
        self.default = default
        self.has_default = has_default


cdef class _KStruct:
    """A struct of one schema at one version: fields in order, tagged fields by tag."""
    cdef readonly str name
    cdef readonly int version
    cdef readonly bint flexible
    cdef readonly tuple fields
    cdef readonly tuple tagged_fields
    cdef readonly dict tagged
    cdef readonly Py_ssize_t min_size
    cdef readonly tuple order

    def __init__(self, str name, int version, bint flexible):
        self.name = name
        self.version = version
        self.flexible = flexible
        self.fields = ()
        self.tagged_fields = ()
        self.tagged = {}
        self.min_size = 0
        self.order = ()

    def set_fields(self, tuple fields, tuple tagged_fields, tuple order):
        """Fields read in order, tagged fields, and every field name in schema order (JSON order)."""
        cdef _KField f
        cdef Py_ssize_t size = 1 if self.flexible else 0
        self.fields = fields
        self.tagged_fields = tagged_fields
        self.tagged = {f.tag: f for f in tagged_fields}
        self.order = order
        for f in fields:
            size += _km_min_size(f.kind, self.flexible, f.struct)
        self.min_size = size


@cython.final
cdef class _KSink:
    """A row of typed Arrow columns (_Column: bool/int8/int16/int32/int64, string/bytes) filled by plan
    walks, a row per record (see kafkarec/internal/columns.py); a column a row leaves unwritten is null
    in it. The fixed-size columns are reserved once for all rows (open()), written in place and
    committed by finish(); strings and bytes are appended."""
    cdef tuple kinds_
    cdef list columns
    cdef int kinds[64]
    cdef int width[64]
    cdef PyObject *cols[64]
    cdef uint8_t *data[64]
    cdef uint8_t *valid[64]
    cdef Py_ssize_t zeros[64]
    cdef int ncols
    cdef uint64_t filled
    cdef Py_ssize_t capacity
    cdef readonly Py_ssize_t rows

    def __init__(self, tuple kinds):
        cdef int i, kind
        cdef _Column col
        if len(kinds) > 64:
            raise ValueError("at most 64 columns")
        pa = pyarrow()
        self.kinds_ = kinds
        self.columns = []
        self.ncols = len(kinds)
        for i in range(self.ncols):
            kind = kinds[i]
            self.kinds[i] = kind
            self.zeros[i] = 0
            if kind == KM_STRING or kind == KM_BYTES:
                col = new_column(CK_BIN, pa.string() if kind == KM_STRING else pa.binary(), True)
            elif kind == KM_BOOL or kind == KM_INT8:        # a bool as int8 0/1, cast by finish()
                col = new_column(CK_I8, pa.int8(), True)
            elif kind == KM_INT16:
                col = new_column(CK_I16, pa.int16(), True)
            elif kind == KM_INT32:
                col = new_column(CK_I32, pa.int32(), True)
            elif kind == KM_INT64:
                col = new_column(CK_I64, pa.int64(), True)
            else:
                raise ValueError(f"no column of kind {kind}")
            self.columns.append(col)
            self.width[i] = col.width
            self.cols[i] = <PyObject *>col

    cdef int open(self, Py_ssize_t rows, Py_ssize_t string_bytes) except -1:
        """Room for `rows` rows: the fixed-size columns zeroed in place (a null's value is 0), about
        `string_bytes` for each string column."""
        cdef int i
        cdef _Column col
        if self.rows or self.capacity:
            raise ValueError("a sink is opened once")
        self.capacity = rows
        for i in range(self.ncols):
            col = <_Column>self.cols[i]
            if self.width[i] == 0:
                col.offsets.reserve(rows * 4)
                col.values.reserve(string_bytes + KAFKAREC_COPY_SLACK)
                col.valid.reserve(rows // 8 + 1)
                continue
            self.data[i] = reserve_tail(col.values, rows * self.width[i] + 1, True)
            self.valid[i] = reserve_bits(col.valid, 0, rows, False)
        return 0

    cdef inline always_inline_int put_int(self, int col, int64_t v) noexcept:
        cdef Py_ssize_t row = self.rows
        cdef uint8_t *p = self.data[col]
        cdef int w = self.width[col]
        if w == 8:
            (<int64_t *>p)[row] = v
        elif w == 4:
            (<int32_t *>p)[row] = <int32_t>v
        elif w == 2:
            (<int16_t *>p)[row] = <int16_t>v
        else:
            p[row] = <uint8_t>v
        self.valid[col][row >> 3] |= <uint8_t>(1 << (row & 7))
        self.filled |= (<uint64_t>1) << col
        return 0

    cdef inline always_inline_int put_bytes(self, int col, const uint8_t *p, Py_ssize_t n, const uint8_t *src_end) except -1:
        col_put_bin(<_Column>self.cols[col], p, n, src_end)
        self.filled |= (<uint64_t>1) << col
        return 0

    cdef int end_row(self) except -1:
        cdef int col
        cdef uint64_t missing = ~self.filled
        if self.rows >= self.capacity:
            raise ValueError("more rows than the sink was opened for")
        if self.ncols < 64:
            missing &= ((<uint64_t>1) << self.ncols) - 1
        while missing:                  # only the columns this row left unwritten
            col = count_trailing_zeros64(missing)
            missing &= missing - 1
            if self.width[col] == 0:
                col_null(<_Column>self.cols[col])
            else:
                self.zeros[col] += 1
        self.filled = 0
        self.rows += 1
        return 0

    def finish(self) -> list:
        """The columns as pyarrow arrays (bool columns as bool, string columns as UTF-8 strings)."""
        pa = pyarrow()
        cdef list out = []
        cdef int i
        cdef _Column col
        if self.rows != self.capacity:
            raise ValueError("the sink holds fewer rows than it was opened for")
        for i in range(self.ncols):
            col = <_Column>self.cols[i]
            if self.width[i]:
                col_commit(col, self.rows, self.zeros[i])
            arr = col_finish(col)
            out.append(arr.cast(pa.bool_()) if self.kinds[i] == KM_BOOL else arr)
        return out


@cython.final
cdef class _KColPlan:
    """A plan with the sink column of each of its fields (-1: none) and the (column, value) defaults of
    columns its version lacks, in C arrays for the per-record walk."""
    cdef _KStruct plan
    cdef int cols[64]
    cdef int ndefaults
    cdef int default_cols[8]
    cdef int64_t default_values[8]

    def __init__(self, _KStruct plan, tuple cols, tuple defaults=()):
        cdef int k
        if len(plan.fields) > 64 or len(cols) != len(plan.fields) or len(defaults) > 8:
            raise ValueError("a column plan maps each of at most 64 fields, with at most 8 defaults")
        self.plan = plan
        for k in range(len(cols)):
            self.cols[k] = cols[k]
        self.ndefaults = len(defaults)
        for k in range(self.ndefaults):
            self.default_cols[k] = defaults[k][0]
            self.default_values[k] = defaults[k][1]


cdef inline const uint8_t *_km_take(Cursor *c, Py_ssize_t n, str what) except NULL:
    return cursor_take_as(c, n, what, KM_ERROR)


cdef inline int _km_fail(const Cursor *c, const uint8_t *at, str reason) except -1:
    return cursor_fail(c, at, KM_ERROR, reason)


cdef object _km_uuid_str(const uint8_t *p):
    return _kmsg_base64.urlsafe_b64encode(PyBytes_FromStringAndSize(<const char *>p, 16))[:22].decode("ascii")


cdef inline always_inline_ssize _km_length(Cursor *c, int kind, bint nullable, bint flexible, str name) except -2:
    """The length prefix of a string, bytes or array: compact (unsigned varint length + 1, 0 for null) in
    flexible versions, else int16 (strings) or int32 (bytes, arrays) with -1 for null. -1: null."""
    cdef const uint8_t *at = c.pos
    cdef uint32_t u
    cdef Py_ssize_t n
    if flexible:
        read_uvarint(c, &u, name, KM_ERROR)
        n = -1 if u == 0 else <Py_ssize_t>u - 1
    elif kind == KM_STRING:
        n = <int16_t>kr_load_be16(_km_take(c, 2, name))
        if n < -1:
            _km_fail(c, at, "%s: string length %d" % (name, n))
    else:
        n = <int32_t>kr_load_be32(_km_take(c, 4, name))
        if n < -1:
            _km_fail(c, at, "%s: %s length %d" % (name, "array" if kind == KM_ARRAY else "bytes", n))
    if n == -1 and not nullable:
        # (the words of Kafka's generated readers)
        _km_fail(c, at, "non-nullable field %s was serialized as null" % name)
    return n


cdef inline always_inline_cptr _km_payload(Cursor *c, Py_ssize_t n, const uint8_t *at, str name) except NULL:
    """The n bytes of a string or bytes field whose length prefix began at `at`."""
    if n > c.end - c.pos:
        _km_fail(c, at, "%s: length %d but %d bytes are left" % (name, n, c.end - c.pos))
    return _km_take(c, n, name)


cdef inline always_inline_int _km_check_utf8(Cursor *c, const uint8_t *p, Py_ssize_t n, const uint8_t *at, str name) except -1:
    """0 if p[:n] is valid UTF-8; else strict mode fails, lenient mode returns 1 (Java's replacement)."""
    if is_utf8(p, n):
        return 0
    if c.strict:
        _km_fail(c, at, "%s: string is not valid UTF-8" % name)
    return 1


cdef inline bint _km_struct_null(Cursor *c, bint tagged, str name) except -1:
    """Whether a nullable struct's marker says null, as Kafka's generated readers read it: among a struct's
    fields an int8 (negative: null, else present); as the value of a tagged field an unsigned varint read
    as Java's int (0 or less: null; Kafka writes 0 and 1)."""
    cdef uint32_t u
    if not tagged:
        return <int8_t>_km_take(c, 1, name)[0] < 0
    read_uvarint(c, &u, name, KM_ERROR)
    return <int32_t>u <= 0


cdef object _km_read_scalar(Cursor *c, int kind, bint nullable, bint flexible, _KStruct sub, str name,
                            bint json):
    cdef Py_ssize_t n
    cdef uint64_t bits
    cdef double d
    cdef const uint8_t *at
    cdef const uint8_t *p
    cdef object s
    if kind == KM_INT32:
        return <int32_t>kr_load_be32(_km_take(c, 4, name))
    if kind == KM_INT64:
        return <int64_t>kr_load_be64(_km_take(c, 8, name))
    if kind == KM_INT16:
        return <int16_t>kr_load_be16(_km_take(c, 2, name))
    if kind == KM_INT8:
        return <int8_t>_km_take(c, 1, name)[0]
    if kind == KM_BOOL:
        return _km_take(c, 1, name)[0] != 0
    if kind == KM_UINT16:
        return <uint16_t>kr_load_be16(_km_take(c, 2, name))
    if kind == KM_UINT32:
        return <uint32_t>kr_load_be32(_km_take(c, 4, name))
    if kind == KM_FLOAT64:
        bits = kr_load_be64(_km_take(c, 8, name))
        memcpy(&d, &bits, 8)
        return d
    if kind == KM_UUID:
        return _km_uuid_str(_km_take(c, 16, name))
    if kind == KM_STRING or kind == KM_BYTES:
        at = c.pos
        n = _km_length(c, kind, nullable, flexible, name)
        if n < 0:
            return None
        p = _km_payload(c, n, at, name)
        if kind == KM_BYTES:
            s = PyBytes_FromStringAndSize(<const char *>p, n)
            if json:
                return _kmsg_binascii.b2a_base64(s, newline=False).decode("ascii")
            return s
        if _km_check_utf8(c, p, n, at, name):
            return java_utf8_replacing(p, n)   # as Java's new String(bytes, UTF_8)
        return PyUnicode_DecodeUTF8(<const char *>p, n, "strict")
    if kind == KM_STRUCT:
        return _km_read_struct(c, sub, nullable, name, json)
    _km_fail(c, c.pos, "%s: unsupported field kind %d" % (name, kind))


cdef Py_ssize_t _km_array_count(Cursor *c, _KField f, bint flexible) except -2:
    """An array's element count (-1: null), checked against the bytes left before any element is read."""
    cdef const uint8_t *at = c.pos
    cdef Py_ssize_t n = _km_length(c, KM_ARRAY, f.nullable, flexible, f.name)
    cdef Py_ssize_t elem_min = _km_min_size(f.elem_kind, flexible, f.struct)
    if elem_min < 1:
        elem_min = 1
    if n > (c.end - c.pos) // elem_min:
        _km_fail(c, at, "%s: array of %d elements cannot fit in the %d bytes left" % (f.name, n, c.end - c.pos))
    return n


cdef object _km_read_array(Cursor *c, _KField f, bint flexible, bint json):
    cdef Py_ssize_t n, i
    cdef list out
    n = _km_array_count(c, f, flexible)
    if n < 0:
        return None
    out = []
    for i in range(n):
        if f.elem_kind == KM_STRUCT:
            out.append(_km_read_struct(c, f.struct, False, f.name, json))
        else:
            out.append(_km_read_scalar(c, f.elem_kind, False, flexible, None, f.name, json))
    return out


cdef int _km_skip(Cursor *c, int kind, bint nullable, bint flexible, _KStruct sub, str name,
                  _KSink sink) except -1:
    """One value read and checked as _km_read_scalar reads it (the same errors), but kept nowhere."""
    cdef const uint8_t *at
    cdef const uint8_t *p
    cdef Py_ssize_t n
    if kind == KM_STRING or kind == KM_BYTES:
        at = c.pos
        n = _km_length(c, kind, nullable, flexible, name)
        if n >= 0:
            p = _km_payload(c, n, at, name)
            if kind == KM_STRING:
                _km_check_utf8(c, p, n, at, name)
        return 0
    if kind == KM_STRUCT:
        _km_read_struct(c, sub, nullable, name, False, sink, None)
        return 0
    _km_take(c, _km_min_size(kind, flexible, None), name)     # the fixed-size kinds
    return 0


cdef int _km_skip_field(Cursor *c, _KField f, bint flexible, _KSink sink, bint tagged=False) except -1:
    cdef Py_ssize_t n, i
    if f.kind == KM_STRUCT:
        _km_read_struct(c, f.struct, f.nullable, f.name, False, sink, None, tagged)
        return 0
    if f.kind != KM_ARRAY:
        return _km_skip(c, f.kind, f.nullable, flexible, f.struct, f.name, sink)
    n = _km_array_count(c, f, flexible)
    for i in range(n):
        _km_skip(c, f.elem_kind, False, flexible, f.struct, f.name, sink)
    return 0


cdef object _km_read_field(Cursor *c, _KField f, bint flexible, bint json, bint tagged=False):
    """One field's value; `tagged`: it is a tagged field's value (a nullable struct marks null differently)."""
    if f.kind == KM_ARRAY:
        return _km_read_array(c, f, flexible, json)
    if f.kind == KM_STRUCT:
        return _km_read_struct(c, f.struct, f.nullable, f.name, json, None, None, tagged)
    return _km_read_scalar(c, f.kind, f.nullable, flexible, f.struct, f.name, json)


cdef object _km_read_struct(Cursor *c, _KStruct plan, bint nullable, str name, bint json,
                            _KSink sink=None, _KColPlan cols=None, bint tagged=False):
    """One struct of `plan` into a dict; with a sink, the fields `cols` maps to a column (cols[i] >= 0 for
    plan.fields[i]; cols None: none) go to the sink instead and the rest are read and checked, with the
    same errors, but kept nowhere (returns None). `nullable`: a null marker comes first (_km_struct_null;
    `tagged`: the struct is a tagged field's value)."""
    cdef dict out = {} if sink is None else None
    cdef _KField f
    cdef uint32_t ntags, tag, size, i
    cdef Py_ssize_t k = 0
    cdef int col
    cdef const uint8_t *field_start
    cdef const uint8_t *saved_end
    cdef object value
    cdef set seen
    if nullable and _km_struct_null(c, tagged, name):
        return None
    cdef tuple fields = plan.fields
    for k in range(len(fields)):
        f = <_KField>fields[k]          # (set_fields takes only _KField tuples)
        if sink is None:
            out[f.name] = _km_read_field(c, f, plan.flexible, json)
        else:
            col = cols.cols[k] if cols is not None else -1
            if col >= 0:
                _km_put(c, f, plan.flexible, sink, col)
            else:
                _km_skip_field(c, f, plan.flexible, sink)
    if not plan.flexible:
        return out
    if not json and out is not None:
        for f in plan.tagged_fields:
            out[f.name] = f.default
    field_start = c.pos
    read_uvarint(c, &ntags, "tagged field count", KM_ERROR)
    if ntags > <uint32_t>(c.end - c.pos) // 2:
        _km_fail(c, field_start, "%d tagged fields cannot fit in the %d bytes left" % (ntags, c.end - c.pos))
    seen = None
    for i in range(ntags):
        field_start = c.pos
        read_uvarint(c, &tag, "tag", KM_ERROR)
        read_uvarint(c, &size, "tagged field size", KM_ERROR)
        if size > <uint32_t>(c.end - c.pos):
            _km_fail(c, field_start, "tagged field %d: size %d but %d bytes are left" % (tag, size, c.end - c.pos))
        if c.strict:
            if seen is None:
                seen = set()
            if tag in seen:
                _km_fail(c, field_start, "tagged field %d appears twice" % tag)
            seen.add(tag)
        f = plan.tagged.get(tag)
        if f is None:            # unknown tag: skipped, as Kafka keeps it aside and never shows it
            _km_take(c, size, "unknown tagged field")
            continue
        saved_end = c.end
        c.end = c.pos + size
        if out is None:
            _km_skip_field(c, f, True, sink, True)
        else:
            value = _km_read_field(c, f, True, json, True)
        if c.strict and c.pos != c.end:
            _km_fail(c, field_start, "tagged field %d (%s): %d bytes declared, %d read"
                     % (tag, f.name, size, size - (c.end - c.pos)))
        c.pos = c.end
        c.end = saved_end
        if out is None:
            continue
        if json and f.has_default and value == f.default and type(value) is type(f.default):
            out.pop(f.name, None)
        else:
            out[f.name] = value
    if out is not None and plan.tagged_fields:
        # schema order (JsonConverter's), tagged fields where the schema puts them
        return {name_: out[name_] for name_ in plan.order if name_ in out}
    return out


cdef int _km_struct_end(Cursor *c, _KStruct plan) except -1:
    """exact / strict: no bytes may follow the struct."""
    if c.pos != c.end:
        _km_fail(c, c.pos, "%d bytes left after %s v%d" % (c.end - c.pos, plan.name, plan.version))
    return 0


cdef inline int _km_cursor(Cursor *c, _Buffer buf, Py_ssize_t start, Py_ssize_t end, Py_ssize_t position,
                           bint strict) except -1:
    if end < 0 or end > buf.size:
        end = buf.size
    if start < 0 or start > end:
        raise ValueError("start out of range")
    cursor_init(c, buf.ptr, end, position, False, strict)
    c.pos = buf.ptr + start
    return 0


def kmsg_decode(_KStruct plan, data, Py_ssize_t start=0, Py_ssize_t end=-1, *, bint json=False,
                bint strict=False, Py_ssize_t position=0, bint exact=False):
    """Decode one struct of `plan` from data[start:end] -> (dict, end position).

    json=True gives Kafka's JsonConverter view (bytes as base64 text, tagged fields only when not
    their default); strict=True refuses invalid UTF-8, unsigned varints past 32 bits and repeated or
    mis-sized tagged fields; exact=True refuses bytes left over after the struct. Errors are
    InternalRecordError with position = `position` + the byte offset in data.
    """
    cdef _Buffer buf = buffer_of(data)
    cdef Cursor c
    cdef object out
    _km_cursor(&c, buf, start, end, position, strict)
    out = _km_read_struct(&c, plan, False, plan.name, json)
    if exact:
        _km_struct_end(&c, plan)
    return out, c.pos - c.start


def kmsg_uvarint(data, Py_ssize_t start=0, Py_ssize_t position=0, *, bint strict=False):
    """Read one unsigned varint (Kafka's readUnsignedVarint, at most 5 bytes) -> (value, end position)."""
    cdef _Buffer buf = buffer_of(data)
    cdef Cursor c
    cdef uint32_t u
    _km_cursor(&c, buf, start, -1, position, strict)
    read_uvarint(&c, &u, "unsigned varint", InternalRecordError)
    return u, c.pos - c.start


def kmsg_encode_uvarint(uint32_t n) -> bytes:
    """An unsigned varint as Kafka's message protocol writes it (ByteUtils.writeUnsignedVarint)."""
    cdef uint8_t out[5]
    cdef int i = 0
    while n >= 0x80:
        out[i] = <uint8_t>((n & 0x7F) | 0x80)
        n >>= 7
        i += 1
    out[i] = <uint8_t>n
    return PyBytes_FromStringAndSize(<const char *>out, i + 1)


# ---------------------------------------------------------------------------------------------------------
# Plans into typed Arrow columns: the walk above with a sink. A row per record; a column not written for a
# row is null in it.

cdef inline always_inline_int _km_put(Cursor *c, _KField f, bint flexible, _KSink sink, int col) except -1:
    """One field straight into column `col` of the sink (strings: invalid UTF-8 as Java replaces it, or
    refused in strict mode, as the dict walk does)."""
    cdef int kind = f.kind
    cdef const uint8_t *at
    cdef const uint8_t *p
    cdef Py_ssize_t n
    cdef bytes fixed
    if kind == KM_INT64:
        return sink.put_int(col, <int64_t>kr_load_be64(_km_take(c, 8, f.name)))
    if kind == KM_INT32:
        return sink.put_int(col, <int32_t>kr_load_be32(_km_take(c, 4, f.name)))
    if kind == KM_INT16:
        return sink.put_int(col, <int16_t>kr_load_be16(_km_take(c, 2, f.name)))
    if kind == KM_INT8:
        return sink.put_int(col, <int8_t>_km_take(c, 1, f.name)[0])
    if kind == KM_BOOL:
        return sink.put_int(col, _km_take(c, 1, f.name)[0] != 0)
    if kind == KM_STRING or kind == KM_BYTES:
        at = c.pos
        n = _km_length(c, kind, f.nullable, flexible, f.name)
        if n < 0:
            return 0
        p = _km_payload(c, n, at, f.name)
        if kind == KM_STRING and _km_check_utf8(c, p, n, at, f.name):
            fixed = java_utf8_replacing(p, n).encode("utf-8")
            p = <const uint8_t *>PyBytes_AS_STRING(fixed)
            return sink.put_bytes(col, p, len(fixed), p + len(fixed))
        return sink.put_bytes(col, p, n, c.end)
    raise TypeError(f"field {f.name} (kind {kind}) cannot go to a column")


@cython.final
cdef class _BinaryRows:
    """The rows of one Arrow binary array (its validity, int32 offsets and data buffers)."""
    cdef _Buffer valid, offsets, data
    cdef const uint8_t *valid_p
    cdef const int32_t *offs
    cdef const uint8_t *data_p
    cdef Py_ssize_t data_size, base, n

    def __init__(self, arr):
        bufs = arr.buffers()
        self.n = len(arr)
        self.base = arr.offset
        self.valid = buffer_of(bufs[0]) if bufs[0] is not None and arr.null_count else None
        self.offsets = buffer_of(bufs[1])
        self.data = buffer_of(bufs[2]) if bufs[2] is not None else buffer_of(b"")
        if self.offsets.size < (self.base + self.n + 1) * 4:
            raise ValueError("binary array offsets shorter than its length")
        self.valid_p = self.valid.ptr if self.valid is not None else NULL
        self.offs = <const int32_t *>self.offsets.ptr
        self.data_p = self.data.ptr
        self.data_size = self.data.size

    cdef inline bint get(self, Py_ssize_t i, Cursor *c, bint strict) except -1:
        """Point c at row i's bytes (positions from 0); False for a null row."""
        cdef Py_ssize_t j = self.base + i
        cdef int32_t s, e
        if self.valid_p != NULL and not (self.valid_p[j >> 3] >> (j & 7)) & 1:
            return False
        s = self.offs[j]
        e = self.offs[j + 1]
        if s < 0 or e < s or e > self.data_size:
            raise ValueError("binary array offsets out of range")
        cursor_init(c, self.data_p + s, e - s, 0, False, strict)
        return True


def coordinator_columns(key_arr, value_arr, offsets, _KSink sink, list key_plans, list value_plans,
                        int col_type, int col_version, int col_known, int col_tombstone, bint strict,
                        bint strict_types, str topic):
    """Rows of a coordinator topic (int16 record type + key struct; int16 version + value struct or null)
    from Arrow binary arrays `key_arr`/`value_arr` into `sink`, by the same plans and rules as
    kafkarec.internal.decode(strict=strict, strict_types=strict_types): ``key_plans[type]`` = (plan, cols)
    or None (unknown type); ``value_plans[type][version]`` = (plan, cols, defaults) or None (unknown
    version), `cols` the column of each field (-1: none), `defaults` the (column, value) pairs of fields
    the version lacks. `offsets` (record offsets) name records in errors."""
    cdef _BinaryRows keys = _BinaryRows(key_arr)
    cdef _BinaryRows values = _BinaryRows(value_arr)
    cdef Py_ssize_t i = 0, n = keys.n
    cdef Cursor kc, vc
    cdef bint has_value
    cdef int16_t t, ver = 0
    cdef int d
    cdef list kplans = [None if e is None else _KColPlan(e[0], e[1]) for e in key_plans]
    cdef list vplans = [[None if e is None else _KColPlan(e[0], e[1], e[2]) for e in versions]
                        for versions in value_plans]
    cdef list versions
    cdef _KColPlan kp, vp
    cdef _KStruct stage = None
    if values.n != n or len(offsets) != n or len(vplans) != len(kplans):
        raise ValueError("key, value and offset columns differ in length")
    # strings come from the keys (group, topic) and values (metadata): at most their bytes
    sink.open(n, keys.offs[keys.base + n] - keys.offs[keys.base] if n else 0)
    try:
        for i in range(n):
            stage = None
            if not keys.get(i, &kc, strict):
                raise InternalRecordError(f"{topic} records carry a key; this one is null", 0)
            t = <int16_t>kr_load_be16(_km_take(&kc, 2, "record type"))
            has_value = values.get(i, &vc, strict)
            if has_value:
                ver = <int16_t>kr_load_be16(_km_take(&vc, 2, "value version"))
                sink.put_int(col_version, ver)
            sink.put_int(col_type, t)
            sink.put_int(col_tombstone, not has_value)
            kp = <_KColPlan>kplans[t] if 0 <= t < len(kplans) else None
            if kp is None:
                if strict_types:
                    raise UnknownRecordTypeError(f"unknown record type {t}", 0)
                sink.put_int(col_known, False)
                sink.end_row()
                continue
            sink.put_int(col_known, True)
            stage = kp.plan
            _km_read_struct(&kc, kp.plan, False, kp.plan.name, False, sink, kp)
            if strict:
                _km_struct_end(&kc, kp.plan)
            if has_value:
                versions = <list>vplans[t]
                vp = <_KColPlan>versions[ver] if 0 <= ver < len(versions) else None
                if vp is None:
                    if strict_types:
                        raise UnknownRecordTypeError(
                            f"{kp.plan.name.removesuffix('Key')}Value has no version {ver}", 0)
                else:
                    stage = vp.plan
                    _km_read_struct(&vc, vp.plan, False, vp.plan.name, False, sink, vp)
                    if strict:
                        _km_struct_end(&vc, vp.plan)
                    for d in range(vp.ndefaults):
                        sink.put_int(vp.default_cols[d], vp.default_values[d])
            sink.end_row()
    except InternalRecordError as exc:
        where = "" if stage is None else stage.name + ": "
        raise type(exc)(f"{topic} record at offset {offsets[i]}: {where}{exc.reason}", exc.position) from None
