# Decompression of a batch's records section, with Kafka's framing rules and a
# budget on the decompressed size.  The codec libraries do the heavy lifting
# (and release the GIL); this part validates framing so a hostile payload gets
# a clear error, and never lets one inflate past the budget.
#
#   gzip    RFC 1952 members, concatenated members read; bytes after a member
#           that are not a gzip header are ignored (JDK GZIPInputStream;
#           strict: rejected).
#   snappy  xerial framing when the 8-byte magic leads (version fields ignored,
#           concatenated streams allowed), otherwise one raw snappy block.
#           Strict: the version fields snappy-java writes (compatible version
#           1), and no stray bytes after the last block.
#   lz4     Kafka's LZ4 frame: independent blocks only; header checksum ignored
#           for magic 0 (KAFKA-3160; strict: the right one or Kafka's old one
#           over the magic bytes too), checked otherwise; stops at the first
#           EndMark (strict: nothing may follow the frame); content checksum
#           read but not checked (strict: checked).
#           A content-size field is skipped unchecked, as Kafka does (strict:
#           it must match the decoded size).  Blocks are decoded one at a time
#           straight into the output, without the GIL (cramjam's block decoder:
#           lz4's frame decoder copies its whole output holding the GIL); a frame
#           with block checksums, or a content checksum in strict mode, goes
#           through lz4's frame decoder, which verifies them.
#   zstd    frames without content size, several frames back to back.

import os

cdef object _libs = {}


cdef object codec_lib(str name, str package, str needs="decoding this batch"):
    """Import a codec library on first use; a missing one names its package and what
    ``needs`` it."""
    mod = _libs.get(name)
    if mod is None:
        try:
            mod = __import__(name, fromlist=["_"])
        except ImportError as exc:
            raise CodecUnavailableError(
                f"{needs} needs the '{package}' package (pip install {package}): {exc}"
            ) from None
        _libs[name] = mod
    return mod


from kafkarec.errors import DecompressionError, DecompressionLimitError, CodecUnavailableError

cdef tuple _CODEC_NAMES = ("none", "gzip", "snappy", "lz4", "zstd")


cdef int open_like_java(int codec, int magic, object payload, Py_ssize_t limit,
                       Py_ssize_t position) except -1:
    """Read what Kafka's decompressing stream reads when it is opened, and fail as it
    fails: a batch of 0 records is opened but never read (gzip and lz4 read their
    header; snappy-java reads its header, or decodes a stream without one as raw
    snappy; zstd reads nothing)."""
    cdef const uint8_t[::1] src
    cdef Py_ssize_t n, pos
    cdef uint8_t flags
    if codec == CODEC_ZSTD:
        return 0
    if codec == CODEC_SNAPPY:
        if len(payload) >= XERIAL_HEADER_SIZE and payload[:8] == XERIAL_MAGIC:
            return 0
        decompress(codec, magic, payload, limit, position, False)
        return 0
    if codec == CODEC_LZ4:
        unlz4(payload, limit, position, magic, False, True)
        return 0
    # gzip: java.util.zip.GZIPInputStream's constructor reads the member header.
    src = payload
    n = src.shape[0]
    if n < 10:
        raise DecompressionError("gzip payload ends inside its header (Kafka: EOFException)", position)
    if src[0] != 0x1F or src[1] != 0x8B:
        raise DecompressionError("gzip payload is not in GZIP format", position)
    if src[2] != 8:
        raise DecompressionError("gzip payload uses an unsupported compression method", position)
    flags = src[3]
    pos = 10
    if flags & 4:                                   # FEXTRA
        if n - pos < 2 or n - pos - 2 < (src[pos] | (src[pos + 1] << 8)):
            raise DecompressionError("gzip payload ends inside its header (Kafka: EOFException)", position)
        pos += 2 + (src[pos] | (src[pos + 1] << 8))
    for bit in (8, 16):                             # FNAME, FCOMMENT: zero-terminated
        if flags & bit:
            while pos < n and src[pos] != 0:
                pos += 1
            if pos >= n:
                raise DecompressionError("gzip payload ends inside its header (Kafka: EOFException)", position)
            pos += 1
    if flags & 2:                                   # FHCRC: the header's CRC-32, low 16 bits
        if n - pos < 2:
            raise DecompressionError("gzip payload ends inside its header (Kafka: EOFException)", position)
        if (src[pos] | (src[pos + 1] << 8)) != (crc32_of(&src[0], pos) & 0xFFFF):
            raise DecompressionError("gzip payload has a corrupt header (header CRC)", position)
    return 0


