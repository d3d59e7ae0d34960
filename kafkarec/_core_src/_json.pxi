# JSON payloads: where each value's text ends.  pyarrow's JSON reader parses and
# types the values, one record per line inside a {"v": ...} wrapper; it cannot
# tell a payload that continues the wrapper (`1, "x": 2`) from one value, and
# it needs one line per record.  This scan gives both answers: a payload must be
# exactly one JSON value (brackets balanced, strings closed, nothing but
# whitespace after it), and a raw control character inside a string is an
# error (RFC 8259 section 7).  The grammar inside the value is pyarrow's to check.

cdef inline bint _json_space(uint8_t b) nogil:
    return b == 0x20 or b == 0x09 or b == 0x0a or b == 0x0d


cdef inline bint _json_delimiter(uint8_t b) nogil:
    return _json_space(b) or b == 0x2c or b == 0x3a or b == 0x5b or b == 0x5d or b == 0x7b \
        or b == 0x7d or b == 0x22


cdef Py_ssize_t json_value_problem(const uint8_t *p, Py_ssize_t n, const char **why) noexcept nogil:
    """-1 when p[0:n] is one JSON value with whitespace around it; else the
    byte position of the problem, with its reason in why."""
    cdef Py_ssize_t i = 0, depth = 0
    cdef uint8_t b
    while i < n and _json_space(p[i]):
        i += 1
    if i == n:
        why[0] = "no JSON value (the payload is empty or whitespace)"
        return i
    while True:
        b = p[i]
        if b == 0x22:                       # a string: to its closing quote, escapes skipped
            i += 1
            while True:
                if i >= n:
                    why[0] = "a string is not closed"
                    return n
                b = p[i]
                if b == 0x5c:
                    i += 2
                    continue
                if b == 0x22:
                    i += 1
                    break
                if b < 0x20:
                    why[0] = "a raw control character inside a string (JSON needs it escaped)"
                    return i
                i += 1
        elif b == 0x5b or b == 0x7b:
            depth += 1
            i += 1
        elif b == 0x5d or b == 0x7d:
            if depth == 0:
                why[0] = "a closing bracket with nothing open"
                return i
            depth -= 1
            i += 1
        elif depth == 0:                    # a top-level scalar: to the next delimiter
            while i < n and not _json_delimiter(p[i]):
                i += 1
        else:
            i += 1
        if depth == 0:
            break
        if i >= n:
            why[0] = "an array or object is not closed"
            return n
    while i < n and _json_space(p[i]):
        i += 1
    if i < n:
        why[0] = "text after the JSON value"
        return i
    return -1


def json_value_problems(bodies):
    """[(row, byte position in the payload, reason)] for the payloads of a
    large_binary array that are not exactly one JSON value (null rows are skipped)."""
    bufs = bodies.buffers()
    cdef Py_ssize_t n = len(bodies), base = bodies.offset, i, j, at
    cdef const uint8_t *valid = <const uint8_t *>pyarrow_address(bufs[0])
    cdef const int64_t *offs = <const int64_t *>pyarrow_address(bufs[1])
    cdef const uint8_t *data = <const uint8_t *>pyarrow_address(bufs[2])
    cdef const char *why = NULL
    cdef uint8_t empty = 0
    out = []
    if data == NULL:
        data = &empty
    for i in range(n):
        j = base + i
        if valid != NULL and not (valid[j >> 3] >> (j & 7)) & 1:
            continue
        at = json_value_problem(data + offs[j], offs[j + 1] - offs[j], &why)
        if at >= 0:
            out.append((i, at, why.decode()))
    return out
