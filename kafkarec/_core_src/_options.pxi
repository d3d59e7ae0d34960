# ReadOptions: how bytes are read, one object through every layer.
#
# The core (iter_batches, iter_arrow, to_arrow), the log layer (segments,
# remote ranges, selection), the CLI and the Spark sources all carry one of
# these instead of loose flags, so each option has one name and one meaning
# everywhere (e.g. max_decompressed_bytes=0 is a budget of zero bytes, not
# "use the default").  Like msgspec's Decoder: built once, frozen, reused.

from operator import index as _index

DEFAULT_MAX_DECOMPRESSED_BYTES = 64 * 1024 * 1024
from cpython.pyport cimport PY_SSIZE_T_MAX


@cython.final
cdef class ReadOptions:
    """How kafkarec reads bytes: ``verify_crc`` (check each batch's CRC before
    any of its records is used, as a consumer with ``check.crcs`` does),
    ``strict`` (reject what the format forbids even where Kafka's Java reader
    is lenient), ``max_decompressed_bytes`` (the most one compressed batch may
    inflate to; 0 allows only empty payloads) and ``file_rules`` (frame as
    Kafka's FileLogInputStream does for ``.log`` files: no magic range check
    and a tail of up to 17 bytes is ignored; otherwise as the in-memory reader
    of fetch responses).  Immutable and picklable; ``replace(**changes)``
    returns a copy with some fields changed."""
    cdef readonly bint verify_crc
    cdef readonly bint strict
    cdef readonly Py_ssize_t max_decompressed_bytes
    cdef readonly bint file_rules

    def __init__(self, *, bint verify_crc=True, bint strict=False,
                 max_decompressed_bytes=DEFAULT_MAX_DECOMPRESSED_BYTES, bint file_rules=False):
        cdef object budget
        try:
            budget = None if isinstance(max_decompressed_bytes, bool) else _index(max_decompressed_bytes)
        except TypeError:
            budget = None
        if budget is None or budget < 0:
            raise ValueError(f"max_decompressed_bytes must be a non-negative int, "
                             f"not {max_decompressed_bytes!r}")
        self.verify_crc = verify_crc
        self.strict = strict
        self.max_decompressed_bytes = min(budget, PY_SSIZE_T_MAX)
        self.file_rules = file_rules

    def replace(self, **changes) -> ReadOptions:
        """A copy with the given fields changed (unknown names are a TypeError)."""
        fields = self._fields()
        unknown = set(changes) - set(fields)
        if unknown:
            raise TypeError(f"ReadOptions has no field {', '.join(sorted(unknown))} "
                            f"(fields: {', '.join(fields)})")
        fields.update(changes)
        return ReadOptions(**fields)

    def _fields(self) -> dict:
        return {"verify_crc": self.verify_crc, "strict": self.strict,
                "max_decompressed_bytes": self.max_decompressed_bytes,
                "file_rules": self.file_rules}

    def __reduce__(self):
        # Spark ships options to executors by pickle.
        return (_read_options_from_fields, (self._fields(),))

    def __eq__(self, other):
        if not isinstance(other, ReadOptions):
            return NotImplemented
        return self._fields() == (<ReadOptions>other)._fields()

    def __hash__(self):
        return hash(tuple(self._fields().values()))

    def __repr__(self):
        return "ReadOptions(" + ", ".join(f"{k}={v!r}" for k, v in self._fields().items()) + ")"


def _read_options_from_fields(dict fields):
    return ReadOptions(**fields)


cdef ReadOptions DEFAULT_READ_OPTIONS = ReadOptions()


cdef ReadOptions resolve_options(object options, object verify_crc, object strict,
                                 object max_decompressed_bytes, object file_rules):
    """``options`` (a ReadOptions or None) with the keyword arguments a caller
    gave on top (None: not given), so ``iter_batches(data, verify_crc=False)``
    and ``iter_batches(data, ReadOptions(verify_crc=False))`` mean the same."""
    cdef ReadOptions base
    if options is None:
        base = DEFAULT_READ_OPTIONS
    elif isinstance(options, ReadOptions):
        base = <ReadOptions>options
    else:
        raise TypeError(f"options must be a kafkarec.ReadOptions or None, "
                        f"not {type(options).__name__}")
    if verify_crc is None and strict is None and max_decompressed_bytes is None and file_rules is None:
        return base
    return ReadOptions(
        verify_crc=base.verify_crc if verify_crc is None else verify_crc,
        strict=base.strict if strict is None else strict,
        max_decompressed_bytes=(base.max_decompressed_bytes if max_decompressed_bytes is None
                                else max_decompressed_bytes),
        file_rules=base.file_rules if file_rules is None else file_rules)


def read_options(options=None, /, *, verify_crc=None, strict=None, max_decompressed_bytes=None,
                 file_rules=None) -> ReadOptions:
    """``options`` (a ReadOptions or None) with the fields given as keywords on top (None: not given):
    what every reader does with its ``options`` argument and keywords."""
    return resolve_options(options, verify_crc, strict, max_decompressed_bytes, file_rules)
