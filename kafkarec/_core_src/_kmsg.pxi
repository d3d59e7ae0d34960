# _kmsg.pxi: Kafka's message protocol (the generated-message format of its internal topics), read by plan.
#
# A plan (_KStruct) is one struct of one schema at one version, compiled by kafkarec/internal/schema.py from
# the project's schema text: its fields in order, whether the version is flexible (compact lengths + tagged
# fields), and its tagged fields by tag. kmsg_decode walks the bytes with that plan into a dict.
#
# Every read is bounds-checked against the end of the struct's bytes; array counts are checked against the
# bytes left (times the element's minimum size) before any element is read, so a lying count fails at once.
from kafkarec.errors import InternalRecordError
import base64 as _kmsg_base64
import binascii as _kmsg_binascii

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


cdef struct _KCur:
    const uint8_t *base
    Py_ssize_t pos
    Py_ssize_t end
    Py_ssize_t origin      # added to positions in errors (the caller's offset of base[0])
    bint strict
    bint json


cdef int _km_fail(_KCur *c, str reason) except -1:
    raise InternalRecordError(reason, c.origin + c.pos)


cdef inline int _km_need(_KCur *c, Py_ssize_t n, str what) except -1:
    if n > c.end - c.pos:
        raise InternalRecordError(
            "%s needs %d bytes but %d are left" % (what, n, c.end - c.pos), c.origin + c.pos)
    return 0


cdef int _km_uvarint(_KCur *c, uint32_t *out, str what) except -1:
    # Kafka's ByteUtils.readUnsignedVarint: at most 5 bytes.
    cdef uint32_t value = 0
    cdef int shift = 0
    cdef uint8_t b
    cdef Py_ssize_t start = c.pos
    while True:
        if c.pos >= c.end:
            raise InternalRecordError("%s: unsigned varint cut off" % what, c.origin + start)
        b = c.base[c.pos]
        c.pos += 1
        value |= (<uint32_t>(b & 0x7F)) << shift
        if not (b & 0x80):
            break
        shift += 7
        if shift > 28:
            raise InternalRecordError("%s: unsigned varint longer than 5 bytes" % what, c.origin + start)
    out[0] = value
    return 0


cdef object _km_uuid_str(const uint8_t *p):
    return _kmsg_base64.urlsafe_b64encode(PyBytes_FromStringAndSize(<const char *>p, 16))[:22].decode("ascii")


