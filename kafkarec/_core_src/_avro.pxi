# Avro binary bodies straight into Arrow buffers.
#
# kafkarec/avro/program.py resolves a writer schema against the reader schema (Apache
# Avro's rules) and compiles the result to a flat array of ops: each op reads
# one writer value from the cursor and writes it, converted, into one reader
# column, or skips it, or fills a default.  Children (record fields, union
# branches) are op indexes in `kids`.  This file runs those programs over the
# core's one checked Cursor and its zig-zag varints (Avro ints and longs are
# the same zig-zag base-128 varints as Kafka's).
#
# Avro binary encoding (Apache Avro specification, "Binary Encoding"):
#   null: nothing; boolean: 1 byte; int/long: zig-zag varint; float/double:
#   4/8 bytes little-endian; bytes/string: long length + bytes; fixed: size
#   bytes; enum: int index; union: int branch index + value; record: fields in
#   order; array/map: blocks of (long count [, long byte size when count < 0],
#   items), ended by a count of 0; map items are (string key, value).
#
# Safety: every length and block count is checked against the bytes that
# remain before it is used; an item needs at least one byte unless its type
# encodes to nothing, and those items are bounded by a budget per value
# (max_items).  Nesting depth is bounded by the reader schema (a recursive reader is cut
# at recursiveFieldMaxDepth before it becomes columns), and skipped records of a recursive
# writer type by AV_MAX_SKIP_DEPTH.  Nothing is allocated by a count read from the input.

cdef extern from "_avro.h":
    int kr_decimal_fits(const uint8_t *le, int width, int precision) nogil

from kafkarec.errors import AvroDecodeError

# The numbering kafkarec/avro/program.py emits, defined here only: cpdef enums are Python
# constants of kafkarec._core too (AvroOp, AvroNumericKind and their names; the column kinds are
# _typed_rows.pxi's ColumnKind).
# ops
cpdef enum AvroOp:
    OP_NULL_COL = 0
    OP_SET_NULL = 1
    OP_BOOL = 2
    OP_INT = 3
    OP_LONG = 4
    OP_NUM = 5
    OP_STR = 6
    OP_BYTES = 7
    OP_FIXED = 8
    OP_DEC_BYTES = 9
    OP_DEC_FIXED = 10
    OP_ENUM = 11
    OP_RECORD = 12
    OP_ARRAY = 13
    OP_MAP = 14
    OP_WUNION = 15
    OP_MEMBER = 16
    OP_ERROR = 17
    OP_DEFAULT = 18
    OP_SKIP_BOOL = 19
    OP_SKIP_INT = 20
    OP_SKIP_LONG = 21
    OP_SKIP_N = 22
    OP_SKIP_BYTES = 23
    OP_SKIP_RECORD = 24
    OP_SKIP_ARRAY = 25
    OP_SKIP_MAP = 26
    OP_SKIP_UNION = 27
    OP_NOP = 28

# numeric kinds, for promotions
cpdef enum AvroNumericKind:
    NK_INT = 0
    NK_LONG = 1
    NK_FLOAT = 2
    NK_DOUBLE = 3


cdef struct AvOp:
    int32_t kind
    int32_t col       # reader column written, -1 for none
    int32_t a         # first kid / child op / aux start
    int32_t b         # kid count / blob / column
    int32_t c         # aux start / member / column
    int64_t n         # size, flags, packed indexes


cdef struct AvCode:
    # A program's arrays as the rows that run without the GIL read them (_AvroProgram.code).
    const AvOp *ops
    const int32_t *kids
    const int32_t *aux
    const uint8_t **blob_ptr
    const Py_ssize_t *blob_len
    int32_t root
    PyObject *prog              # the _AvroProgram: its errors' words, read with the GIL