cdef object decompress(int codec, int magic, object payload, Py_ssize_t limit, Py_ssize_t position,
                       bint strict=False, _Scratch scratch=None):
    """Decompressed bytes-like object for `payload` (a memoryview), at most `limit` bytes;
    snappy, lz4 and zstd decode into `scratch` when given (a view of it is returned: valid
    until the scratch's next use), gzip into a buffer of its own."""
    try:
        if codec == 1:
            return gunzip(payload, limit, position, strict)
        if codec == 2:
            return unsnappy(payload, limit, position, strict, scratch)
        if codec == 3:
            return unlz4(payload, limit, position, magic, strict, False, scratch)
        if codec == 4:
            return unzstd(payload, limit, position, scratch)
    except (DecodeError, CodecUnavailableError):
        raise
    except MemoryError:
        raise
    except Exception as exc:
        raise DecompressionError(
            f"{_CODEC_NAMES[codec]} payload does not decompress: {type(exc).__name__}: {exc}",
            position) from exc
    raise UnsupportedCodecError(f"Unknown compression type id: {codec}", position)


cdef int over_budget(Py_ssize_t produced, Py_ssize_t limit, Py_ssize_t position, str codec) except -1:
    raise DecompressionLimitError(
        f"{codec} payload inflates past the decompression budget of {limit} bytes "
        f"(max_decompressed_bytes)", position)


# --- gzip --------------------------------------------------------------------

cdef bint gzip_header_follows(object data) except -1:
    """Whether `data` starts with a whole, well-formed gzip member header, as the
    JDK's GZIPInputStream checks before reading another member (anything else
    after a member is ignored)."""
    cdef const uint8_t[::1] v = data
    cdef Py_ssize_t n = v.shape[0], pos = 10
    cdef uint8_t flags
    if n < 10 or v[0] != 0x1F or v[1] != 0x8B or v[2] != 8:
        return False
    flags = v[3]
    if flags & 0x04:                                  # FEXTRA
        if n - pos < 2:
            return False
        pos += 2 + (v[pos] | (v[pos + 1] << 8))
    for bit in (0x08, 0x10):                          # FNAME, FCOMMENT: zero-terminated
        if flags & bit:
            while pos < n and v[pos] != 0:
                pos += 1
            if pos >= n:
                return False
            pos += 1
    if flags & 0x02:                                  # FHCRC: low 16 bits of the header's CRC-32
        if pos + 2 > n:
            return False
        if (crc32_of(&v[0], pos) & 0xFFFF) != <uint32_t>(v[pos] | (v[pos + 1] << 8)):
            return False
    return pos <= n


cdef object _inflate_module = None


cdef object inflate_module():
    """ISA-L's zlib-compatible inflate when installed (2-3x faster here, see
    benchmarks), else the standard library's zlib: same API, same format."""
    global _inflate_module
    if _inflate_module is None:
        try:
            if os.environ.get("KAFKAREC_INFLATE") == "zlib":
                raise ImportError("KAFKAREC_INFLATE=zlib")
            from isal import isal_zlib as mod
        except ImportError:
            import zlib as mod
        _inflate_module = mod
    return _inflate_module


cdef object gunzip(object payload, Py_ssize_t limit, Py_ssize_t position, bint strict):
    zlib = inflate_module()
    cdef list parts = []
    cdef Py_ssize_t total = 0
    cdef object data = payload
    cdef object chunk
    if len(payload) == 0:
        raise DecompressionError("gzip payload is empty", position)
    while True:
        d = zlib.decompressobj(31)
        pending = data
        while True:
            # one byte past the budget tells it was passed (the largest budget has no such byte)
            chunk = d.decompress(pending, limit - total + (limit - total < PY_SSIZE_T_MAX))
            total += len(chunk)
            if total > limit:
                over_budget(total, limit, position, "gzip")
            if chunk:
                parts.append(chunk)
            if d.eof:
                break
            pending = d.unconsumed_tail
            if not chunk and not pending:
                raise DecompressionError("gzip stream ended prematurely", position)
        data = d.unused_data
        if not gzip_header_follows(data):
            break
    if strict and len(data):
        raise DecompressionError(f"{len(data)} bytes after the last gzip member", position)
    if len(parts) == 1:
        return parts[0]
    return b"".join(parts)


