/* floor_objects.c: the object floor of bench_object_floor.py -- the Python objects a full decode
   of v2 records returns (offset and timestamp ints, key and value bytes or None, headers as a
   list of (str, bytes or None)), made from fields already parsed: no framing, no varint, no
   check, no CRC.  Compiled by the benchmark for its run; not part of kafkarec.

   The fields come as one bytes blob (keys, values, header keys and values, back to back) and a
   packed array of struct field_row, one per record, then one struct header_row per header. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

struct field_row {
    int64_t offset, timestamp;
    int64_t key_at, value_at;      /* positions in the blob */
    int32_t key_len, value_len;    /* < 0: None */
    int32_t header_count, first_header;
};

struct header_row {
    int64_t key_at, value_at;
    int32_t key_len, value_len;
};

static PyObject *nullable(const char *blob, int64_t at, int32_t len) {
    if (len < 0) {
        Py_INCREF(Py_None);
        return Py_None;
    }
    return PyBytes_FromStringAndSize(blob + at, len);
}

/* One record's objects as a 5-tuple (offset, timestamp, key, value, headers): one container
   per record, as a decode's one Record object. */
static PyObject *record(const char *blob, const struct field_row *f, const struct header_row *h) {
    PyObject *t = PyTuple_New(5), *headers;
    int32_t i;
    if (t == NULL) return NULL;
    PyTuple_SET_ITEM(t, 0, PyLong_FromLongLong(f->offset));
    PyTuple_SET_ITEM(t, 1, PyLong_FromLongLong(f->timestamp));
    PyTuple_SET_ITEM(t, 2, nullable(blob, f->key_at, f->key_len));
    PyTuple_SET_ITEM(t, 3, nullable(blob, f->value_at, f->value_len));
    headers = PyList_New(f->header_count);
    PyTuple_SET_ITEM(t, 4, headers);
    for (i = 0; headers != NULL && i < f->header_count; i++) {
        const struct header_row *e = h + f->first_header + i;
        PyObject *pair = PyTuple_New(2);
        if (pair == NULL) break;
        PyTuple_SET_ITEM(pair, 0, PyUnicode_DecodeUTF8(blob + e->key_at, e->key_len, "strict"));
        PyTuple_SET_ITEM(pair, 1, nullable(blob, e->value_at, e->value_len));
        PyList_SET_ITEM(headers, i, pair);
    }
    if (PyErr_Occurred()) {
        Py_DECREF(t);
        return NULL;
    }
    return t;
}

static int views(PyObject *args, Py_buffer *blob, Py_buffer *fields, Py_buffer *headers,
                 Py_ssize_t *start, Py_ssize_t *count) {
    if (!PyArg_ParseTuple(args, "y*y*y*nn", blob, fields, headers, start, count)) return -1;
    if (*start < 0 || *count < 0
            || (size_t)(*start + *count) > (size_t)fields->len / sizeof(struct field_row)) {
        PyBuffer_Release(blob); PyBuffer_Release(fields); PyBuffer_Release(headers);
        PyErr_SetString(PyExc_ValueError, "records out of range");
        return -1;
    }
    return 0;
}

/* made(blob, fields, headers, start, count): every record's objects made and dropped in C. */
static PyObject *made(PyObject *self, PyObject *args) {
    Py_buffer blob, fields, headers;
    Py_ssize_t start, count, i;
    if (views(args, &blob, &fields, &headers, &start, &count)) return NULL;
    for (i = start; i < start + count; i++) {
        PyObject *r = record(blob.buf, (const struct field_row *)fields.buf + i, headers.buf);
        if (r == NULL) break;
        Py_DECREF(r);
    }
    PyBuffer_Release(&blob); PyBuffer_Release(&fields); PyBuffer_Release(&headers);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

/* listed(blob, fields, headers, start, count): a batch's records as a list, for a Python loop. */
static PyObject *listed(PyObject *self, PyObject *args) {
    Py_buffer blob, fields, headers;
    Py_ssize_t start, count, i;
    PyObject *out;
    if (views(args, &blob, &fields, &headers, &start, &count)) return NULL;
    out = PyList_New(count);
    for (i = 0; out != NULL && i < count; i++) {
        PyObject *r = record(blob.buf, (const struct field_row *)fields.buf + start + i, headers.buf);
        if (r == NULL) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, i, r);
    }
    PyBuffer_Release(&blob); PyBuffer_Release(&fields); PyBuffer_Release(&headers);
    return out;
}

static PyMethodDef methods[] = {
    {"made", made, METH_VARARGS, "every record's objects made and dropped in C"},
    {"listed", listed, METH_VARARGS, "a batch's records as a list of 5-tuples"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "floor_objects", NULL, -1, methods};

PyMODINIT_FUNC PyInit_floor_objects(void) { return PyModule_Create(&module); }
