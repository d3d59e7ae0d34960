# Keyed state (kafkarec.table): which record is each key's last, found with bounded memory.
#
# Kafka's log cleaner finds the records compaction keeps with a fixed-size map from a key's
# digest to the offset of its last record (SkimpyOffsetMap: MD5, load factor 0.9), filled in a
# first pass over the log and consulted in a second.  KeyOffsetMap is that map: 16 bytes of
# digest (key_digest.h) and 8 of offset per slot, open addressing, a fixed budget of bytes.
# It starts small and doubles up to the budget, so a partition with few keys costs little.
# When a partition has more keys than fit, kafkarec.table splits the keys by their digest's
# low bits into buckets and runs the two passes once per bucket: memory stays the budget.

cdef extern from "key_digest.h":
    void kafkarec_key_digest(const uint8_t *data, size_t n, uint64_t seed, uint64_t *out) noexcept nogil

cdef extern from "bulk_writer.h":
    int kafkarec_bin_get(const kafkarec_bin_col *c, const int mode, Py_ssize_t i,
                         const uint8_t **p, Py_ssize_t *n) noexcept nogil

from libc.stdlib cimport calloc, free

# Bytes per slot: two digest words and the offset (stored +1, so 0 marks an empty slot).
KEY_MAP_SLOT_BYTES = 24
# Kafka's SkimpyOffsetMap is full at 90% of its slots (LogCleaner's dedupe buffer load factor).
KEY_MAP_LOAD_FACTOR = 0.9
# A map smaller than this could not hold a useful number of keys per pass.
KEY_MAP_MIN_BYTES = 1024
# Where a map starts before it doubles (up to its budget).
KEY_MAP_START_BYTES = 1 << 20
# Buckets are split by one more digest bit at a time; 2^40 buckets would be 2^40 passes.
KEY_MAP_MAX_LEVEL = 40