# --- snappy ------------------------------------------------------------------

cdef bytes XERIAL_MAGIC = b"\x82SNAPPY\x00"
cdef enum:
    XERIAL_HEADER_SIZE = 16


cdef Py_ssize_t snappy_raw_length(const uint8_t *p, Py_ssize_t n, Py_ssize_t position) except -1:
    """The uncompressed length a raw snappy block declares (its unsigned varint preamble, 32 bits)."""
    cdef uint32_t value
    if take_uvarint(&p, p + n, True, &value) != VARINT_OK:
        raise DecompressionError("snappy block has an invalid length preamble", position)
    return <Py_ssize_t>value


cdef object unsnappy(object payload, Py_ssize_t limit, Py_ssize_t position, bint strict,
                     _Scratch scratch=None):
    cjsnappy = codec_lib("cramjam", "python-snappy").snappy
    cdef const uint8_t[::1] src = payload
    cdef const uint8_t *p = &src[0] if src.shape[0] else NULL
    cdef Py_ssize_t n = src.shape[0]
    cdef Py_ssize_t pos, block_len, out_len, total = 0
    cdef list blocks = []
    cdef object out
    if n == 0:
        raise DecompressionError("snappy payload is empty", position)
    if n < XERIAL_HEADER_SIZE or payload[:8] != XERIAL_MAGIC:
        # Raw snappy, as librdkafka and franz-go write it.
        out_len = snappy_raw_length(p, n, position)
        if out_len > limit:
            over_budget(out_len, limit, position, "snappy")
        out = bytearray(out_len) if scratch is None else scratch.room(out_len)
        cjsnappy.decompress_raw_into(payload, out)     # (fills out_len bytes, or raises)
        return out
    pos = 0
    while n - pos >= 4:
        if p[pos] == 0x82 and n - pos >= 8 and payload[pos:pos + 8] == XERIAL_MAGIC:
            if strict:
                xerial_versions(p, n, pos, position)
            pos += XERIAL_HEADER_SIZE     # the stream's header, or a concatenated stream's
            continue
        block_len = <int32_t>kr_load_be32(p + pos)
        pos += 4
        if block_len < 0 or block_len > n - pos:
            raise DecompressionError(
                f"xerial snappy block of {block_len} bytes at payload byte {pos - 4} "
                f"overruns the {n}-byte payload", position)
        out_len = snappy_raw_length(p + pos, block_len, position)
        total += out_len
        if total > limit:
            over_budget(total, limit, position, "snappy")
        blocks.append((pos, block_len, out_len))
        pos += block_len
    if strict and pos != n:
        raise DecompressionError(f"{n - pos} stray bytes after the last xerial snappy block", position)
    out = bytearray(total) if scratch is None else scratch.room(total)
    cdef Py_ssize_t at = 0
    view = memoryview(out)
    for pos, block_len, out_len in blocks:
        cjsnappy.decompress_raw_into(payload[pos:pos + block_len], view[at:at + out_len])
        at += out_len
    return out


cdef int xerial_versions(const uint8_t *p, Py_ssize_t n, Py_ssize_t pos, Py_ssize_t position) except -1:
    """Strict: a xerial header's version fields as snappy-java writes them
    (Kafka's reader ignores them): compatible version 1, version at least 1."""
    cdef int32_t version, compatible
    if n - pos < XERIAL_HEADER_SIZE:
        raise DecompressionError("truncated xerial snappy header", position)
    version = <int32_t>kr_load_be32(p + pos + 8)
    compatible = <int32_t>kr_load_be32(p + pos + 12)
    if compatible != 1 or version < 1:
        raise DecompressionError(
            f"xerial snappy header version {version}, compatible version {compatible} "
            f"(snappy-java writes 1, 1{'; these are 1, 1 little-endian, as Redpanda once wrote them' if version == compatible == 0x01000000 else ''})",
            position)
    return 0


# --- lz4 ---------------------------------------------------------------------

from cpython.bytearray cimport PyByteArray_FromStringAndSize, PyByteArray_AS_STRING, PyByteArray_Resize