@cython.final
cdef class _AvroProgram:
    """A compiled writer -> reader resolution (see kafkarec/avro/program.py)."""
    cdef AvOp *ops
    cdef int32_t *kids
    cdef int32_t *aux
    cdef Py_ssize_t nops
    cdef list blobs
    cdef const uint8_t **blob_ptr
    cdef Py_ssize_t *blob_len
    cdef list errors
    cdef int32_t root
    cdef bint raw_bytes
    cdef AvCode code

    def __cinit__(self, list ops, list kids, list aux, list blobs, list errors, int root, bint raw_bytes):
        cdef Py_ssize_t i
        self.nops = len(ops)
        self.ops = <AvOp *>malloc(max(1, len(ops)) * sizeof(AvOp))
        self.kids = <int32_t *>malloc(max(1, len(kids)) * sizeof(int32_t))
        self.aux = <int32_t *>malloc(max(1, len(aux)) * sizeof(int32_t))
        self.blob_ptr = <const uint8_t **>malloc(max(1, len(blobs)) * sizeof(uint8_t *))
        self.blob_len = <Py_ssize_t *>malloc(max(1, len(blobs)) * sizeof(Py_ssize_t))
        if not (self.ops and self.kids and self.aux and self.blob_ptr and self.blob_len):
            raise MemoryError()
        for i, op in enumerate(ops):
            self.ops[i].kind, self.ops[i].col, self.ops[i].a, self.ops[i].b, self.ops[i].c, self.ops[i].n = op
        for i, k in enumerate(kids):
            self.kids[i] = k
        for i, k in enumerate(aux):
            self.aux[i] = k
        self.blobs = [bytes(b) for b in blobs]
        for i, b in enumerate(self.blobs):
            self.blob_ptr[i] = <const uint8_t *>PyBytes_AS_STRING(b)
            self.blob_len[i] = len(b)
        self.errors = list(errors)
        self.root = root
        self.raw_bytes = raw_bytes
        self.code.ops = self.ops
        self.code.kids = self.kids
        self.code.aux = self.aux
        self.code.blob_ptr = self.blob_ptr
        self.code.blob_len = self.blob_len
        self.code.root = root
        self.code.prog = <PyObject *>self

    def __dealloc__(self):
        free(self.ops)
        free(self.kids)
        free(self.aux)
        free(self.blob_ptr)
        free(self.blob_len)


@cython.final
cdef class _AvExec(_TypedRows):
    """The state of one decode and its per-row step: the reader's columns as raw room (rooms[i] is
    column i, written without the GIL; stored back into the columns before a failed row is cut
    and at the end), and the budget of items that take no bytes (array<null>...), reset for each
    value so that one corrupt row cannot fail the rows after it."""
    cdef list cols                  # the _Column of each room (owned here)
    cdef ColRoom *rooms
    cdef ColRoom **kid_rooms        # every room's kids, one array
    cdef Py_ssize_t nrooms
    cdef int root_col
    cdef Py_ssize_t items
    cdef Py_ssize_t max_items
    cdef int skip_depth             # records being skipped, one inside another (recursive writers)

    def __dealloc__(self):
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
        cdef _AvroProgram prog = <_AvroProgram>writer
        # Confluent's raw `bytes` body takes a scratch copy (row(), with the GIL)
        return NULL if prog.raw_bytes else <const void *>&prog.code

    cdef int run(self, TypedSpan *spans, Py_ssize_t count, Py_ssize_t *done) except -1:
        while done[0] < count:
            if spans[done[0]].code == NULL:
                self.row(<object>spans[done[0]].writer, spans[done[0]].value, spans[done[0]].length,
                         spans[done[0]].body)
                done[0] += 1
                continue
            with nogil:
                av_rows(self, spans, count, done)
        return 0

    cdef int row(self, object writer, const uint8_t *value, Py_ssize_t length, Py_ssize_t body) except -1:
        cdef _AvroProgram prog = <_AvroProgram>writer
        cdef Cursor c
        cdef bytearray scratch
        cdef uint8_t head[10]
        cdef uint8_t *hp
        if prog.raw_bytes:
            # Confluent's raw `bytes` body: give it the Avro length prefix
            hp = write_varlong(head, length - body)
            scratch = bytearray(head[:hp - head]) + bytearray(
                view_of(value + body, length - body) if length > body else b"")
            cursor_init(&c, <const uint8_t *>(<char *>scratch), len(scratch), body - (hp - head),
                        False, False)
        else:
            cursor_init(&c, value + body, length - body, body, False, False)
        self.items = 0                  # the budget is per value: a corrupt row spends only its own
        return av_run(self, &prog.code, prog.root, &c)

    cdef Py_ssize_t rows(self) noexcept:
        return self.rooms[self.root_col].length

    cdef int null_row(self) except -1:
        return room_null(&self.rooms[self.root_col])

    cdef int failed(self, Py_ssize_t before) except -1:
        self.skip_depth = 0             # a row that failed inside skipped records left it raised
        self.store()
        col_truncate(self.root, before)
        col_null(self.root)
        return self.load()

    cdef object finish(self):
        self.store()
        return col_finish(self.root)


