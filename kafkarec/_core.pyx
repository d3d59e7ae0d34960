# kafkarec._core: the compiled heart of kafkarec.
#
# One extension module, assembled from parts in _core_src/ that each do one job:
#   _reader.pxi   the one bounds check (span_take) and the cursor over it: every variable-length
#                 read (v2 and legacy records, varints, internal-topic messages, control values,
#                 Avro and Protobuf values) goes through it; fixed-size
#                 headers (batch, legacy message, codec frame headers) are read at known offsets
#                 after one size check of the whole header
#   _varint.pxi   zig-zag varint / varlong and unsigned varints (Kafka's message protocol)
#   _buffer.pxi   zero-copy ownership of the caller's buffer
#   _crc.pxi      CRC-32C (hardware, via the `crc32c` package) and CRC-32
#   _options.pxi  ReadOptions: how bytes are read, one object for every layer
#   _batch.pxi    framing a buffer into batches; the v2 batch header
#   _records.pxi  v2 records and the record iterator
#   _codecs.pxi   decompression with Kafka's framing rules and a budget
#   _legacy.pxi   magic 0/1 message sets and compressed wrappers
#   _builder.pxi  writing v2 batches record by record
#   _compress.pxi compression on write, as Kafka's producers write each codec
#   _builder_bulk.pxi  whole columns into a batch in one C loop (bulk_writer.h)
#   _legacy_builder.pxi  writing magic 0/1 message sets
#   _restamp.pxi  broker-style in-place re-stamping
#   _column.pxi   the one Arrow column builder (every column below) and the one short copy
#   records straight into Arrow columns, a room per job:
#     _arrow_schema.pxi  the schema and the projections' layouts
#     _key_table.pxi     the key bound's keys, tested without the GIL
#     _views.pxi         the view layout of key and value (binary_view into the bytes read)
#     _row_columns.pxi   the row columns of a chunk (the column builder of the schema)
#     _full_rows.pxi     a v2 batch's records whole, by the record loop without the GIL
#     _batch_columns.pxi the wide layout's batch columns
#     _meta_rows.pxi     a v2 batch's offsets and timestamps alone (the meta-only walk)
#     _runs.pxi          runs of whole batches in one nogil section
#     _arrow_iter.pxi    iter_arrow's chunks: the batch loop, its errors; to_arrow
#     _rows.pxd          the structs those loops fill (plain C)
#   _kmsg.pxi     Kafka's message protocol (internal topics) by compiled schema plans, into dicts or columns
#   _control.pxi  control record keys and markers; KRaft control values through the registered plan codec
#   _transactions.pxi  what a read_committed consumer would not see (aborted transactions, the LSO)
#   _typed_rows.pxi  the one driver over a column of typed values
#   _avro.pxi, _protobuf.pxi  Avro and Protobuf bodies as per-row steps of that driver
#   _json.pxi     where a JSON payload's value ends (pyarrow parses it)
#   _keymap.pxi   each key's last offset in a fixed-size map (keyed state, kafkarec.table)
cimport cython
from libc.stdint cimport (int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uintptr_t,
                          uint32_t, uint64_t, INT32_MAX, INT64_MAX)
from libc.string cimport memcpy, memset
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE, PyBUF_WRITABLE
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.unicode cimport PyUnicode_DecodeUTF8
from cpython.object cimport PyObject_GenericGetAttr
from cpython.ref cimport PyObject, Py_XDECREF, Py_INCREF
from cpython.memoryview cimport PyMemoryView_FromMemory
from cpython.buffer cimport PyBUF_READ, PyBuffer_FillInfo

from _hton cimport (kr_load_be16, kr_load_be32, kr_load_be64,
                    kr_store_be16, kr_store_be32, kr_store_be64, kr_load_le32, kr_load_le64,
                    kr_load_le_f32, kr_load_le_f64)
from _rows cimport (KeyTable, FullRows, BatchRows, V2Run, MetaRows, ROWS_DONE, ROWS_FAULT,
                   ROWS_SLOW)
from _always_inline cimport (always_inline_int, always_inline_bint, always_inline_i32, always_inline_i64,
                             always_inline_ssize, always_inline_cptr)

from kafkarec.errors import (KafkaRecError, DecodeError, TruncatedError, CorruptBatchError,
                             InvalidRecordError, ChecksumError,
                             UnsupportedCodecError, ColumnOverflowError, ProtobufDecodeError,
                             UsageError)
from kafkarec.enums import Compression, TimestampType, ControlRecordType

COMPILED = True

include "_core_src/_reader.pxi"
include "_core_src/_varint.pxi"
include "_core_src/_buffer.pxi"
include "_core_src/_crc.pxi"
include "_core_src/_options.pxi"
include "_core_src/_batch.pxi"
include "_core_src/_records.pxi"
include "_core_src/_codecs.pxi"
include "_core_src/_legacy.pxi"
include "_core_src/_builder.pxi"
include "_core_src/_compress.pxi"
include "_core_src/_builder_bulk.pxi"
include "_core_src/_legacy_builder.pxi"
include "_core_src/_restamp.pxi"
include "_core_src/_column.pxi"
include "_core_src/_arrow_schema.pxi"
include "_core_src/_views.pxi"
include "_core_src/_key_table.pxi"
include "_core_src/_row_columns.pxi"
include "_core_src/_full_rows.pxi"
include "_core_src/_batch_columns.pxi"
include "_core_src/_meta_rows.pxi"
include "_core_src/_runs.pxi"
include "_core_src/_arrow_iter.pxi"
include "_core_src/_kmsg.pxi"
include "_core_src/_control.pxi"
include "_core_src/_transactions.pxi"
include "_core_src/_typed_rows.pxi"
include "_core_src/_avro.pxi"
include "_core_src/_protobuf.pxi"
include "_core_src/_json.pxi"
include "_core_src/_keymap.pxi"
include "_core_src/_partitioner.pxi"
include "_core_src/_evidence.pxi"