cdef enum:
    LZ4_MAGIC = 0x184D2204
    LZ4_FLG_VERSION_MASK = 0xC0
    LZ4_FLG_VERSION = 0x40
    LZ4_FLG_INDEPENDENT = 0x20
    LZ4_FLG_BLOCK_CHECKSUM = 0x10
    LZ4_FLG_CONTENT_SIZE = 0x08
    LZ4_FLG_CONTENT_CHECKSUM = 0x04
    LZ4_FLG_RESERVED = 0x03
    LZ4_BD_RESERVED = 0x8F

cdef uint32_t PRIME32_1 = 2654435761U
cdef uint32_t PRIME32_2 = 2246822519U
cdef uint32_t PRIME32_3 = 3266489917U
cdef uint32_t PRIME32_4 = 668265263U
cdef uint32_t PRIME32_5 = 374761393U


cdef inline uint32_t rotl32(uint32_t x, int r) noexcept nogil:
    return (x << r) | (x >> (32 - r))


cdef uint32_t xxh32_short(const uint8_t *p, Py_ssize_t n) noexcept nogil:
    """XXH32 with seed 0 for inputs under 16 bytes (LZ4 frame descriptors)."""
    cdef uint32_t h = PRIME32_5 + <uint32_t>n
    cdef Py_ssize_t i = 0
    while i + 4 <= n:
        h += kr_load_le32(p + i) * PRIME32_3
        h = rotl32(h, 17) * PRIME32_4
        i += 4
    while i < n:
        h += p[i] * PRIME32_5
        h = rotl32(h, 11) * PRIME32_1
        i += 1
    h ^= h >> 15
    h *= PRIME32_2
    h ^= h >> 13
    h *= PRIME32_3
    h ^= h >> 16
    return h


def _lz4_header_checksum(data, /) -> int:
    """HC byte of an LZ4 frame descriptor (exposed for the builder and tests)."""
    cdef const uint8_t[::1] v = data
    return (xxh32_short(&v[0], v.shape[0]) >> 8) & 0xFF


cdef object unlz4(object payload, Py_ssize_t limit, Py_ssize_t position, int magic, bint strict,
                  bint header_only=False, _Scratch scratch=None):
    codec_lib("lz4.frame", "lz4")
    cdef const uint8_t[::1] src = payload
    cdef Py_ssize_t n = src.shape[0]
    cdef const uint8_t *p
    cdef uint8_t flg, bd
    cdef Py_ssize_t pos, descriptor_end, max_block, block, frame_end, bound = 0
    cdef uint32_t size_word
    cdef uint64_t content_size
    cdef bint rewrite = False, end_mark_flagged = False
    if n < 6:
        raise DecompressionError("lz4 stream ended prematurely", position)
    p = &src[0]
    if kr_load_le32(p) != LZ4_MAGIC:
        raise DecompressionError("lz4 stream unsupported (invalid magic bytes)", position)
    flg = p[4]
    bd = p[5]
    if (flg & LZ4_FLG_RESERVED) or (flg & LZ4_FLG_VERSION_MASK) != LZ4_FLG_VERSION:
        raise DecompressionError(f"lz4 frame flags 0x{flg:02x}: reserved bits or wrong version", position)
    if not (flg & LZ4_FLG_INDEPENDENT):
        raise DecompressionError("lz4 dependent block stream is unsupported (as in Kafka)", position)
    if (bd & LZ4_BD_RESERVED) or ((bd >> 4) & 7) < 4:
        raise DecompressionError(f"lz4 block descriptor 0x{bd:02x} is invalid", position)
    max_block = 1 << (8 + 2 * ((bd >> 4) & 7))
    descriptor_end = 6 + (8 if flg & LZ4_FLG_CONTENT_SIZE else 0)
    if n < descriptor_end + 1:
        raise DecompressionError("lz4 stream ended prematurely", position)
    if ((xxh32_short(p + 4, descriptor_end - 4) >> 8) & 0xFF) != p[descriptor_end]:
        if magic >= 1 or (strict and ((xxh32_short(p, descriptor_end) >> 8) & 0xFF)
                                     != p[descriptor_end]):
            raise DecompressionError("lz4 stream frame descriptor corrupted (header checksum)", position)
        rewrite = True      # magic 0: Kafka wrote the checksum over the magic bytes too
    if header_only:
        return None
    # Walk the blocks to the EndMark: checks sizes before anything is allocated.
    pos = descriptor_end + 1
    while True:
        if n - pos < 4:
            raise DecompressionError("lz4 stream ended before its end mark", position)
        size_word = kr_load_le32(p + pos)
        pos += 4
        block = size_word & 0x7FFFFFFF
        if block == 0:
            # Kafka masks the "uncompressed" bit before it looks for the EndMark,
            # so 0x80000000 ends the frame too; the library needs a plain 0.
            if size_word != 0:
                if strict:
                    raise DecompressionError(
                        f"lz4 EndMark 0x{size_word:08x} (the frame format's is 0)", position)
                end_mark_flagged = True
            break
        if block > max_block:
            raise DecompressionError(f"lz4 block size {block} exceeded max: {max_block}", position)
        block += 4 if flg & LZ4_FLG_BLOCK_CHECKSUM else 0
        if block > n - pos:
            raise DecompressionError("lz4 block overruns the payload", position)
        pos += block
        bound += max_block
    frame_end = pos
    if flg & LZ4_FLG_CONTENT_CHECKSUM:
        if n - pos < 4:
            raise DecompressionError("lz4 stream ended before its content checksum", position)
        frame_end = pos + 4
    if strict and frame_end != n:
        raise DecompressionError(
            f"{n - frame_end} bytes after the lz4 frame (Kafka reads only the first frame)", position)
    if not (flg & LZ4_FLG_BLOCK_CHECKSUM or (strict and flg & LZ4_FLG_CONTENT_CHECKSUM)):
        # Nothing for a checksum to verify (Kafka's producer writes neither): block by block.
        out = lz4_blocks(payload, p, descriptor_end + 1, max_block,
                         limit if limit < bound else bound, limit, position, scratch)
    else:
        out = lz4_frame_decoded(payload, flg, bd, descriptor_end, pos, frame_end, bound, limit,
                                position, strict, rewrite, end_mark_flagged)
    if strict and flg & LZ4_FLG_CONTENT_SIZE:
        # Kafka skips the field; the LZ4 frame format forbids a wrong one.
        content_size = kr_load_le64(p + 6)
        if content_size != <uint64_t>len(out):
            raise DecompressionError(
                f"lz4 frame declares a content size of {content_size} bytes but holds {len(out)}",
                position)
    return out