cdef int av_rows(_AvExec ex, TypedSpan *spans, Py_ssize_t count, Py_ssize_t *done) except -1 nogil:
    """The rows of spans[done[0]:count] up to the first whose writer needs the GIL (code NULL)."""
    cdef Cursor c
    cdef const AvCode *code
    cdef Py_ssize_t k
    for k in range(done[0], count):
        code = <const AvCode *>spans[k].code
        if code == NULL:
            return 0
        cursor_init(&c, spans[k].value + spans[k].body, spans[k].length - spans[k].body, spans[k].body,
                    False, False)
        ex.items = 0                    # the budget is per value
        av_run(ex, code, code.root, &c)
        done[0] = k + 1
    return 0


# Deepest nesting of skipped records (only a recursive writer type can nest past its schema);
# Java's GenericDatumReader meets its thread's stack limit somewhere past this.
cdef enum:
    AV_MAX_SKIP_DEPTH = 1000


cdef int av_fail(Cursor *c, const uint8_t *at, str reason) except -1:
    return cursor_fail(c, at, AvroDecodeError, reason)


cdef int av_fail_at(Cursor *c, const uint8_t *at, const char *what, const char *reason) except -1 nogil:
    """av_fail of "what: reason" (C strings), from rows that run without the GIL."""
    with gil:
        av_fail(c, at, what.decode("ascii") + ": " + reason.decode("ascii"))
    return -1


cdef int av_int(Cursor *c, int32_t *out, const char *what) except -1 nogil:
    cdef int status = take_varint(&c.pos, c.end, False, out)
    if unlikely(status != VARINT_OK):
        av_fail_at(c, c.pos, what, "int runs past the end of the value" if status == VARINT_PAST_END
                   else "invalid int encoding (more than 5 bytes)")
    return 0


cdef inline always_inline_int av_long(Cursor *c, int64_t *out, const char *what) except -1 nogil:
    cdef int status = take_varlong(&c.pos, c.end, False, out)
    if unlikely(status != VARINT_OK):
        av_fail_at(c, c.pos, what, "long runs past the end of the value" if status == VARLONG_PAST_END
                   else "invalid long encoding (more than 10 bytes)")
    return 0


cdef int av_take_failed(Cursor *c, int64_t n, const char *what) except -1 nogil:
    with gil:
        if n < 0:
            av_fail(c, c.pos, f"{what.decode('ascii')}: negative length {n}")
        av_fail(c, c.pos, f"{what.decode('ascii')} needs {n} bytes but only {c.end - c.pos} remain in the value")
    return -1


cdef inline always_inline_cptr av_take(Cursor *c, int64_t n, const char *what) except NULL nogil:
    cdef const uint8_t *p = span_take(&c.pos, c.end, n)
    if unlikely(p == NULL):
        av_take_failed(c, n, what)
    return p


cdef int av_decimal(Cursor *c, ColRoom *col, const uint8_t *p, int64_t n, int width) except -1 nogil:
    """Big-endian two's complement of n bytes -> little-endian `width` bytes."""
    cdef uint8_t out[32]
    cdef uint8_t fill = 0xFF if n > 0 and (p[0] & 0x80) else 0
    cdef int64_t k
    cdef bint fits = True
    if n == 0:
        with gil:
            # Java's Conversions.DecimalConversion (new BigInteger(bytes)) and from_avro refuse it
            av_fail(c, p, "a decimal of zero bytes (Java's BigInteger refuses an empty two's complement)")
    if n > width:
        for k in range(n - width):
            if p[k] != fill:
                fits = False
        if (p[n - width] & 0x80) != (fill & 0x80):
            fits = False
        if not fits:
            with gil:
                av_fail(c, p, f"decimal of {n} bytes does not fit in {width * 8} bits")
    memset(out, fill, 32)
    for k in range(min(n, width)):
        out[k] = p[n - 1 - k]
    if not kr_decimal_fits(out, width, col.precision):
        with gil:
            av_fail(c, p, f"decimal value has more than {col.precision} digits (the reader's precision)")
    room_put(col, out, width)
    return room_ok(col)


