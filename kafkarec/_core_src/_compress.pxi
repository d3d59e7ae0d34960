# Compression on write: the bytes Kafka's producers write for each codec, at
# Kafka's default levels, with room for the v2 header where a batch is built.

cdef enum:
    XERIAL_BLOCK_SIZE = 32 * 1024    # snappy-java's block size

cdef int codec_id(object compression) except -1:
    if type(compression) is int or type(compression) is Compression:
        if 0 <= compression <= CODEC_ZSTD:
            return compression          # no Enum call on the common path
    try:
        return int(Compression(compression))
    except ValueError:
        raise EncodeError(f"Unknown compression type id: {compression}") from None


cdef object check_level(int codec, object level):
    """Kafka's accepted level ranges (CompressionType / Compression builders)."""
    if level is None:
        return None
    ranges = {1: (1, 9), 3: (1, 17), 4: (-131072, 22)}
    if codec == 0 or codec == 2:
        raise EncodeError(f"{_CODEC_NAMES[codec]} has no compression level")
    low, high = ranges[codec]
    if not (low <= level <= high or (codec == 1 and level == -1)):
        raise EncodeError(f"{_CODEC_NAMES[codec]} compression level {level} is outside "
                          f"[{low}, {high}]")
    return level


cdef bytes compressed_batch_bytes(int codec, const uint8_t *records, Py_ssize_t n, object level,
                                  bint raw_snappy):
    """V2_HEADER_SIZE bytes left for the header, then the records compressed.
    Snappy compresses straight into the returned bytes; the other libraries
    return their own bytes, copied there once."""
    cdef object data = view_of(records, n)
    if codec == 2:
        return snappy_batch_bytes(data, n, raw_snappy)
    if codec == 1:
        head, tail = gzip_parts(data, level)
        return java_gzip_header(with_header_room(head, tail), V2_HEADER_SIZE)
    return with_header_room(compress(codec, data, level, raw_snappy, 2), None)


cdef tuple gzip_parts(object data, object level):
    """gzip as Kafka's GZIPOutputStream writes it (a gzip member, level 6 unless given):
    the compressor's output and its flush, to be joined (or copied behind a header)."""
    zlib = codec_lib("zlib", "zlib")
    c = zlib.compressobj(-1 if level is None else level, zlib.DEFLATED, 31)
    return c.compress(data), c.flush()


cdef bytes java_gzip_header(bytes out, Py_ssize_t at):
    """The gzip member at ``at`` of ``out`` (new bytes, not yet shared) with the header Java's
    GZIPOutputStream writes: zlib sets XFL by level (2 at 9, 4 at 1) and OS to 3 (Unix); the
    JDK writes XFL 0 and, since JDK 16 (JDK-8244706; Kafka 4 runs on 17+), OS 255 (unknown).
    The deflate stream and trailer are zlib's either way."""
    cdef uint8_t *p = <uint8_t *>PyBytes_AS_STRING(out) + at
    if PyBytes_GET_SIZE(out) - at >= 10:
        p[8] = 0
        p[9] = 0xff
    return out


cdef bytes with_header_room(object first, object second):
    """V2_HEADER_SIZE bytes of room, then first and second (bytes-like; second may be None)."""
    cdef _Buffer a = buffer_of(first)
    cdef _Buffer b = buffer_of(second) if second is not None else None
    cdef Py_ssize_t nb = b.size if b is not None else 0
    cdef bytes out = PyBytes_FromStringAndSize(NULL, V2_HEADER_SIZE + a.size + nb)
    cdef uint8_t *p = <uint8_t *>PyBytes_AS_STRING(out) + V2_HEADER_SIZE
    if a.size:
        memcpy(p, a.ptr, a.size)
    if nb:
        memcpy(p + a.size, b.ptr, nb)
    return out


from cpython.buffer cimport PyBUF_WRITE