cdef object lz4_blocks(object payload, const uint8_t *p, Py_ssize_t pos, Py_ssize_t max_block,
                       Py_ssize_t cap, Py_ssize_t limit, Py_ssize_t position, _Scratch scratch=None):
    """The frame's blocks from `pos` (the walk checked their sizes and the EndMark), each
    decoded straight into the output by cramjam's lz4 block decoder (liblz4's
    LZ4_decompress_safe, as the frame decoder runs it), which releases the GIL while it
    works: other threads of the process keep running.  A block may inflate to at most the
    frame's block size; a size word with the high bit set holds the block as is.  `cap`:
    the most the frame can decode to within the budget; `scratch`: the output's room (a view of
    it is returned), else a bytearray of its own."""
    cramjam = codec_lib("cramjam", "python-snappy")     # python-snappy brings cramjam
    cdef object decode_into = cramjam.lz4.decompress_block_into
    cdef object error = cramjam.DecompressionError
    cdef bytearray out = None
    cdef object view
    cdef object spare = None, into = None
    cdef char *dst
    if scratch is None:
        out = PyByteArray_FromStringAndSize(NULL, cap)
        view = memoryview(out)
        dst = PyByteArray_AS_STRING(out)
    else:
        view = scratch.room(cap)
        dst = scratch.start()
    cdef Py_ssize_t total = 0, size, written, k = 0
    cdef uint32_t size_word
    while True:
        size_word = kr_load_le32(p + pos)
        size = size_word & 0x7FFFFFFF
        if size == 0:
            break
        pos += 4
        if size_word & 0x80000000:
            if size > limit - total:
                over_budget(total + size, limit, position, "lz4")
            with nogil:
                memcpy(dst + total, p + pos, size)
            total += size
        else:
            # Room for a whole block, or (at the budget's edge) a scratch block first, so
            # that a block past the budget is told from a corrupt one.
            into = view[total:total + max_block] if cap - total >= max_block else None
            if into is None:
                if spare is None:
                    spare = bytearray(max_block)
                into = spare
            try:
                written = decode_into(payload[pos:pos + size], into, output_len=max_block)
            except error:
                raise DecompressionError(
                    f"lz4 payload does not decompress: block {k} at payload byte {pos - 4} is "
                    f"corrupt or inflates past the frame's {max_block}-byte block size",
                    position) from None
            if into is spare:
                if written > limit - total:
                    over_budget(total + written, limit, position, "lz4")
                memcpy(dst + total, PyByteArray_AS_STRING(spare), written)
            total += written
        pos += size
        k += 1
    into = None             # the slice's hold on the output, then the view's: it may shrink
    if out is None:
        return view[:total]
    view.release()
    PyByteArray_Resize(out, total)
    return out


