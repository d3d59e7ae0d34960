# _kmsg.pxi: Kafka's message protocol (the generated-message format of its internal topics), read by plan.
#
# A plan (_KStruct) is one struct of one schema at one version, compiled by kafkarec/internal/schema.py from
# the project's schema text: its fields in order, whether the version is flexible (compact lengths + tagged
# fields), and its tagged fields by tag. kmsg_decode walks the bytes with that plan into a dict.
#
# Every read is bounds-checked against the end of the struct's bytes; array counts are checked against the
# bytes left (times the element's minimum size) before any element is read, so a lying count fails at once.
from kafkarec.errors import InternalRecordError, UnknownRecordTypeError
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


# ---------------------------------------------------------------------------------------------------------
# __consumer_offsets straight into columns: the key/value bytes of an Arrow table (kafkarec.to_arrow) read
# as OffsetCommit / GroupMetadata / group records without a Python object per record.

cdef inline bint _km_utf8_valid(const uint8_t *p, Py_ssize_t n) noexcept nogil:
    """Well-formed UTF-8 (no overlongs, no surrogates, <= U+10FFFF)."""
    cdef Py_ssize_t i = 0
    cdef uint8_t b
    cdef int need, k
    cdef uint32_t cp
    while i < n:
        b = p[i]
        if b < 0x80:
            i += 1
            continue
        if 0xC2 <= b <= 0xDF:
            need = 1
            cp = b & 0x1F
        elif 0xE0 <= b <= 0xEF:
            need = 2
            cp = b & 0x0F
        elif 0xF0 <= b <= 0xF4:
            need = 3
            cp = b & 0x07
        else:
            return False
        if i + need >= n:
            return False
        for k in range(1, need + 1):
            if (p[i + k] & 0xC0) != 0x80:
                return False
            cp = (cp << 6) | (p[i + k] & 0x3F)
        if need == 2 and (cp < 0x800 or 0xD800 <= cp <= 0xDFFF):
            return False
        if need == 3 and (cp < 0x10000 or cp > 0x10FFFF):
            return False
        i += need + 1
    return True


cdef class _KStrCol:
    """An Arrow string column being written: int32 offsets, UTF-8 data (capacity fixed up front)."""
    cdef object offsets_arr, data_arr, valid_arr, np
    cdef int32_t[::1] offsets
    cdef uint8_t[::1] data
    cdef uint8_t[::1] valid
    cdef Py_ssize_t used

    def __init__(self, Py_ssize_t n, Py_ssize_t cap, np):
        self.np = np
        self.offsets_arr = np.zeros(n + 1, dtype=np.int32)
        self.data_arr = np.empty(max(cap, 1), dtype=np.uint8)
        self.valid_arr = np.zeros(n, dtype=np.uint8)
        self.offsets = self.offsets_arr
        self.data = self.data_arr
        self.valid = self.valid_arr
        self.used = 0

    cdef int put(self, Py_ssize_t row, const uint8_t *p, Py_ssize_t n) except -1:
        cdef bytes fixed
        if not _km_utf8_valid(p, n):
            fixed = java_utf8(p, n).encode("utf-8")      # Java's replacement of malformed input
            return self._put_raw(row, <const uint8_t *>PyBytes_AS_STRING(fixed), len(fixed))
        return self._put_raw(row, p, n)

    cdef int _put_raw(self, Py_ssize_t row, const uint8_t *p, Py_ssize_t n) except -1:
        cdef Py_ssize_t cap = self.data.shape[0]
        if self.used + n > cap:
            new = self.np.empty(max(cap * 2, self.used + n), dtype=self.np.uint8)
            new[:self.used] = self.data_arr[:self.used]
            self.data_arr = new
            self.data = self.data_arr
        if n:
            memcpy(&self.data[self.used], p, n)
        self.used += n
        self.valid[row] = 1
        return 0

    cdef void close_row(self, Py_ssize_t row) noexcept:
        self.offsets[row + 1] = <int32_t>self.used

    def parts(self):
        return self.offsets_arr, self.data_arr[:self.used], self.valid_arr