cdef int av_block_count(_AvExec ex, Cursor *c, const AvOp *op, bint zero_size, int64_t *count,
                        int64_t *block_bytes, bint is_map) except -1 nogil:
    """Read a block's item count (and byte size when the count is negative) and
    bound it by the remaining bytes, or the items budget for zero-size items."""
    cdef const uint8_t *at = c.pos
    cdef const char *what = "map" if is_map else "array"
    av_long(c, count, what)
    block_bytes[0] = -1
    if count[0] < 0:
        if count[0] == -INT64_MAX - 1:
            with gil:
                av_fail(c, at, f"{what.decode('ascii')}: invalid block count {count[0]}")
        count[0] = -count[0]
        av_long(c, block_bytes, "map block size" if is_map else "array block size")
        if block_bytes[0] < 0 or block_bytes[0] > c.end - c.pos:
            with gil:
                av_fail(c, at, f"{what.decode('ascii')}: block of {block_bytes[0]} bytes but "
                               f"{c.end - c.pos} remain in the value")
    if zero_size:
        # compared before adding: a count near 2**63 must not wrap the sum
        if count[0] > ex.max_items - ex.items:
            with gil:
                av_fail(c, at, f"{what.decode('ascii')}: more than {ex.max_items} items that take no "
                               "bytes in one value (the max_items budget)")
        ex.items += count[0]
    elif count[0] > c.end - c.pos:
        with gil:
            av_fail(c, at, f"{what.decode('ascii')}: block of {count[0]} items but only {c.end - c.pos} "
                           "bytes remain in the value")
    return 0


cdef int av_skip(_AvExec ex, const AvCode *code, int32_t i, Cursor *c) except -1 nogil:
    cdef const AvOp *op = &code.ops[i]
    cdef int32_t iv
    cdef int64_t lv, count, nbytes, k
    cdef int kind = op.kind
    if kind == OP_NOP:
        return 0
    if kind == OP_SKIP_INT:
        return av_int(c, &iv, "int")
    if kind == OP_SKIP_LONG:
        return av_long(c, &lv, "long")
    if kind == OP_SKIP_BOOL:
        av_take(c, 1, "boolean")
        return 0
    if kind == OP_SKIP_N:
        av_take(c, op.n, "fixed-size value")
        return 0
    if kind == OP_SKIP_BYTES:
        av_long(c, &lv, "bytes length")
        av_take(c, lv, "bytes")
        return 0
    if kind == OP_SKIP_RECORD:
        # A recursive writer type skipped below the reader's recursiveFieldMaxDepth nests as deep
        # as the data says: bounded here, not by the C stack.
        ex.skip_depth += 1
        if ex.skip_depth > AV_MAX_SKIP_DEPTH:
            with gil:
                av_fail(c, c.pos, f"records nested deeper than {AV_MAX_SKIP_DEPTH} levels")
        for k in range(op.b):
            av_skip(ex, code, code.kids[op.a + k], c)
        ex.skip_depth -= 1
        return 0
    if kind == OP_SKIP_UNION:
        av_int(c, &iv, "union index")
        if iv < 0 or iv >= op.b:
            with gil:
                av_fail(c, c.pos, f"union branch index {iv} is out of range ({op.b} branches)")
        return av_skip(ex, code, code.kids[op.a + iv], c)
    if kind == OP_SKIP_ARRAY or kind == OP_SKIP_MAP:
        while True:
            av_block_count(ex, c, op, kind == OP_SKIP_ARRAY and op.n == 1, &count, &nbytes,
                           kind == OP_SKIP_MAP)
            if count == 0:
                return 0
            if nbytes >= 0:             # a block with its size: skipped whole, within the value
                av_take(c, nbytes, "array block" if kind == OP_SKIP_ARRAY else "map block")
                continue
            for k in range(count):
                if kind == OP_SKIP_MAP:
                    av_long(c, &lv, "map key length")
                    av_take(c, lv, "map key")
                av_skip(ex, code, op.a, c)
    # any other op reads a value; a skip never reaches one
    with gil:
        raise AssertionError(f"avro op {kind} is not a skip")