cdef object lz4_frame_decoded(object payload, uint8_t flg, uint8_t bd, Py_ssize_t descriptor_end,
                              Py_ssize_t end_mark_end, Py_ssize_t frame_end, Py_ssize_t bound,
                              Py_ssize_t limit, Py_ssize_t position, bint strict, bint rewrite,
                              bint end_mark_flagged):
    """The frame through the lz4 library's frame decoder, for the frames that carry
    a checksum it verifies (block checksums; the content checksum in strict mode).
    It holds the GIL throughout."""
    lz4frame = codec_lib("lz4.frame", "lz4")
    if flg & LZ4_FLG_CONTENT_SIZE or (flg & LZ4_FLG_CONTENT_CHECKSUM and not strict):
        rewrite = True      # Kafka skips both unchecked; strict lets the library check them
    frame = payload[:frame_end]
    if end_mark_flagged:
        # Blocks, then a plain EndMark (no content checksum: its place is taken).
        frame = normalized_lz4_frame(payload, flg, bd, descriptor_end, end_mark_end - 4,
                                     False) + bytes(4)
    elif rewrite:
        frame = normalized_lz4_frame(payload, flg, bd, descriptor_end,
                                     frame_end if strict else end_mark_end, strict)
    d = lz4frame.LZ4FrameDecompressor()
    cdef Py_ssize_t cap = limit + 1 if limit < bound else bound + 1
    out = d.decompress(frame, max_length=cap)
    if len(out) > limit:
        over_budget(len(out), limit, position, "lz4")
    if not d.eof:
        raise DecompressionError("lz4 frame did not decode to its end mark", position)
    return out


cdef object normalized_lz4_frame(object payload, uint8_t flg, uint8_t bd,
                                 Py_ssize_t descriptor_end, Py_ssize_t frame_end, bint keep_checksum):
    """Re-head a frame the lz4 library would refuse but Kafka reads: a magic-0
    header checksum, or content size/checksum fields Kafka skips unchecked."""
    cdef uint8_t header[7]
    flg &= ~LZ4_FLG_CONTENT_SIZE
    if not keep_checksum:
        flg &= ~LZ4_FLG_CONTENT_CHECKSUM
    kr_store_be32(header, 0x04224D18)      # the magic, little-endian on the wire
    header[4] = flg
    header[5] = bd
    header[6] = (xxh32_short(header + 4, 2) >> 8) & 0xFF
    return PyBytes_FromStringAndSize(<char *>header, 7) + payload[descriptor_end + 1:frame_end]


# --- zstd --------------------------------------------------------------------

cdef enum:
    ZSTD_MAGIC = 0xFD2FB528
    ZSTD_SKIPPABLE_MASK = 0xFFFFFFF0
    ZSTD_SKIPPABLE = 0x184D2A50
    ZSTD_MAX_WINDOW = 1 << 27      # libzstd's default decoder limit, as Kafka uses it

# zstandard's compressor and decompressor objects must not be used by two threads at once (a
# reader decodes windows on several): each thread keeps its own, reused.
import threading as _threading
cdef object _zstd_local = _threading.local()