cdef inline int _kc_str(const uint8_t *p, Py_ssize_t *pos, Py_ssize_t end, bint compact,
                        const uint8_t **out, Py_ssize_t *n) except -1:
    # a (non-null) string at p[pos]: int16 length, or compact uvarint length + 1
    cdef int16_t n16
    cdef uint32_t u = 0
    cdef int shift = 0
    cdef uint8_t b
    if compact:
        while True:
            if pos[0] >= end:
                return -2
            b = p[pos[0]]
            pos[0] += 1
            u |= (<uint32_t>(b & 0x7F)) << shift
            if not (b & 0x80):
                break
            shift += 7
            if shift > 28:
                return -2
        if u == 0:
            return -2
        n[0] = <Py_ssize_t>u - 1
    else:
        if end - pos[0] < 2:
            return -2
        n16 = <int16_t>kr_load_be16(p + pos[0])
        pos[0] += 2
        if n16 < 0:
            return -2
        n[0] = n16
    if n[0] > end - pos[0]:
        return -2
    out[0] = p + pos[0]
    pos[0] += n[0]
    return 0


def consumer_offsets_columns(Py_ssize_t n, key_offsets, key_data, key_valid, Py_ssize_t key_base,
                             val_offsets, val_data, val_valid, Py_ssize_t val_base, record_offsets,
                             bint strict=False, uint64_t known_types=0xFFFF, int max_version_0=4,
                             int max_version_1=4):
    """Decode n __consumer_offsets records from Arrow binary buffers (offsets int32, data, validity bitmap
    or None, with each array's element offset `*_base`) into column parts:
    dict name -> numpy array(s). `record_offsets` (int64) name records in errors. `known_types`: bit t set
    for each record type of the schema set (every key starts with its group id; types 0 and 1 are offset
    commits, whose values are known up to versions `max_version_0` / `max_version_1`)."""
    import numpy as np
    cdef const int32_t[::1] koff = np.frombuffer(key_offsets, dtype=np.int32)
    cdef const int32_t[::1] voff = np.frombuffer(val_offsets, dtype=np.int32)
    cdef const uint8_t[::1] kdata = np.frombuffer(key_data, dtype=np.uint8) if key_data is not None and len(key_data) else np.zeros(1, np.uint8)
    cdef const uint8_t[::1] vdata = np.frombuffer(val_data, dtype=np.uint8) if val_data is not None and len(val_data) else np.zeros(1, np.uint8)
    cdef const uint8_t[::1] kvalid = np.frombuffer(key_valid, dtype=np.uint8) if key_valid is not None else None
    cdef const uint8_t[::1] vvalid = np.frombuffer(val_valid, dtype=np.uint8) if val_valid is not None else None
    cdef const int64_t[::1] roff = record_offsets
    if koff.shape[0] < key_base + n + 1 or voff.shape[0] < val_base + n + 1 or roff.shape[0] < n:
        raise ValueError("column buffers shorter than the row count")
    rtype_a = np.full(n, -1, dtype=np.int16)
    vver_a = np.full(n, -1, dtype=np.int16)
    part_a = np.zeros(n, dtype=np.int32)
    off_a = np.zeros(n, dtype=np.int64)
    epoch_a = np.full(n, -1, dtype=np.int32)
    cts_a = np.zeros(n, dtype=np.int64)
    ets_a = np.full(n, -1, dtype=np.int64)
    flags_a = np.zeros(n, dtype=np.uint8)          # bit 0: key read; 1: offset commit value; 2: tombstone; 3: unknown
    cdef int16_t[::1] rtype = rtype_a
    cdef int16_t[::1] vver = vver_a
    cdef int32_t[::1] part = part_a
    cdef int64_t[::1] off = off_a
    cdef int32_t[::1] epoch = epoch_a
    cdef int64_t[::1] cts = cts_a
    cdef int64_t[::1] ets = ets_a
    cdef uint8_t[::1] flags = flags_a
    cdef Py_ssize_t kcap = koff[key_base + n] - koff[key_base]
    cdef Py_ssize_t vcap = voff[val_base + n] - voff[val_base]
    cdef _KStrCol group = _KStrCol(n, kcap, np)
    cdef _KStrCol topic = _KStrCol(n, kcap, np)
    cdef _KStrCol meta = _KStrCol(n, vcap, np)
    cdef Py_ssize_t i, ks, ke, vs, ve, pos, sn, ki, vi
    cdef const uint8_t *kp = &kdata[0]
    cdef const uint8_t *vp = &vdata[0]
    cdef const uint8_t *s
    cdef int16_t t, ver
    cdef bint has_key, has_val, flexible
    cdef str where
    cdef Py_ssize_t where_pos
    for i in range(n):
        ki = key_base + i
        vi = val_base + i
        has_key = kvalid is None or (kvalid[ki >> 3] >> (ki & 7)) & 1
        has_val = vvalid is None or (vvalid[vi >> 3] >> (vi & 7)) & 1
        ks = koff[ki]
        ke = koff[ki + 1]
        vs = voff[vi]
        ve = voff[vi + 1]
        if ks < 0 or ke < ks or ke > kdata.shape[0] or vs < 0 or ve < vs or ve > vdata.shape[0]:
            raise ValueError("column offsets out of range")
        where = None
        where_pos = 0
        if not has_key or ke - ks < 2:
            where = "a key of at least 2 bytes is needed"
        else:
            t = <int16_t>kr_load_be16(kp + ks)
            rtype[i] = t
            pos = ks + 2
            if t < 0 or t > 63 or not ((known_types >> t) & 1):
                flags[i] |= 8
                if strict:
                    raise UnknownRecordTypeError("unknown record type %d (record at offset %d)" % (t, roff[i]), 0)
            elif _kc_str(kp, &pos, ke, False, &s, &sn) < 0:
                where = "key string"
                where_pos = pos - ks
            else:
                group.put(i, s, sn)
                flags[i] |= 1
                if t <= 1:
                    if _kc_str(kp, &pos, ke, False, &s, &sn) < 0 or ke - pos < 4:
                        where = "OffsetCommitKey"
                        where_pos = pos - ks
                    else:
                        topic.put(i, s, sn)
                        part[i] = <int32_t>kr_load_be32(kp + pos)
            if where is None and not has_val:
                flags[i] |= 4
            elif where is None and ve - vs >= 2:
                ver = <int16_t>kr_load_be16(vp + vs)
                vver[i] = ver
                if t <= 1 and t >= 0:
                    pos = vs + 2
                    flexible = ver >= 4
                    if ver < 0 or ver > (max_version_0 if t == 0 else max_version_1):
                        flags[i] |= 8
                        if strict:
                            raise UnknownRecordTypeError("OffsetCommitValue has no version %d (record at offset %d)"
                                                         % (ver, roff[i]), 0)
                    elif ve - pos < 8:
                        where = "OffsetCommitValue offset"
                    else:
                        off[i] = <int64_t>kr_load_be64(vp + pos)
                        pos += 8
                        if ver >= 3:
                            if ve - pos < 4:
                                where = "OffsetCommitValue leaderEpoch"
                            else:
                                epoch[i] = <int32_t>kr_load_be32(vp + pos)
                                pos += 4
                        if where is None:
                            if _kc_str(vp, &pos, ve, flexible, &s, &sn) < 0:
                                where = "OffsetCommitValue metadata"
                            else:
                                meta.put(i, s, sn)
                                if ve - pos < 8:
                                    where = "OffsetCommitValue commitTimestamp"
                                else:
                                    cts[i] = <int64_t>kr_load_be64(vp + pos)
                                    pos += 8
                                    if ver == 1:
                                        if ve - pos < 8:
                                            where = "OffsetCommitValue expireTimestamp"
                                        else:
                                            ets[i] = <int64_t>kr_load_be64(vp + pos)
                                    if where is None:
                                        flags[i] |= 2
            elif where is None:
                where = "a value of at least 2 bytes (or null) is needed"
        if where is not None:
            if where.startswith("OffsetCommitValue"):
                where_pos = pos - vs
            raise InternalRecordError("__consumer_offsets record at offset %d: %s is malformed" % (roff[i], where),
                                      where_pos)
        group.close_row(i)
        topic.close_row(i)
        meta.close_row(i)
    return {"recordType": rtype_a, "valueVersion": vver_a, "partition": part_a, "offset": off_a,
            "leaderEpoch": epoch_a, "commitTimestamp": cts_a, "expireTimestamp": ets_a, "flags": flags_a,
            "group": group.parts(), "topic": topic.parts(), "metadata": meta.parts()}