cdef int av_run(_AvExec ex, const AvCode *code, int32_t i, Cursor *c) except -1 nogil:
    cdef const AvOp *op = &code.ops[i]
    cdef ColRoom *col
    cdef ColRoom *ch
    cdef ColRoom *keys
    cdef int32_t iv
    cdef int64_t lv, count, nbytes, k
    cdef float fv
    cdef double dv
    cdef const uint8_t *p
    cdef const uint8_t *at
    cdef Cursor d
    cdef int kind = op.kind
    # one if/elif chain on kind: Cython compiles it to a C switch (a jump table)
    if kind == OP_LONG:
        col = &ex.rooms[op.col]
        av_long(c, &lv, "long")
        room_put(col, &lv, 8)
        return room_ok(col)
    elif kind == OP_STR or kind == OP_BYTES:
        col = &ex.rooms[op.col]
        at = c.pos
        if kind == OP_STR:
            av_long(c, &lv, "string length")
            p = av_take(c, lv, "string")
            if not is_utf8(p, lv):
                with gil:
                    av_fail(c, at, "string is not valid UTF-8")
        else:
            av_long(c, &lv, "bytes length")
            p = av_take(c, lv, "bytes")
        return room_put_bin(col, p, lv, c.end)
    elif kind == OP_RECORD:
        col = &ex.rooms[op.col]
        for k in range(op.b):
            av_run(ex, code, code.kids[op.a + k], c)
        return room_ok(col)
    elif kind == OP_WUNION:
        av_int(c, &iv, "union index")
        if iv < 0 or iv >= op.b:
            with gil:
                av_fail(c, c.pos, f"union branch index {iv} is out of range ({op.b} branches)")
        return av_run(ex, code, code.kids[op.a + iv], c)
    elif kind == OP_SET_NULL:
        return room_null(&ex.rooms[op.col])
    elif kind == OP_INT:
        col = &ex.rooms[op.col]
        av_int(c, &iv, "int")
        room_put(col, &iv, 4)
        return room_ok(col)
    elif kind == OP_NUM:
        col = &ex.rooms[op.col]
        # writer kind -> reader kind (Java's promotion) -> column kind (Spark's
        # [int, long] -> long and [float, double] -> double)
        if (op.n & 3) == NK_INT:
            av_int(c, &iv, "int")
            dv = iv
            lv = iv
            fv = <float>iv
        elif (op.n & 3) == NK_LONG:
            av_long(c, &lv, "long")
            dv = <double>lv
            fv = <float>lv
        elif (op.n & 3) == NK_FLOAT:
            fv = kr_load_le_f32(av_take(c, 4, "float"))
            dv = fv
        else:
            dv = kr_load_le_f64(av_take(c, 8, "double"))
        if ((op.n >> 2) & 3) == NK_FLOAT:
            dv = fv                     # the reader's float, exactly as Java holds it
        elif ((op.n >> 2) & 3) == NK_DOUBLE and (op.n & 3) == NK_LONG:
            dv = <double>lv
        iv = (op.n >> 4) & 3
        if iv == NK_INT:
            iv = <int32_t>lv
            room_put(col, &iv, 4)
        elif iv == NK_LONG:
            room_put(col, &lv, 8)
        elif iv == NK_FLOAT:
            fv = <float>dv
            room_put(col, &fv, 4)
        else:
            room_put(col, &dv, 8)
        return room_ok(col)
    elif kind == OP_DEC_BYTES:
        col = &ex.rooms[op.col]
        av_long(c, &lv, "decimal length")
        p = av_take(c, lv, "decimal")
        return av_decimal(c, col, p, lv, col.width)
    elif kind == OP_DEC_FIXED:
        col = &ex.rooms[op.col]
        p = av_take(c, op.n, "decimal")
        return av_decimal(c, col, p, op.n, col.width)
    elif kind == OP_ENUM:
        col = &ex.rooms[op.col]
        at = c.pos
        av_int(c, &iv, "enum index")
        if iv < 0 or iv >= op.b:
            with gil:
                av_fail(c, at, f"enum index {iv} is out of range ({op.b} symbols)")
        iv = code.aux[op.a + iv]
        if iv < 0:
            with gil:
                av_fail(c, at, (<_AvroProgram>code.prog).errors[op.n >> 32])
        k = <int64_t>(<uint32_t>op.n)     # low 32 bits: the blob
        p = code.blob_ptr[k] + code.aux[op.c + iv]
        lv = code.aux[op.c + iv + 1] - code.aux[op.c + iv]
        return room_put_bin(col, p, lv, p + lv)
    elif kind == OP_BOOL:
        col = &ex.rooms[op.col]
        p = av_take(c, 1, "boolean")
        return room_put_bool(col, p[0] == 1)     # as Java's BinaryDecoder: 1 is true, anything else false
    elif kind == OP_FIXED:
        col = &ex.rooms[op.col]
        p = av_take(c, op.n, "fixed")
        return room_put_bin(col, p, op.n, c.end)
    elif kind == OP_ARRAY or kind == OP_MAP:
        col = &ex.rooms[op.col]
        ch = col.kids[0]
        if kind == OP_MAP:
            keys = &ex.rooms[op.c]
        while True:
            av_block_count(ex, c, op, kind == OP_ARRAY and op.n == 1, &count, &nbytes, kind == OP_MAP)
            if count == 0:
                break
            for k in range(count):
                if kind == OP_MAP:
                    at = c.pos
                    av_long(c, &lv, "map key length")
                    p = av_take(c, lv, "map key")
                    if not is_utf8(p, lv):
                        with gil:
                            av_fail(c, at, "map key is not valid UTF-8")
                    room_put_bin(keys, p, lv, c.end)
                    av_run(ex, code, op.a, c)
                    room_ok(ch)
                else:
                    av_run(ex, code, op.a, c)
        return room_close_list(col)
    elif kind == OP_MEMBER:
        col = &ex.rooms[op.col]
        for k in range(col.nkids):
            if k != op.c:
                room_null(col.kids[k])
        av_run(ex, code, op.a, c)
        return room_ok(col)
    elif kind == OP_NULL_COL:
        return room_null(&ex.rooms[op.col])
    elif kind == OP_DEFAULT:
        # a reader field the writer lacks: its default, encoded with the reader's type
        cursor_init(&d, code.blob_ptr[op.b], code.blob_len[op.b], 0, False, False)
        return av_run(ex, code, op.a, &d)
    elif kind == OP_ERROR:
        with gil:
            av_fail(c, c.pos, (<_AvroProgram>code.prog).errors[op.a])
    return av_skip(ex, code, i, c)