@cython.final
cdef class KeyOffsetMap:
    """A fixed-size map from a record key's 128-bit digest to the offset of its last record.

    ``size_bytes`` is the whole budget (24 bytes a slot, full at 90% of the slots, as Kafka's
    cleaner); the map starts at 1 MiB and doubles as keys come, up to it.  :meth:`start` empties it and chooses the bucket of keys the next passes are
    about: ``(level, bucket)`` takes the keys whose digest's low ``level`` bits are
    ``bucket`` (level 0: every key).  Columns are pyarrow arrays: keys and values binary
    (or large binary), offsets int64, one row each, in offset order.
    """
    cdef uint64_t *slots
    cdef readonly Py_ssize_t capacity
    cdef readonly Py_ssize_t max_capacity
    cdef readonly Py_ssize_t max_entries
    cdef readonly Py_ssize_t entries
    cdef readonly int level
    cdef readonly uint64_t bucket
    cdef uint64_t mask
    cdef uint64_t seed

    def __cinit__(self, Py_ssize_t size_bytes, uint64_t seed=0):
        if size_bytes < KEY_MAP_MIN_BYTES:
            raise ValueError(f"a key map needs at least {KEY_MAP_MIN_BYTES} bytes, not {size_bytes}")
        self.max_capacity = size_bytes // KEY_MAP_SLOT_BYTES
        self.seed = seed
        self._allocate(min(self.max_capacity, KEY_MAP_START_BYTES // KEY_MAP_SLOT_BYTES))

    cdef int _allocate(self, Py_ssize_t capacity) except -1:
        """Empty slots for ``capacity`` keys' worth (calloc: zeroed pages cost nothing until used)."""
        cdef uint64_t *slots = <uint64_t *>calloc(capacity, KEY_MAP_SLOT_BYTES)
        if slots == NULL:
            raise MemoryError(f"a key map of {capacity * KEY_MAP_SLOT_BYTES} bytes")
        free(self.slots)
        self.slots = slots
        self.capacity = capacity
        self.max_entries = max(1, int(capacity * KEY_MAP_LOAD_FACTOR))
        return 0

    cdef int _grow(self) except -1:
        """Double the slots (up to the budget) and put every key back."""
        cdef uint64_t *old = self.slots
        cdef Py_ssize_t old_capacity = self.capacity, i
        cdef uint64_t *slot
        self.slots = NULL
        try:
            self._allocate(min(self.max_capacity, 2 * old_capacity))
        except MemoryError:
            self.slots = old
            self.capacity = old_capacity
            raise
        for i in range(old_capacity):
            if old[3 * i + 2] != 0:
                slot = self._slot(old + 3 * i)
                slot[0] = old[3 * i]
                slot[1] = old[3 * i + 1]
                slot[2] = old[3 * i + 2]
        free(old)
        return 0

    def __dealloc__(self):
        free(self.slots)

    def start(self, int level=0, uint64_t bucket=0):
        """Empty the map and take, from now on, only the keys of bucket ``bucket`` of level
        ``level`` (the keys whose digest's low ``level`` bits equal ``bucket``)."""
        if level < 0 or level > KEY_MAP_MAX_LEVEL:
            raise ValueError(f"level must be 0..{KEY_MAP_MAX_LEVEL}, not {level}")
        self.mask = (<uint64_t>1 << level) - 1
        if bucket & ~self.mask:
            raise ValueError(f"bucket {bucket} does not exist at level {level}")
        self.level = level
        self.bucket = bucket
        memset(self.slots, 0, self.capacity * KEY_MAP_SLOT_BYTES)
        self.entries = 0

    cdef inline uint64_t *_slot(self, const uint64_t *digest) noexcept nogil:
        """The slot holding ``digest``, or the empty slot where it would go (linear probing;
        the load factor keeps an empty slot in every probe sequence)."""
        cdef uint64_t i = digest[0] % <uint64_t>self.capacity
        cdef uint64_t *slot
        while True:
            slot = self.slots + 3 * i
            if slot[2] == 0 or (slot[0] == digest[0] and slot[1] == digest[1]):
                return slot
            i += 1
            if i == <uint64_t>self.capacity:
                i = 0

    def digest(self, bytes key):
        """The 16 bytes the map keeps for ``key`` (two little-endian words)."""
        cdef uint64_t d[2]
        kafkarec_key_digest(<const uint8_t *>PyBytes_AS_STRING(key), <size_t>len(key), self.seed, d)
        return d[0].to_bytes(8, "little") + d[1].to_bytes(8, "little")

    def put(self, keys, offsets):
        """Record each row's offset as the last of its key (rows with a null key and keys of
        other buckets are passed over).  False as soon as a new key would pass the load
        factor: the map is then unusable until :meth:`start` (the caller splits the bucket)."""
        cdef Py_ssize_t n = len(offsets), i
        cdef _BinaryInput k = _key_column(keys, n, "keys")
        cdef const int64_t *off = _int64_column(offsets)
        cdef const uint8_t *p
        cdef Py_ssize_t size
        cdef uint64_t digest[2]
        cdef uint64_t *slot
        for i in range(n):
            kafkarec_bin_get(&k.c, k.c.mode, i, &p, &size)
            if size < 0:
                continue
            kafkarec_key_digest(p, <size_t>size, self.seed, digest)
            if (digest[1] & self.mask) != self.bucket:
                continue
            slot = self._slot(digest)
            if slot[2] == 0:
                if self.entries == self.max_entries:
                    if self.capacity == self.max_capacity:
                        return False
                    self._grow()
                    slot = self._slot(digest)
                self.entries += 1
                slot[0] = digest[0]
                slot[1] = digest[1]
            slot[2] = <uint64_t>off[i] + 1
        return True

    def latest(self, keys, values, offsets):
        """A pyarrow boolean array: True where a row is its key's last record (as :meth:`put`
        saw them) and not a tombstone - the rows of the keyed state, for this bucket."""
        pa = pyarrow()
        cdef Py_ssize_t n = len(offsets), i
        cdef _BinaryInput k = _key_column(keys, n, "keys")
        cdef _BinaryInput v = _key_column(values, n, "values")
        cdef const int64_t *off = _int64_column(offsets)
        cdef const uint8_t *p
        cdef Py_ssize_t size
        cdef uint64_t digest[2]
        cdef uint64_t *slot
        cdef bytearray bits = bytearray((n + 7) >> 3)
        cdef uint8_t *out = bits
        for i in range(n):
            kafkarec_bin_get(&v.c, v.c.mode, i, &p, &size)
            if size < 0:
                continue                                   # a tombstone is never a row
            kafkarec_bin_get(&k.c, k.c.mode, i, &p, &size)
            if size < 0:
                continue                                   # nor is a record without a key
            kafkarec_key_digest(p, <size_t>size, self.seed, digest)
            if (digest[1] & self.mask) != self.bucket:
                continue
            slot = self._slot(digest)
            if slot[2] == <uint64_t>off[i] + 1:
                out[i >> 3] |= <uint8_t>(1 << (i & 7))
        return pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer(bits)])


cdef _BinaryInput _key_column(object column, Py_ssize_t n, str name):
    """A binary or large binary pyarrow array, read from its buffers (binary_input)."""
    cdef int kind = pyarrow_kind(column)
    if kind != KAFKAREC_BIN_ARROW32 and kind != KAFKAREC_BIN_ARROW64:
        raise TypeError(f"{name} must be a pyarrow binary array, not {type(column).__name__}")
    if len(column) != n:
        raise ValueError(f"{name} has {len(column)} rows, offsets have {n}")
    return binary_input(column, n, name)


cdef const int64_t *_int64_column(object column) except NULL:
    """The values of a pyarrow int64 array without nulls (a record's offset is never null)."""
    if pyarrow_kind(column) != ARROW_INT64:
        raise TypeError(f"offsets must be a pyarrow int64 array, not {type(column).__name__}")
    if column.null_count:
        raise ValueError("offsets must not be null")
    cdef list bufs = column.buffers()
    cdef const int64_t *values = <const int64_t *>pyarrow_address(bufs[1])
    if values == NULL:
        if len(column):
            raise ValueError("offsets have no data buffer")
        return <const int64_t *>&_NO_OFFSETS
    return values + <Py_ssize_t>column.offset


cdef int64_t _NO_OFFSETS = 0