cdef object _km_read_scalar(_KCur *c, int kind, bint nullable, bint flexible, _KStruct sub, str name):
    cdef uint32_t u
    cdef Py_ssize_t n
    cdef int16_t n16
    cdef int32_t n32
    cdef uint64_t bits
    cdef double d
    cdef Py_ssize_t start
    cdef object s
    if kind == KM_INT32:
        _km_need(c, 4, name)
        c.pos += 4
        return <int32_t>kr_load_be32(c.base + c.pos - 4)
    if kind == KM_INT64:
        _km_need(c, 8, name)
        c.pos += 8
        return <int64_t>kr_load_be64(c.base + c.pos - 8)
    if kind == KM_INT16:
        _km_need(c, 2, name)
        c.pos += 2
        return <int16_t>kr_load_be16(c.base + c.pos - 2)
    if kind == KM_INT8:
        _km_need(c, 1, name)
        c.pos += 1
        return <int8_t>c.base[c.pos - 1]
    if kind == KM_BOOL:
        _km_need(c, 1, name)
        c.pos += 1
        return c.base[c.pos - 1] != 0
    if kind == KM_UINT16:
        _km_need(c, 2, name)
        c.pos += 2
        return <uint16_t>kr_load_be16(c.base + c.pos - 2)
    if kind == KM_UINT32:
        _km_need(c, 4, name)
        c.pos += 4
        return <uint32_t>kr_load_be32(c.base + c.pos - 4)
    if kind == KM_FLOAT64:
        _km_need(c, 8, name)
        bits = kr_load_be64(c.base + c.pos)
        memcpy(&d, &bits, 8)
        c.pos += 8
        return d
    if kind == KM_UUID:
        _km_need(c, 16, name)
        c.pos += 16
        return _km_uuid_str(c.base + c.pos - 16)
    if kind == KM_STRING or kind == KM_BYTES:
        start = c.pos
        if flexible:
            _km_uvarint(c, &u, name)
            if u == 0:
                if not nullable:
                    raise InternalRecordError("%s: null in a non-nullable field" % name, c.origin + start)
                return None
            n = <Py_ssize_t>u - 1
        elif kind == KM_STRING:
            _km_need(c, 2, name)
            n16 = <int16_t>kr_load_be16(c.base + c.pos)
            c.pos += 2
            if n16 < 0:
                if n16 != -1 or not nullable:
                    raise InternalRecordError("%s: string length %d" % (name, n16), c.origin + start)
                return None
            n = n16
        else:
            _km_need(c, 4, name)
            n32 = <int32_t>kr_load_be32(c.base + c.pos)
            c.pos += 4
            if n32 < 0:
                if n32 != -1 or not nullable:
                    raise InternalRecordError("%s: bytes length %d" % (name, n32), c.origin + start)
                return None
            n = n32
        if n > c.end - c.pos:
            raise InternalRecordError("%s: length %d but %d bytes are left" % (name, n, c.end - c.pos),
                                      c.origin + start)
        c.pos += n
        if kind == KM_BYTES:
            s = PyBytes_FromStringAndSize(<const char *>(c.base + c.pos - n), n)
            if c.json:
                return _kmsg_binascii.b2a_base64(s, newline=False).decode("ascii")
            return s
        if not c.strict:        # as Java's new String(bytes, UTF_8): malformed input replaced by its rules
            return java_utf8(c.base + c.pos - n, n)
        try:
            return PyUnicode_DecodeUTF8(<const char *>(c.base + c.pos - n), n, "strict")
        except UnicodeDecodeError:
            raise InternalRecordError("%s: string is not valid UTF-8" % name, c.origin + start) from None
    if kind == KM_STRUCT:
        return _km_read_struct(c, sub, nullable, name)
    raise InternalRecordError("%s: unsupported field kind %d" % (name, kind), c.origin + c.pos)


cdef object _km_read_array(_KCur *c, _KField f, bint flexible):
    cdef uint32_t u
    cdef int32_t n32
    cdef Py_ssize_t n, i, elem_min
    cdef Py_ssize_t start = c.pos
    cdef list out
    if flexible:
        _km_uvarint(c, &u, f.name)
        if u == 0:
            if not f.nullable:
                raise InternalRecordError("%s: null array in a non-nullable field" % f.name, c.origin + start)
            return None
        n = <Py_ssize_t>u - 1
    else:
        _km_need(c, 4, f.name)
        n32 = <int32_t>kr_load_be32(c.base + c.pos)
        c.pos += 4
        if n32 < 0:
            if n32 != -1 or not f.nullable:
                raise InternalRecordError("%s: array length %d" % (f.name, n32), c.origin + start)
            return None
        n = n32
    elem_min = _km_min_size(f.elem_kind, flexible, f.struct)
    if elem_min < 1:
        elem_min = 1
    if n > (c.end - c.pos) // elem_min:
        raise InternalRecordError(
            "%s: array of %d elements cannot fit in the %d bytes left" % (f.name, n, c.end - c.pos),
            c.origin + start)
    out = []
    for i in range(n):
        if f.elem_kind == KM_STRUCT:
            out.append(_km_read_struct(c, f.struct, False, f.name))
        else:
            out.append(_km_read_scalar(c, f.elem_kind, False, flexible, None, f.name))
    return out


cdef object _km_read_field(_KCur *c, _KField f, bint flexible):
    if f.kind == KM_ARRAY:
        return _km_read_array(c, f, flexible)
    return _km_read_scalar(c, f.kind, f.nullable, flexible, f.struct, f.name)