# Kafka writes snappy with snappy-java 1.1.10.7, whose native code is Google snappy 1.1.10; its
# matcher's choices are the bytes.  Google snappy 1.1 as the system's libsnappy (Debian 12's
# libsnappy1v5 is 1.1.9, the same bytes) writes them; cramjam (Rust's snap) and the snappy 1.2 in
# pyarrow write other valid bytes.  The system's library is taken, through its C API, once its
# answer on a known input is snappy-java's; else cramjam, valid snappy that is near Kafka's bytes.
ctypedef int (*snappy_compress_fn)(const char *, size_t, char *, size_t *) noexcept nogil
ctypedef size_t (*snappy_bound_fn)(size_t) noexcept nogil
cdef snappy_compress_fn _google_snappy_compress = NULL
cdef snappy_bound_fn _google_snappy_bound = NULL
_snappy_library = None          # (name, the ctypes handle kept loaded) or False: chosen on first use

# A known answer: snappy-java 1.1.10.7's rawCompress (kafka-clients 4.4.0's) of this input.
# cramjam and Google snappy 1.2 match "gfa jc ach dc jbah" otherwise (tests/core/test_builder.py
# checks the answer against Kafka's Java and both others against it).
_SNAPPY_INPUT = b"gfa jc ach dc jbah gfa ach ach gfa dc jbah ach ii aiaaef gfa ach dc gfa gfa dc"
_SNAPPY_ANSWER = bytes.fromhex(
    "4e54676661206a6320616368206463206a6261682067666105100114010c1118011020696920616961616566051a"
    "01123064632067666120676661206463")
_SNAPPY_SONAMES = ("libsnappy.so.1", "libsnappy.1.dylib")


# And a whole xerial block (32 KiB) of many matches, where the matcher's larger hash table decides:
# snappy-java's bytes for it by their SHA-256 (Google snappy 1.2, pyarrow's, writes others).
_SNAPPY_BLOCK_SHA256 = "198efedaefdad5131766eb72d2c371ef67f03e1b4f158c903c762969ec4be2ea"


def _snappy_block_input() -> bytes:
    """The 32 KiB known-answer input: 300 hex words, repeated 1-3 times each, in a fixed order."""
    words = [b"%x" % ((j * 40503) % 65521) * (1 + j % 3) for j in range(300)]
    return b" ".join(words[(i * 40503) % 8191 % 300] for i in range(12000))[:32768]


cdef bytes google_snappy_compress(bytes data):
    """``data`` as one raw block by the library taken (its functions set)."""
    cdef size_t size = _google_snappy_bound(len(data))
    cdef bytearray out = bytearray(size)
    if _google_snappy_compress(data, len(data), out, &size) != 0:
        return None
    return bytes(out[:size])


cdef bint google_snappy_answers(object handle) except -1:
    """The library's functions taken from ``handle``; whether its bytes for both known inputs are
    snappy-java's."""
    global _google_snappy_compress, _google_snappy_bound
    ctypes = __import__("ctypes")
    compress_at = ctypes.cast(handle.snappy_compress, ctypes.c_void_p).value
    bound_at = ctypes.cast(handle.snappy_max_compressed_length, ctypes.c_void_p).value
    _google_snappy_compress = <snappy_compress_fn><uintptr_t>compress_at
    _google_snappy_bound = <snappy_bound_fn><uintptr_t>bound_at
    if google_snappy_compress(_SNAPPY_INPUT) != _SNAPPY_ANSWER:
        return False
    block = google_snappy_compress(_snappy_block_input())
    return block is not None and __import__("hashlib").sha256(block).hexdigest() == _SNAPPY_BLOCK_SHA256


cdef object choose_snappy():
    """Google snappy from the system when it writes snappy-java's bytes, else False (cramjam)."""
    global _snappy_library, _google_snappy_compress, _google_snappy_bound
    ctypes = __import__("ctypes")
    for name in _SNAPPY_SONAMES:
        try:
            handle = ctypes.CDLL(name)
            matches = google_snappy_answers(handle)
        except (OSError, AttributeError):
            continue
        if matches:
            _snappy_library = (name, handle)
            return _snappy_library
    _google_snappy_compress = NULL
    _google_snappy_bound = NULL
    _snappy_library = False
    return False


def snappy_compressor() -> str:
    """Which snappy the writer compresses with: ``"libsnappy.so.1"`` (Google snappy 1.1, the
    system's: Kafka's own bytes) or ``"cramjam"`` (valid snappy, other matches)."""
    chosen = _snappy_library if _snappy_library is not None else choose_snappy()
    return chosen[0] if chosen else "cramjam"