cdef int zstd_walk(const uint8_t *p, Py_ssize_t n, Py_ssize_t position) except -1:
    """Check that the payload is whole zstd frames: a truncated one would otherwise
    read as a short, silent success."""
    cdef Py_ssize_t pos = 0, block
    cdef uint32_t magic, header
    cdef uint8_t fhd
    cdef int fcs_flag, last
    cdef int frames = 0
    while pos < n:
        if n - pos < 4:
            raise DecompressionError(f"{n - pos} stray bytes after the zstd frames", position)
        magic = kr_load_le32(p + pos)
        if (magic & ZSTD_SKIPPABLE_MASK) == ZSTD_SKIPPABLE:
            if n - pos < 8 or kr_load_le32(p + pos + 4) > <uint32_t>(n - pos - 8):
                raise DecompressionError("truncated zstd skippable frame", position)
            pos += 8 + kr_load_le32(p + pos + 4)
            continue
        if magic != ZSTD_MAGIC:
            raise DecompressionError(
                f"zstd payload byte {pos}: not a zstd frame (magic 0x{magic:08x})", position)
        pos += 4
        if pos >= n:
            raise DecompressionError("truncated zstd frame header", position)
        fhd = p[pos]
        fcs_flag = fhd >> 6
        pos += 1
        pos += 0 if (fhd & 0x20) else 1                      # window descriptor
        pos += (0, 1, 2, 4)[fhd & 3]                          # dictionary id
        pos += (1 if (fhd & 0x20) else 0, 2, 4, 8)[fcs_flag]  # frame content size
        while True:
            if n - pos < 3:
                raise DecompressionError("truncated zstd frame (block header)", position)
            header = p[pos] | (p[pos + 1] << 8) | (p[pos + 2] << 16)
            pos += 3
            last = header & 1
            block = header >> 3
            if ((header >> 1) & 3) == 1:
                block = 1                                     # RLE: one byte repeated
            elif ((header >> 1) & 3) == 3:
                raise DecompressionError("zstd block of reserved type", position)
            if block > n - pos:
                raise DecompressionError("truncated zstd frame (block data)", position)
            pos += block
            if last:
                break
        if fhd & 0x04:
            if n - pos < 4:
                raise DecompressionError("truncated zstd frame (checksum)", position)
            pos += 4
        frames += 1
    if frames == 0:
        raise DecompressionError("zstd payload holds no frame", position)
    return 0


cdef object unzstd(object payload, Py_ssize_t limit, Py_ssize_t position, _Scratch scratch=None):
    cdef const uint8_t[::1] src = payload
    cdef Py_ssize_t n = src.shape[0]
    cdef Py_ssize_t room, got, filled
    if n == 0:
        raise DecompressionError("zstd payload is empty", position)
    zstd_walk(&src[0], n, position)
    try:
        decompressor = _zstd_local.decompressor
    except AttributeError:
        zstandard = codec_lib("zstandard", "zstandard")
        decompressor = _zstd_local.decompressor = zstandard.ZstdDecompressor(max_window_size=ZSTD_MAX_WINDOW)
    if scratch is not None:
        # Into the read's buffer: as much room as the last batches needed, at least 8x the
        # payload, at most one byte past the budget.  A payload that fills it (too big for it,
        # or past the budget), or that fails, is read again below, the one place that tells
        # the budget's error from the payload's.
        room = max(scratch.size(), 8 * n, 256 * 1024)
        if room > limit:
            room = limit + 1        # (limit < room: no overflow, whatever the budget)
        out = scratch.room(room)
        filled = 0
        try:
            reader = decompressor.stream_reader(payload, read_across_frames=True)
            while filled < room:
                got = reader.readinto(out[filled:])
                if not got:
                    break
                filled += got
        except Exception:  # noqa: BLE001 - zstandard's ZstdError: said by the read below
            filled = room
        if filled < room:
            return out[:filled]
    reader = decompressor.stream_reader(payload, read_across_frames=True)
    # read(n) allocates n bytes up front: ask for a likely size, not the whole budget.
    cdef Py_ssize_t want = max(8 * n, 256 * 1024)
    if want > limit:
        want = limit + 1
    cdef Py_ssize_t total
    out = reader.read(want)
    total = len(out)
    if total == want and total <= limit:
        parts = [out]
        while True:
            more = reader.read(min(limit - total + 1, total))
            if not more:
                break
            parts.append(more)
            total += len(more)
            if total > limit:
                break
        out = b"".join(parts)
    if total > limit:
        over_budget(total, limit, position, "zstd")
    if scratch is not None:
        scratch.room(total + 1)         # the next batch's room
    return out


def _inflate_backend() -> str:
    """Which inflate implementation gzip payloads go through ("isal" or "zlib")."""
    return inflate_module().__name__.split(".")[0]