cdef object _km_read_struct(_KCur *c, _KStruct plan, bint nullable, str name):
    cdef dict out = {}
    cdef _KField f
    cdef uint32_t ntags, tag, size, i
    cdef Py_ssize_t start, saved_end, field_start
    cdef object value
    cdef int8_t marker
    cdef set seen
    if nullable:
        # nullable structs: int8 -1 (null) or 1
        _km_need(c, 1, name)
        marker = <int8_t>c.base[c.pos]
        c.pos += 1
        if marker < 0:
            return None
    for f in plan.fields:
        out[f.name] = _km_read_field(c, f, plan.flexible)
    if not plan.flexible:
        return out
    if not c.json:
        for f in plan.tagged_fields:
            out[f.name] = f.default
    start = c.pos
    _km_uvarint(c, &ntags, "tagged field count")
    if ntags > <uint32_t>(c.end - c.pos) // 2:
        raise InternalRecordError("%d tagged fields cannot fit in the %d bytes left" % (ntags, c.end - c.pos),
                                  c.origin + start)
    seen = None
    for i in range(ntags):
        field_start = c.pos
        _km_uvarint(c, &tag, "tag")
        _km_uvarint(c, &size, "tagged field size")
        if size > <uint32_t>(c.end - c.pos):
            raise InternalRecordError("tagged field %d: size %d but %d bytes are left" % (tag, size, c.end - c.pos),
                                      c.origin + field_start)
        if c.strict:
            if seen is None:
                seen = set()
            if tag in seen:
                raise InternalRecordError("tagged field %d appears twice" % tag, c.origin + field_start)
            seen.add(tag)
        f = plan.tagged.get(tag)
        if f is None:            # unknown tag: skipped, as Kafka keeps it aside and never shows it
            c.pos += size
            continue
        saved_end = c.end
        c.end = c.pos + size
        value = _km_read_field(c, f, True)
        if c.strict and c.pos != c.end:
            raise InternalRecordError("tagged field %d (%s): %d bytes declared, %d read"
                                      % (tag, f.name, size, size - (c.end - c.pos)), c.origin + field_start)
        c.pos = c.end
        c.end = saved_end
        if c.json and f.has_default and value == f.default and type(value) is type(f.default):
            out.pop(f.name, None)
        else:
            out[f.name] = value
    if plan.tagged_fields:
        # schema order (JsonConverter's), tagged fields where the schema puts them
        return {k: out[k] for k in plan.order if k in out}
    return out


def kmsg_decode(_KStruct plan, data, Py_ssize_t start=0, Py_ssize_t end=-1, *, bint json=False,
                bint strict=False, Py_ssize_t position=0, bint exact=False):
    """Decode one struct of `plan` from data[start:end] -> (dict, end position).

    json=True gives Kafka's JsonConverter view (bytes as base64 text, tagged fields only when not
    their default); strict=True refuses invalid UTF-8 and repeated or mis-sized tagged fields;
    exact=True refuses bytes left over after the struct. Errors are InternalRecordError with
    position = `position` + the byte offset in data.
    """
    cdef const uint8_t[::1] view
    cdef _KCur c
    cdef object out
    if isinstance(data, bytes):
        view = data
    else:
        view = memoryview(data).cast("B")
    if end < 0 or end > view.shape[0]:
        end = view.shape[0]
    if start < 0 or start > end:
        raise ValueError("start out of range")
    c.base = &view[0] if view.shape[0] > 0 else <const uint8_t *>b""
    c.pos = start
    c.end = end
    c.origin = position
    c.strict = strict
    c.json = json
    out = _km_read_struct(&c, plan, False, plan.name)
    if exact and c.pos != c.end:
        raise InternalRecordError("%d bytes left after %s v%d" % (c.end - c.pos, plan.name, plan.version),
                                  c.origin + c.pos)
    return out, c.pos


def kmsg_uvarint(data, Py_ssize_t start=0, Py_ssize_t position=0):
    """Read one unsigned varint (Kafka's readUnsignedVarint, at most 5 bytes) -> (value, end position)."""
    cdef const uint8_t[::1] view
    cdef _KCur c
    cdef uint32_t u
    if isinstance(data, bytes):
        view = data
    else:
        view = memoryview(data).cast("B")
    if start < 0 or start > view.shape[0]:
        raise ValueError("start out of range")
    c.base = &view[0] if view.shape[0] > 0 else <const uint8_t *>b""
    c.pos = start
    c.end = view.shape[0]
    c.origin = position
    c.strict = False
    c.json = False
    _km_uvarint(&c, &u, "unsigned varint")
    return u, c.pos