@cython.final
cdef class _AvroRunner:
    """Decodes columns of Avro bodies with per-writer programs into the reader's
    columns (kafkarec.avro.AvroDecoder)."""
    cdef list specs
    cdef list types
    cdef list child_ids
    cdef dict programs
    cdef Py_ssize_t max_items
    cdef int root_col

    def __cinit__(self, list specs, list types, Py_ssize_t max_items, int root_col=0):
        self.specs = specs
        self.types = types
        self.child_ids = [list(s[1]) for s in specs]
        self.programs = {}
        self.max_items = max_items
        self.root_col = root_col

    def set_program(self, writer_id, _AvroProgram program):
        self.programs[writer_id] = program

    def decode(self, values, writer_ids, body_offsets):
        """(the reader's struct array, string array of per-row errors); see decode_typed_column."""
        cdef list cols = [new_column(s[0], t, s[2]) for s, t in zip(self.specs, self.types)]
        cdef Py_ssize_t i, j, nkids = 0, ncols = len(cols)
        cdef _Column col
        cdef list kids
        for i in range(ncols):
            col = cols[i]
            col.children = [cols[k] for k in self.child_ids[i]]
            nkids += len(col.children)
        cdef _AvExec ex = _AvExec()
        ex.writers = self.programs
        ex.max_items = self.max_items
        ex.cols = cols
        ex.nrooms = ncols
        ex.root_col = self.root_col
        ex.rooms = <ColRoom *>calloc(max(1, ncols), sizeof(ColRoom))
        ex.kid_rooms = <ColRoom **>calloc(max(1, nkids), sizeof(ColRoom *))
        if ex.rooms == NULL or ex.kid_rooms == NULL:
            raise MemoryError()
        nkids = 0
        for i in range(ncols):
            ex.rooms[i].col = <PyObject *>cols[i]
            kids = self.child_ids[i]
            ex.rooms[i].kids = ex.kid_rooms + nkids
            ex.rooms[i].nkids = len(kids)
            for j in range(len(kids)):
                ex.kid_rooms[nkids + j] = &ex.rooms[<Py_ssize_t>kids[j]]
            nkids += len(kids)
        ex.load()
        return decode_typed_column(ex, cols[self.root_col], values, writer_ids, body_offsets)