cdef Py_ssize_t snappy_block_into(object view, const uint8_t *src, Py_ssize_t n, char *dst,
                                  Py_ssize_t room) except -1:
    """One raw snappy block of ``n`` bytes at ``src`` (``view``) written to ``dst``; its size."""
    cdef size_t size = room
    cdef int status
    if _google_snappy_compress != NULL:
        with nogil:
            status = _google_snappy_compress(<const char *>src, n, dst, &size)
        if status != 0:
            raise EncodeError(f"snappy could not compress {n} bytes (status {status})")
        return size
    return codec_lib("cramjam", "python-snappy").snappy.compress_raw_into(
        view, PyMemoryView_FromMemory(dst, room, PyBUF_WRITE))


cdef Py_ssize_t snappy_bound(object view, Py_ssize_t n) except -1:
    if _google_snappy_bound != NULL:
        return _google_snappy_bound(n)
    return codec_lib("cramjam", "python-snappy").snappy.compress_raw_max_len(view)


cdef bytes snappy_batch_bytes(object data, Py_ssize_t n, bint raw):
    """Snappy (xerial framing as snappy-java writes it, or raw) compressed straight into the
    batch's bytes, by the snappy that writes Kafka's bytes where the machine has it."""
    if _snappy_library is None:
        choose_snappy()
    cdef _BatchBytes out = _BatchBytes()
    cdef Py_ssize_t start, written, pos, block_bound, block
    cdef _Buffer source = buffer_of(data)
    cdef object view = data
    if raw:
        out.reserve(snappy_bound(view, n))
        out.size = snappy_block_into(view, source.ptr, n, <char *>out.data, out.capacity)
        return out.take()
    # magic, version 1, compatible 1, then (BE32 length, block) per 32 KiB of input
    block_bound = 4 + snappy_bound(view[:XERIAL_BLOCK_SIZE], min(n, XERIAL_BLOCK_SIZE))
    out.reserve(XERIAL_HEADER_SIZE + (n + XERIAL_BLOCK_SIZE - 1) // XERIAL_BLOCK_SIZE * block_bound)
    memcpy(out.data, <const char *>XERIAL_MAGIC, 8)
    memcpy(out.data + 8, b"\x00\x00\x00\x01\x00\x00\x00\x01", 8)
    pos = XERIAL_HEADER_SIZE
    cdef bint google = _google_snappy_compress != NULL
    for start in range(0, n, XERIAL_BLOCK_SIZE):
        block = min(n - start, XERIAL_BLOCK_SIZE)
        written = snappy_block_into(None if google else view[start:start + XERIAL_BLOCK_SIZE],
                                    source.ptr + start, block,
                                    <char *>out.data + pos + 4, out.capacity - pos - 4)
        kr_store_be32(out.data + pos, <uint32_t>written)
        pos += 4 + written
    out.size = pos
    return out.take()


# A zstd context sized for an unknown content size (Kafka's stream, so its bytes) holds the
# level's whole window and tables: about 1.3 MB at level 3, 15 MB at 9, 46 MB at 12, then 90, 200,
# 400 and 850 MB at 19 to 22 (ZstdCompressor.memory_size() after a batch; zstandard 0.25, zstd
# 1.5.7).  Contexts up to this size (by zstd's own estimate for the level) are kept per thread for
# the process's life: made again for every batch they would cost more than the batch (85 us at
# level 3, 4 ms at 9).  Larger ones live only as long as a holder (zstd_context) or the batch
# being compressed, as Kafka's producer frees its context when a batch closes.
ZSTD_KEPT_CONTEXT_BYTES = 16 << 20
_zstd_kept_levels = {}          # level -> whether its context is kept (zstd's estimate, once)


class _ZstdContext:
    """A thread's ZstdCompressor for one level, kept while this object lives."""
    __slots__ = ("level", "compressor", "__weakref__")

    def __init__(self, level, compressor):
        self.level = level
        self.compressor = compressor


cdef bint zstd_level_kept(object level) except -1:
    kept = _zstd_kept_levels.get(level)
    if kept is None:
        zstandard = codec_lib("zstandard", "zstandard")
        size = zstandard.ZstdCompressionParameters.from_level(level).estimated_compression_context_size()
        kept = _zstd_kept_levels[level] = size <= ZSTD_KEPT_CONTEXT_BYTES
    return kept


cdef object zstd_compressor(object level):
    """The ZstdCompressor for ``level`` on this thread: the kept one of a small level (creating
    one costs a few microseconds; one instance must not be used by two threads at once), a
    held one (zstd_context), or else a new one that goes with the batch."""
    cdef dict cache
    try:
        cache = _zstd_local.compressors
    except AttributeError:
        cache = _zstd_local.compressors = {}
    compressor = cache.get(level)
    if compressor is not None:
        return compressor
    held = getattr(_zstd_local, "held", None)
    ref = held.get(level) if held is not None else None
    context = ref() if ref is not None else None
    if context is not None:
        return context.compressor
    zstandard = codec_lib("zstandard", "zstandard")
    # Streaming like Kafka's ZstdOutputStream: no content size in the frame.
    compressor = zstandard.ZstdCompressor(level=level, write_content_size=False)
    if zstd_level_kept(level):
        cache[level] = compressor
    return compressor


def zstd_context(level=None):
    """Keep this thread's zstd compressor for ``level`` (default 3) while the returned object
    lives: a writer of many batches at a level whose context is large (the what-if) builds them
    all with one context, made once, and gives its memory back when it drops the object."""
    level = 3 if level is None else check_level(CODEC_ZSTD, level)
    compressor = zstd_compressor(level)
    if zstd_level_kept(level):
        return _ZstdContext(level, compressor)
    held = getattr(_zstd_local, "held", None)
    if held is None:
        held = _zstd_local.held = {}
    ref = held.get(level)
    context = ref() if ref is not None else None
    if context is None:
        context = _ZstdContext(level, compressor)
        held[level] = __import__("weakref").ref(context)
    return context


def zstd_contexts_held():
    """``{level: bytes}``: the zstd compression contexts this thread holds now (kept or held)."""
    out = {level: c.memory_size() for level, c in getattr(_zstd_local, "compressors", {}).items()}
    for level, ref in getattr(_zstd_local, "held", {}).items():
        context = ref()
        if context is not None:
            out[level] = context.compressor.memory_size()
    return out


cdef enum:
    LZ4_BLOCK_SIZE = 64 * 1024          # Kafka's Lz4BlockOutputStream: BLOCKSIZE_64KB

_LZ4_INCOMPRESSIBLE = 0x80000000        # a block's size with this bit: stored as it is
_lz4_mid = None                         # pyarrow's LZ4 codec at level 2, on first use


# A known answer: lz4-java 1.11's highCompressor(2) (kafka-clients 4.4.0's) on this input, one
# 64 KiB block's bytes.  pyarrow names no LZ4 version, and LZ4 1.9's HC and fast compressors
# give other bytes for it (tests/core/test_builder.py checks both against Kafka's Java).
_LZ4_MID_INPUT = (b"dighfgf dgaidhhi hib jhigj ggj dgaidhhi dgaidhhi ebfigide heija dgaidhhi jfhjadcij "
                  b"ebfigide iij biea jhigj dii biea ahdggcfif gi")
_LZ4_MID_ANSWER = bytes.fromhex(
    "f60f6469676866676620646761696468686920686962206a6869676a2067676a1700050900e66562666967696465"
    "206865696a612100966a66686a616463696a22008369696a20626965615000326469690f00c0616864676763666966"
    "206769")


cdef object lz4_mid_codec():
    """pyarrow's raw LZ4 codec at level 2, once its answer on the known input is Kafka's; a
    pyarrow without LZ4, or whose bundled LZ4 compresses otherwise, is a CodecUnavailableError
    naming what is missing (never Arrow's own exception, never bytes Kafka would not write)."""
    needs = "writing lz4 at level 1 or 2"
    pa = codec_lib("pyarrow", "pyarrow", needs)
    try:
        codec = pa.Codec("lz4_raw", compression_level=2)
        answer = codec.compress(_LZ4_MID_INPUT, asbytes=True)
    except (pa.ArrowException, ValueError, NotImplementedError) as exc:
        raise CodecUnavailableError(
            f"{needs} needs pyarrow's LZ4 codec, which pyarrow {pa.__version__} lacks "
            f"({type(exc).__name__}: {exc})") from None
    if answer != _LZ4_MID_ANSWER:
        raise CodecUnavailableError(
            f"{needs} needs LZ4 1.10's level-2 compressor (what lz4-java 1.11, Kafka 4.4's, writes); "
            f"the LZ4 bundled in pyarrow {pa.__version__} compresses the known-answer input to other "
            f"bytes, so its frames would not be Kafka's (use lz4 at level 3-17 or 9, Kafka's default)")
    return codec


cdef bytes lz4_mid_frame(object data, int magic):
    """LZ4 at level 1 or 2 as Kafka writes it: lz4-java's highCompressor(level), which is
    LZ4_compress_HC of LZ4 1.10.0 (lz4-java 1.11), whose levels 1 and 2 are both its "mid"
    matcher; LZ4 1.9's frame API (the lz4 package) compresses levels below 3 fast instead.
    Arrow's raw LZ4 codec at level 2 is that call of LZ4 1.10. The frame is Kafka's
    Lz4BlockOutputStream's: magic, FLG (version 1, independent blocks, no checksums), BD (64
    KiB blocks), the descriptor's checksum (over the magic too for magic 0, KAFKA-3160), each
    64 KiB block compressed or, when that does not shrink it, stored; then the end mark."""
    global _lz4_mid
    if _lz4_mid is None:            # made once: a batch of small records is many frames
        _lz4_mid = lz4_mid_codec()
    cdef object mid = _lz4_mid
    cdef object view = memoryview(data).cast("B")
    cdef Py_ssize_t n = len(view), start
    header = bytearray(b"\x04\x22\x4d\x18\x60\x40")
    header.append(_lz4_header_checksum(bytes(header) if magic == 0 else bytes(header[4:])))
    parts = [bytes(header)]
    for start in range(0, n, LZ4_BLOCK_SIZE):
        block = view[start:start + LZ4_BLOCK_SIZE]
        size = len(block)
        packed = mid.compress(block, asbytes=True)
        if len(packed) >= size:
            parts += [(size | _LZ4_INCOMPRESSIBLE).to_bytes(4, "little"), block]
        else:
            parts += [len(packed).to_bytes(4, "little"), packed]
    parts.append(b"\x00\x00\x00\x00")
    return b"".join(parts)


cdef object compress(int codec, object data, object level, bint raw_snappy, int magic):
    """``data`` compressed as Kafka writes ``codec`` for a ``magic`` message set (the
    legacy builder's path; v2 batches use compressed_batch_bytes, which writes the
    same bytes behind room for the header)."""
    cdef _Buffer source
    if codec == 1:
        head, tail = gzip_parts(data, level)
        return java_gzip_header(head + tail, 0)
    if codec == 2:
        source = buffer_of(data)
        return snappy_batch_bytes(data, source.size, raw_snappy)[V2_HEADER_SIZE:]
    if codec == 3:
        if level == 1 or level == 2:
            return lz4_mid_frame(data, magic)
        lz4frame = codec_lib("lz4.frame", "lz4")
        frame = lz4frame.compress(
            data, block_size=lz4frame.BLOCKSIZE_MAX64KB, block_linked=False,
            content_checksum=False, block_checksum=False, store_size=False,
            compression_level=0 if level is None or level == 9 else level)
        if magic == 0:
            # KAFKA-3160: Kafka writes magic-0 LZ4 with the header checksum over the magic too.
            fixed = bytearray(frame)
            fixed[6] = _lz4_header_checksum(bytes(fixed[0:6]))
            return bytes(fixed)
        return frame
    if codec == 4:
        # As Kafka's ZstdOutputStream behind a BufferedOutputStream: one stream, flushed (the
        # buffer's flush ends a block) then ended, so the frame ends with an empty last block.
        stream = zstd_compressor(3 if level is None else level).compressobj()
        flush_block = codec_lib("zstandard", "zstandard").COMPRESSOBJ_FLUSH_BLOCK
        return stream.compress(data) + stream.flush(flush_block) + stream.flush()
    raise EncodeError(f"Unknown compression type id: {codec}")
