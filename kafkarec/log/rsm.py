"""Segments as Aiven's tiered-storage plugin stores them, read back as Kafka's bytes.

The plugin (Aiven-Open/tiered-storage-for-apache-kafka, its ``RemoteStorageManager``) stores
each segment as three objects under ``<key.prefix><topic>-<topic id>/<partition>/<20-digit
start offset>-<segment id>``:

* ``.log``: the segment cut into chunks of ``chunk.size`` original bytes, each chunk one zstd
  frame when ``compression.enabled``, then ``IV (12 bytes) || AES-256-GCM ciphertext || tag
  (16 bytes)`` when ``encryption.enabled`` (the segment's data key, its AAD authenticated with
  every chunk); chunks back to back, nothing else.  Without either option, a byte copy.
* ``.indexes``: the side files back to back (offset index, time index, producer snapshot,
  leader-epoch checkpoint, transaction index), each one blob, encrypted like a chunk, never
  compressed.
* ``.rsm-manifest``: JSON: the chunk index (``fixed`` sizes, or ``variable``: the stored
  sizes as a zstd frame of a small big-endian code, base64), where each side file sits in
  ``.indexes``, whether compression and encryption are on, and the data key wrapped with RSA
  (OAEP, SHA3-512 for the hash and for MGF1) by the key pair it names (``<id>:<base64>``).

:func:`parse_manifest` reads a manifest, :class:`KeyRing` unwraps data keys with the private
keys the user gives (the plugin's ``encryption.key.pairs`` config), :class:`SegmentObject`
reads any byte range of the original segment fetching, decrypting and decompressing only the
chunks that hold it (a few chunks in memory), and :func:`side_files` splits ``.indexes``.
Anything that does not turn back into the original bytes (a manifest that is not one, a chunk
index that covers more or fewer bytes than its object holds, a wrong or missing key, a failed
tag, a chunk of the wrong size) raises :class:`kafkarec.RemoteObjectError` naming the object and
the chunk.  Every size a manifest or a chunk claims is bounded before anything is allocated for
it: the manifest's numbers are Java ints as the plugin's are, chunk positions are computed, the
chunk-size code and each compressed chunk are decompressed only up to what they may hold.

    >>> from kafkarec.log import rsm, storage                                   # doctest: +SKIP
    >>> st, root = storage.resolve("/var/tiered")                             # doctest: +SKIP
    >>> keys = rsm.KeyRing.from_config(rsm.load_config("rsm.properties"))     # doctest: +SKIP
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import secrets
import struct
import sys
from array import array
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Sequence
from itertools import accumulate
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

from kafkarec._core import DEFAULT_MAX_DECOMPRESSED_BYTES
from kafkarec._extras import require
from kafkarec.log._java_properties import load_properties
from kafkarec.errors import RemoteObjectError, TransformedSegmentError

__all__ = ["SIDE_FILES", "ChunkIndex", "FixedPositions", "Encryption", "SegmentManifest", "parse_manifest",
           "decode_chunk_sizes", "KeyRing", "TieredStorageConfig", "load_config", "Tiered", "load_tiered",
           "tiered_of", "SegmentObject", "open_object", "check_object_size", "side_file", "side_files",
           "read_manifests", "oaep_sha3_512_decrypt",
           "MANIFEST_LIMIT"]

#: The side files in ``.indexes``, in the plugin's order, by the manifest's names.
SIDE_FILES = ("offset", "timestamp", "producerSnapshot", "leaderEpoch", "transaction")
IV_BYTES = 12
TAG_BYTES = 16
DATA_KEY_BYTES = 32
MANIFEST_LIMIT = 16 << 20           # a manifest is a few hundred bytes; refuse anything absurd
JAVA_INT_MAX = 2**31 - 1            # the plugin's manifest sizes and positions are Java ints
# The plugin's own bound on a decoded chunk-size code (TransformedChunksDeserializer.MAX_DECOMPRESSED_SIZE).
CHUNK_SIZES_LIMIT = 10 << 20
# Original bytes of one compressed chunk, and of the chunks one object reads ahead: the core's
# bound on what one batch decompresses.
CHUNK_LIMIT = DEFAULT_MAX_DECOMPRESSED_BYTES
CACHED_CHUNKS = 2                   # chunks kept per open object: a read crossing a chunk end
READ_AHEAD = 4                      # chunks fetched, decrypted and decompressed ahead of a forward read


# --- the manifest ---------------------------------------------------------------------------

class FixedPositions(Sequence):
    """The stored positions of a ``fixed`` chunk index (``count + 1``, the first 0), computed:
    chunk ``i`` starts at ``i * each``, the last one is ``last`` bytes.  A manifest claiming
    2^31 chunks costs nothing until the object's size is checked against it."""
    __slots__ = ("each", "last", "count")

    def __init__(self, each: int, last: int, count: int) -> None:
        self.each, self.last, self.count = each, last, count

    def __len__(self) -> int:
        return self.count + 1

    def __getitem__(self, i):
        if isinstance(i, slice):
            return tuple(self[j] for j in range(len(self))[i])
        if i < 0:
            i += len(self)
        if not 0 <= i <= self.count:
            raise IndexError("chunk position out of range")
        if i < self.count:
            return i * self.each
        return (self.count - 1) * self.each + self.last if self.count else 0

    def __getstate__(self):
        return (self.each, self.last, self.count)

    def __setstate__(self, state):
        self.each, self.last, self.count = state

    def __repr__(self) -> str:
        return f"FixedPositions(each={self.each}, last={self.last}, count={self.count})"


class ChunkIndex(NamedTuple):
    """Where each chunk is: chunk ``i`` holds original bytes ``[i * original_chunk_size,
    min(+original_chunk_size, original_file_size))`` and is stored at ``stored[i]`` ..
    ``stored[i + 1]`` of the ``.log`` object."""
    original_chunk_size: int
    original_file_size: int
    stored: Sequence                 # chunk count + 1 positions, the first 0 (FixedPositions, array)

    @property
    def count(self) -> int:
        return len(self.stored) - 1

    @property
    def byte_copy(self) -> bool:
        """Whether every chunk is stored as its original bytes, no more, no fewer (a ``fixed``
        index of the chunk size: the plugin's index of a segment it neither compressed nor
        encrypted)."""
        stored = self.stored
        return (isinstance(stored, FixedPositions) and stored[-1] == self.original_file_size
                and (stored.count <= 1 or stored.each == self.original_chunk_size))

    def original(self, i: int) -> Tuple[int, int]:
        start = i * self.original_chunk_size
        return start, min(start + self.original_chunk_size, self.original_file_size)

    def chunks(self, start: int, end: int) -> range:
        """The chunks holding original bytes ``[start, end)``."""
        end = min(end, self.original_file_size)
        if end <= start:
            return range(0)
        return range(start // self.original_chunk_size, (end - 1) // self.original_chunk_size + 1)


class Encryption(NamedTuple):
    key_pair_id: str
    wrapped_key: bytes
    aad: bytes


class SegmentManifest(NamedTuple):
    chunk_index: ChunkIndex
    side_files: Dict[str, Tuple[int, int]]     # name -> (position, size) in ``.indexes``
    compression: bool
    encryption: Optional[Encryption]
    segment: dict                               # remoteLogSegmentMetadata, as written (may be {})

    @property
    def transformed(self) -> bool:
        """Whether the ``.log`` object is not the segment's bytes as they are (then it is read
        chunk by chunk, each checked: :class:`SegmentObject`)."""
        return self.compression or self.encryption is not None or not self.chunk_index.byte_copy


def _int(doc: Any, name: str, where: str, *, minimum: int = 0) -> int:
    v = doc.get(name) if isinstance(doc, dict) else None
    if not isinstance(v, int) or isinstance(v, bool) or v < minimum or v > JAVA_INT_MAX:
        raise RemoteObjectError(where, f"not a segment manifest: {name} is {v!r}")
    return v


def _b64(text: Any, what: str, where: str) -> bytes:
    if not isinstance(text, str):
        raise RemoteObjectError(where, f"not a segment manifest: {what} is {text!r}")
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise RemoteObjectError(where, f"{what} is not base64") from None


def decode_chunk_sizes(data: bytes, where: str = "chunk index") -> List[int]:
    """The stored chunk sizes of a ``variable`` chunk index (the plugin's binary code, after
    zstd): ``int32 n``, then for n = 1 ``int32 size``; for n >= 2 ``int32 base, int8 width,
    (n - 1) unsigned width-byte deltas from base, int32 last size`` (big-endian)."""
    stored = _chunk_positions(data, where)
    return [b - a for a, b in zip(stored, stored[1:])]


def _chunk_positions(data: bytes, where: str) -> array:
    """The stored positions (chunk count + 1, the first 0) a chunk-size code gives
    (:func:`decode_chunk_sizes`), as 64-bit integers: at most 9 bytes each for a code of at
    least one byte per chunk."""
    def need(n, at):
        if at + n > len(data):
            raise RemoteObjectError(where, f"chunk sizes end after {len(data)} bytes, {at + n} needed")
    need(4, 0)
    (n,) = struct.unpack_from(">i", data, 0)
    if n < 0:
        raise RemoteObjectError(where, f"chunk count {n}")
    if n == 0:
        return array("q", [0])
    if n == 1:
        need(4, 4)
        base, width, deltas = 0, 1, b""
    else:
        need(5, 4)
        base, width = struct.unpack_from(">iB", data, 4)
        if not 1 <= width <= 4:
            raise RemoteObjectError(where, f"chunk size width {width}, not 1 to 4")
        need((n - 1) * width + 4, 9)
        deltas = data[9:9 + (n - 1) * width]
    (last,) = struct.unpack_from(">i", data, 4 if n == 1 else 9 + (n - 1) * width)
    if base < 0 or last < 0:
        raise RemoteObjectError(where, "a negative chunk size")
    # the deltas widened to 4 big-endian bytes each, read as one array (no object per chunk)
    wide = bytearray(4 * (n - 1))
    for k in range(width):
        wide[4 - width + k::4] = deltas[k::width]
    sizes = array("I", bytes(wide))
    if sys.byteorder == "little":
        sizes.byteswap()
    stored = array("q", accumulate(map(base.__add__, sizes), initial=0))
    stored.append(stored[-1] + last)
    return stored


_ZSTD_FEED = 64                     # input bytes per call of a frame whose size is not declared


def _zstd_frame(data: bytes, limit: int, where: str, chunk: Optional[int] = None) -> bytes:
    """One zstd frame's content, at most ``limit`` bytes.  A frame whose header declares more
    is refused before anything is allocated (python-zstandard allocates a declared content size
    whole, whatever ``max_output_size`` says); one that declares none is decompressed a piece
    at a time, never more than the limit."""
    import zstandard
    try:
        declared = zstandard.get_frame_parameters(data).content_size
        if declared != zstandard.CONTENTSIZE_UNKNOWN:
            if declared > limit:
                raise RemoteObjectError(where, f"the zstd frame declares {declared} bytes, more than the {limit} it "
                                               f"may hold", chunk=chunk)
            return zstandard.ZstdDecompressor().decompress(data)
        # fed a little at a time: one call completes a few blocks (at most 128 KiB each), so the
        # output is checked against the limit before it grows far past it
        dobj = zstandard.ZstdDecompressor().decompressobj()
        parts, got = [], 0
        for at in range(0, len(data), _ZSTD_FEED):
            part = dobj.decompress(data[at:at + _ZSTD_FEED])
            got += len(part)
            if got > limit:
                raise RemoteObjectError(where, f"the zstd frame holds more than the {limit} bytes it may",
                                        chunk=chunk)
            parts.append(part)
            if dobj.eof:
                return b"".join(parts)
        raise zstandard.ZstdError("the frame ends early")
    except zstandard.ZstdError as exc:
        raise RemoteObjectError(where, f"not a zstd frame of at most {limit} bytes ({exc})", chunk=chunk) from None


def parse_manifest(data: bytes, where: str = "segment manifest") -> SegmentManifest:
    """A ``.rsm-manifest`` (``where`` names it in errors)."""
    try:
        return _parse_manifest(data, where)
    except RecursionError:
        raise RemoteObjectError(where, "not a segment manifest: JSON nested deeper than Python's recursion "
                                       "limit") from None


def _parse_manifest(data: bytes, where: str) -> SegmentManifest:
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise RemoteObjectError(where, f"not a segment manifest: not JSON ({exc})") from None
    if not isinstance(doc, dict) or str(doc.get("version")) != "1":
        version = doc.get("version") if isinstance(doc, dict) else None
        raise RemoteObjectError(where, f"not a segment manifest of version 1 (version {version!r})")
    ci = doc.get("chunkIndex")
    if not isinstance(ci, dict):
        raise RemoteObjectError(where, "not a segment manifest: no chunkIndex")
    chunk = _int(ci, "originalChunkSize", where, minimum=1)
    size = _int(ci, "originalFileSize", where)
    count = -(-size // chunk)
    kind = ci.get("type")
    stored: Sequence
    if kind == "fixed":
        stored = FixedPositions(_int(ci, "transformedChunkSize", where), _int(ci, "finalTransformedChunkSize", where),
                                count)
    elif kind == "variable":
        blob = _b64(ci.get("transformedChunks"), "transformedChunks", where)
        # the code of ``count`` sizes takes at most 13 + 4 * count bytes
        stored = _chunk_positions(_zstd_frame(blob, min(CHUNK_SIZES_LIMIT, 13 + 4 * count), where), where)
        if len(stored) - 1 != count:
            raise RemoteObjectError(where, f"{len(stored) - 1} chunk sizes for {count} chunks of {chunk} bytes "
                                           f"in {size} bytes")
    else:
        raise RemoteObjectError(where, f"chunk index type {kind!r}, not fixed or variable")
    indexes = doc.get("segmentIndexes")
    sides: Dict[str, Tuple[int, int]] = {}
    if isinstance(indexes, dict):
        for name in SIDE_FILES:
            entry = indexes.get(name)
            if entry is None:
                continue
            sides[name] = (_int(entry, "position", where), _int(entry, "size", where))
    compression = doc.get("compression", False)
    if not isinstance(compression, bool):
        raise RemoteObjectError(where, f"not a segment manifest: compression is {compression!r}")
    enc = doc.get("encryption")
    encryption = None
    if enc is not None:
        if not isinstance(enc, dict) or not isinstance(enc.get("dataKey"), str) or ":" not in enc["dataKey"]:
            raise RemoteObjectError(where, "encryption without a dataKey of the form <key pair id>:<base64>")
        pair, _, wrapped = enc["dataKey"].partition(":")
        encryption = Encryption(pair, _b64(wrapped, "the wrapped data key", where),
                                _b64(enc.get("aad"), "aad", where))
    segment = doc.get("remoteLogSegmentMetadata")
    return SegmentManifest(ChunkIndex(chunk, size, stored), sides, compression, encryption,
                           segment if isinstance(segment, dict) else {})


# --- keys -------------------------------------------------------------------------------------

def _mgf1_sha3_512(seed: bytes, length: int) -> bytes:
    out = b""
    counter = 0
    while len(out) < length:
        out += hashlib.sha3_512(seed + counter.to_bytes(4, "big")).digest()
        counter += 1
    return out[:length]


def _blinded_rsa_decrypt(c: int, n: int, e: int, d: int) -> int:
    """c^d mod n with base blinding (Kocher, "Timing Attacks on Implementations of
    Diffie-Hellman, RSA, DSS, and Other Systems", 1996; OpenSSL's RSA_blinding_on,
    crypto/rsa/rsa_ossl.c): the secret exponent meets only c*r^e for a fresh random r, so the
    time Python's pow (not constant-time) takes does not follow the ciphertext it is given."""
    while True:
        r = secrets.randbelow(n - 2) + 2
        try:
            r_inverse = pow(r, -1, n)
        except ValueError:               # r shares a factor with n: practically never
            continue
        return pow(c * pow(r, e, n) % n, d, n) * r_inverse % n


def oaep_sha3_512_decrypt(private_key: Any, ciphertext: bytes) -> bytes:
    """RSAES-OAEP decryption (RFC 8017, 7.1.2) with SHA3-512 as the hash and in MGF1 and an
    empty label, what the plugin's Bouncy Castle transformation ``RSA/NONE/OAEPWithSHA3-512
    AndMGF1Padding`` encrypts with.  Done here because pyca/cryptography refuses SHA3 in OAEP:
    its RSA backend (src/rust/src/backend/rsa.rs, the OAEP parameters) accepts only SHA-1 and
    SHA-2 for the hash and MGF1 (cryptography 50.0.2 on OpenSSL 4.0.3 raises UnsupportedAlgorithm
    "This combination of padding and hash algorithm is not supported"; tests/tiered checks it
    still does), and it has no raw RSA operation to pad around.  Raises ValueError."""
    numbers = private_key.private_numbers()
    n, e, d = numbers.public_numbers.n, numbers.public_numbers.e, numbers.d
    k = (n.bit_length() + 7) // 8
    h = hashlib.sha3_512().digest_size
    if len(ciphertext) != k or k < 2 * h + 2:
        raise ValueError(f"a {len(ciphertext)}-byte ciphertext for a {k}-byte key")
    c = int.from_bytes(ciphertext, "big")
    if c >= n:
        raise ValueError("the ciphertext is not below the key's modulus")
    # CRT would be faster; one unwrap per segment does not need it.
    em = _blinded_rsa_decrypt(c, n, e, d).to_bytes(k, "big")
    y, masked_seed, masked_db = em[0], em[1:1 + h], em[1 + h:]
    seed = bytes(a ^ b for a, b in zip(masked_seed, _mgf1_sha3_512(masked_db, h)))
    db = bytes(a ^ b for a, b in zip(masked_db, _mgf1_sha3_512(seed, k - h - 1)))
    label_hash, rest = db[:h], db[h:]
    one = rest.find(b"\x01")
    # One verdict for every failure (no oracle about which check failed).
    if y != 0 or label_hash != hashlib.sha3_512(b"").digest() or one < 0 or rest[:one].strip(b"\0"):
        raise ValueError("decryption error (not wrapped with this key pair)")
    return rest[one + 1:]


class KeyRing:
    """Private keys by key-pair id (the plugin's ``encryption.key.pairs``), to unwrap each
    segment's data key.  ``private_keys``: ``{id: PEM bytes (PKCS#8, unencrypted)}``."""

    def __init__(self, private_keys: Dict[str, bytes]) -> None:
        self.pems = dict(private_keys)
        self._keys: Dict[str, Any] = {}
        self._data_keys: "OrderedDict[bytes, bytes]" = OrderedDict()

    def __getstate__(self):
        return {"pems": self.pems}

    def __setstate__(self, state):
        self.__init__(state["pems"])

    def __repr__(self) -> str:
        return f"KeyRing({sorted(self.pems)})"

    @classmethod
    def from_config(cls, config: "TieredStorageConfig", storage_options: Optional[dict] = None) -> "KeyRing":
        """The private keys the config's ``encryption.key.pairs.<id>.private.key.file`` name
        (local paths or URIs)."""
        pems = {}
        for pair, (_public, private) in config.key_pairs.items():
            if private is None:
                continue
            pems[pair] = _read_small(private, storage_options, f"encryption.key.pairs.{pair}.private.key.file")
        return cls(pems)

    def _private(self, pair: str, where: str):
        key = self._keys.get(pair)
        if key is None:
            pem = self.pems.get(pair)
            if pem is None:
                known = ", ".join(sorted(self.pems)) or "none"
                raise RemoteObjectError(where, f"the data key is wrapped with key pair {pair!r}, which the "
                                               f"key ring does not hold (it holds: {known})")
            try:
                from cryptography.hazmat.primitives.serialization import load_pem_private_key
            except ImportError:
                raise RemoteObjectError(where, "reading encrypted segments needs the cryptography package "
                                               "(pip install cryptography)") from None
            try:
                key = load_pem_private_key(pem, password=None)
            except (ValueError, TypeError) as exc:
                raise RemoteObjectError(where, f"key pair {pair!r}: not an unencrypted PEM private key "
                                               f"({exc})") from None
            if not hasattr(key, "private_numbers") or not hasattr(key.private_numbers(), "d"):
                raise RemoteObjectError(where, f"key pair {pair!r}: not an RSA private key")
            self._keys[pair] = key
        return key

    def data_key(self, encryption: Encryption, where: str) -> bytes:
        """The segment's AES key, unwrapped (each wrapped key once)."""
        cached = self._data_keys.get(encryption.wrapped_key)
        if cached is not None:
            return cached
        key = self._private(encryption.key_pair_id, where)
        try:
            data_key = oaep_sha3_512_decrypt(key, encryption.wrapped_key)
        except ValueError as exc:
            raise RemoteObjectError(where, f"the data key does not unwrap with key pair "
                                           f"{encryption.key_pair_id!r}: {exc}") from None
        if len(data_key) != DATA_KEY_BYTES:
            raise RemoteObjectError(where, f"the unwrapped data key is {len(data_key)} bytes, not "
                                           f"{DATA_KEY_BYTES}")
        self._data_keys[encryption.wrapped_key] = data_key
        if len(self._data_keys) > 1024:
            self._data_keys.popitem(last=False)
        return data_key


def _read_small(location: str, storage_options: Optional[dict], what: str, limit: int = 1 << 20) -> bytes:
    from kafkarec.errors import StorageError
    from kafkarec.log import storage as _storage
    try:
        st, path = _storage._resolve(location, storage_options)      # not the tiered option again
        return st.read_file(path, limit=limit)
    except StorageError as exc:
        if exc.retriable:       # throttled, unavailable: the object may read next time; not its content
            raise
        raise TransformedSegmentError(f"{what}: {location}: {exc}") from None
    except OSError as exc:
        raise TransformedSegmentError(f"{what}: {location}: {exc}") from None


# --- the plugin's configuration ------------------------------------------------------------------

class TieredStorageConfig(NamedTuple):
    """The plugin's settings that say how its objects are named and read (``rsm.config.*``
    in a broker's properties, the prefix optional): ``key.prefix``; the key pairs
    ``encryption.key.pairs`` with their ``encryption.key.pairs.<id>.public.key.file`` /
    ``.private.key.file``; and the backend's ``storage.*`` settings (``storage.root`` of the
    filesystem backend, ``storage.s3.bucket.name``, ``storage.s3.endpoint.url``, ...), kept
    as given."""
    key_prefix: str
    key_pairs: Dict[str, Tuple[Optional[str], Optional[str]]]
    active_key_pair: Optional[str]
    settings: Dict[str, str]

    def storage_root(self) -> Optional[str]:
        """Where the backend stores objects: ``storage.root`` (filesystem backend) or
        ``s3://<storage.s3.bucket.name>``; None when the config does not say."""
        if self.settings.get("storage.root"):
            return self.settings["storage.root"]
        bucket = self.settings.get("storage.s3.bucket.name")
        if bucket:
            return f"s3://{bucket}"
        return None


def load_config(source: Any, storage_options: Optional[dict] = None) -> TieredStorageConfig:
    """A :class:`TieredStorageConfig` from a properties file (a path or URI), its text (read
    as the plugin reads it, by Java's ``Properties.load``), or a dict.  Relative key-file paths
    are read from the properties file's folder."""
    base = None
    if isinstance(source, dict):
        props = {str(k): str(v) for k, v in source.items()}
    else:
        where = "tieredStorageConfig"
        if isinstance(source, (str, os.PathLike)) and "\n" not in str(source) and "=" not in str(source):
            base = os.path.dirname(os.fspath(source))
            where = os.fspath(source)
            # a broker's config file reaches Properties.load(InputStream): ISO 8859-1, one byte a character
            text = _read_small(where, storage_options, "tieredStorageConfig").decode("latin-1")
        else:
            text = str(source)
        props = load_properties(text, where)
    settings = {}
    for k, v in props.items():
        name = k[len("rsm.config."):] if k.startswith("rsm.config.") else k
        settings[name] = v
    pairs = {}
    for pair in [p.strip() for p in settings.get("encryption.key.pairs", "").split(",") if p.strip()]:
        files = []
        for which in ("public", "private"):
            path = settings.get(f"encryption.key.pairs.{pair}.{which}.key.file")
            if path and base and not os.path.isabs(path) and "://" not in path:
                path = os.path.join(base, path)
            files.append(path or None)
        pairs[pair] = (files[0], files[1])
    return TieredStorageConfig(settings.get("key.prefix", ""), pairs,
                               settings.get("encryption.key.pair.id") or None, settings)


class Tiered(NamedTuple):
    """What a :class:`kafkarec.log.storage.Storage` knows of the tiered storage its objects
    belong to: the plugin's config and the key ring it names (option ``tieredStorageConfig``),
    and the broker's remote log metadata (option ``remoteLogMetadata``:
    :class:`kafkarec.log.remote_metadata.RemoteLogMetadata`), each None when not given."""
    config: Optional[TieredStorageConfig] = None
    keyring: Optional[KeyRing] = None
    metadata: Any = None


def load_tiered(source: Any = None, storage_options: Optional[dict] = None, *, metadata: Any = None) -> Tiered:
    """:class:`Tiered` from the plugin's properties (a path, URI, text or dict) and the
    location of ``__remote_log_metadata`` (a broker log directory), either may be None."""
    config = keyring = None
    if source is not None:
        config = load_config(source, storage_options)
        keyring = KeyRing.from_config(config, storage_options)
    replayed = None
    if metadata is not None:
        from kafkarec.log import remote_metadata
        replayed = remote_metadata.load(metadata, storage_options)
    return Tiered(config, keyring, replayed)


def tiered_of(storage) -> Optional[Tiered]:
    """The :class:`Tiered` a storage was opened with (options ``tieredStorageConfig`` /
    ``remoteLogMetadata`` of :func:`kafkarec.log.storage.resolve`), loaded on first use."""
    if getattr(storage, "tiered", None) is None and getattr(storage, "tiered_source", None) is not None:
        config, metadata, options = storage.tiered_source
        storage.tiered = load_tiered(config, options, metadata=metadata)
    return getattr(storage, "tiered", None)


# --- reading ----------------------------------------------------------------------------------

def _aes_gcm(key: bytes, aad: bytes, blob: bytes, where: str, chunk: Optional[int]) -> bytes:
    try:
        from cryptography.exceptions import InvalidTag
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    except ImportError:
        raise RemoteObjectError(where, "reading encrypted segments needs the cryptography package "
                                       "(pip install cryptography)", chunk=chunk) from None
    if len(blob) < IV_BYTES + TAG_BYTES:
        raise RemoteObjectError(where, f"{len(blob)} bytes: too short for an encrypted chunk (IV and tag "
                                       f"alone are {IV_BYTES + TAG_BYTES})", chunk=chunk)
    try:
        return AESGCM(key).decrypt(blob[:IV_BYTES], blob[IV_BYTES:], aad)
    except InvalidTag:
        raise RemoteObjectError(where, "the AES-GCM tag does not verify: the chunk was altered or the data "
                                       "key is not this segment's", chunk=chunk) from None


class SegmentObject:
    """The original bytes of a segment the plugin stored as ``path`` (its ``.log`` object) with
    ``manifest``: ranged reads fetch only the chunks a range needs, each decrypted and
    decompressed once while it is among the last :data:`CACHED_CHUNKS` used.  A read that ends
    inside the object has the next :data:`READ_AHEAD` chunks fetched, decrypted and decompressed
    in the background (readers go forward: the next request finds them ready or under way, and
    the network, the cipher and the decompressor overlap); memory stays a few chunks.  Offers the ranged-read methods of
    :class:`kafkarec.log.storage.RangeFile` (``size`` is the original segment's), so every reader
    of segments reads it."""

    def __init__(self, storage, path: str, manifest: SegmentManifest, keyring: Optional[KeyRing] = None,
                 object_size: Optional[int] = None) -> None:
        self.storage = storage
        self.path = path
        self.manifest = manifest
        ci = manifest.chunk_index
        self.size = ci.original_file_size
        if manifest.compression and ci.original_chunk_size > CHUNK_LIMIT:
            raise RemoteObjectError(self.uri, f"compressed chunks of {ci.original_chunk_size} original bytes, more "
                                              f"than the {CHUNK_LIMIT} kafkarec decompresses at once "
                                              f"(kafkarec.DEFAULT_MAX_DECOMPRESSED_BYTES)")
        self._file = storage.open(path, object_size)
        try:
            check_object_size(ci, self._file.size, self.uri)
        except RemoteObjectError:
            self._file.close()
            raise
        self._chunks: "OrderedDict[int, bytes]" = OrderedDict()
        self._key: Optional[bytes] = None
        self.keyring = keyring
        # chunks read ahead hold at most CHUNK_LIMIT original bytes (one chunk when chunks are larger)
        self._ahead_chunks = min(READ_AHEAD, max(1, CHUNK_LIMIT // ci.original_chunk_size))
        self._ahead: Dict[int, Any] = {}      # chunk index -> Future of a chunk read ahead
        self._pool: Any = None

    @property
    def uri(self) -> str:
        return self.storage.uri(self.path)

    def _data_key(self) -> bytes:
        if self._key is None:
            enc = self.manifest.encryption
            assert enc is not None
            if self.keyring is None:
                raise RemoteObjectError(self.uri, f"the segment is encrypted (key pair {enc.key_pair_id!r}): give "
                                                  f"the plugin's config (tieredStorageConfig) with its private key")
            self._key = self.keyring.data_key(enc, self.uri)
        return self._key

    def chunk(self, i: int) -> bytes:
        """Chunk ``i``'s original bytes."""
        data = self._chunks.get(i)
        if data is not None:
            self._chunks.move_to_end(i)
            return data
        future = self._ahead.pop(i, None)
        data = future.result() if future is not None else self._load(i)   # its errors are this read's
        self._chunks[i] = data
        if len(self._chunks) > CACHED_CHUNKS:
            self._chunks.popitem(last=False)
        return data

    def _read_ahead(self, first: int, current: range = range(0)) -> None:
        wanted = [i for i in range(first, min(first + self._ahead_chunks, self.manifest.chunk_index.count))
                  if i not in self._chunks]
        for i in [i for i in self._ahead if i not in wanted and i not in current]:
            self._ahead.pop(i).cancel()           # the reader went elsewhere
        if not wanted:
            return
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor
            self._pool = ThreadPoolExecutor(max_workers=self._ahead_chunks, thread_name_prefix="kafkarec-rsm")
        if self.manifest.encryption is not None:
            self._data_key()                      # unwrapped here, once, not in the threads
        for i in wanted:
            if i not in self._ahead:
                self._ahead[i] = self._pool.submit(self._load, i)

    def _load(self, i: int) -> bytes:
        """Fetch, decrypt and decompress chunk ``i`` (no shared state: safe in the read-ahead thread)."""
        ci = self.manifest.chunk_index
        start, end = ci.stored[i], ci.stored[i + 1]
        blob = self._file.read_at(start, end - start)
        if len(blob) != end - start:
            raise RemoteObjectError(self.uri, f"{len(blob)} of its {end - start} bytes (the object ends early)",
                                    chunk=i)
        if self.manifest.encryption is not None:
            blob = _aes_gcm(self._data_key(), self.manifest.encryption.aad, blob, self.uri, i)
        o_start, o_end = ci.original(i)
        if self.manifest.compression:
            blob = _zstd_frame(blob, o_end - o_start, self.uri, i)
        if len(blob) != o_end - o_start:
            raise RemoteObjectError(self.uri, f"{len(blob)} original bytes, not {o_end - o_start}", chunk=i)
        return blob

    def read_at(self, position: int, nbytes: int) -> bytes:
        if nbytes <= 0 or position >= self.size:
            return b""
        end = min(self.size, position + nbytes)
        ci = self.manifest.chunk_index
        wanted = ci.chunks(position, end)
        if end < self.size and ci.count > 1:
            self._read_ahead(wanted[-1] + 1, wanted)   # under way while this read's chunks load
        parts = []
        for i in wanted:
            c_start, _ = ci.original(i)
            data = self.chunk(i)
            parts.append(data[max(0, position - c_start):end - c_start])
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def read_into(self, position: int, buf) -> int:
        mv = memoryview(buf).cast("B")
        data = self.read_at(position, len(mv))
        mv[:len(data)] = data
        return len(data)

    def read_buffer(self, position: int, nbytes: int):
        pa = require("pyarrow")
        return pa.py_buffer(self.read_at(position, nbytes))

    def close(self) -> None:
        for future in self._ahead.values():
            future.cancel()
        self._ahead.clear()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        self._file.close()
        self._chunks.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def check_object_size(chunk_index: ChunkIndex, object_size: int, uri: str) -> None:
    """Raise :class:`kafkarec.RemoteObjectError` naming the object and the chunk unless the chunk
    index covers exactly the ``object_size`` bytes of the ``.log`` object ``uri``.  An object
    shorter than its index says lost the chunks past its end (the plugin's own fetch fails on
    them: "Stream has fewer bytes than expected"); bytes after the last chunk are none of the
    segment's."""
    stored = chunk_index.stored
    end = stored[-1]
    if end == object_size:
        return
    covers = f"the manifest's chunk index covers {end} bytes, the object holds {object_size}"
    if end > object_size:
        first = max(0, bisect_right(stored, object_size) - 1)     # the first chunk ending past the object
        missing = chunk_index.count - first
        raise RemoteObjectError(uri, f"{covers}: it ends before this chunk's stored bytes {stored[first]}.."
                                     f"{stored[first + 1]} do ({missing} of the {chunk_index.count} chunks are not "
                                     f"whole)", chunk=first)
    last = chunk_index.count - 1
    raise RemoteObjectError(uri, f"{covers}: {object_size - end} bytes follow the last chunk that no chunk holds",
                            chunk=last if last >= 0 else None)


def open_object(storage, path: str, manifest: SegmentManifest, keyring: Optional[KeyRing] = None):
    """The original segment the plugin stored as the ``.log`` object ``path`` with ``manifest``,
    for ranged reads, checked against the chunk index first: a :class:`SegmentObject`, or for a
    byte copy the object itself (a :class:`kafkarec.log.storage.RangeFile`: reads go straight
    to it)."""
    if manifest.transformed:
        return SegmentObject(storage, path, manifest, keyring)
    f = storage.open(path)            # the object's own size, to check the chunk index against
    try:
        check_object_size(manifest.chunk_index, f.size, f.uri)
    except RemoteObjectError:
        f.close()
        raise
    return f


def side_file(storage, path: str, manifest: SegmentManifest, name: str, keyring: Optional[KeyRing] = None,
              file: Any = None) -> Optional[bytes]:
    """One side file (``name``, of :data:`SIDE_FILES`) from the ``.indexes`` object ``path``, as the
    broker had it; None when the segment has none of that kind.  One ranged read."""
    if name not in manifest.side_files:
        return None
    uri = storage.uri(path)
    position, size = manifest.side_files[name]
    f = file if file is not None else storage.open(path)
    try:
        if position + size > f.size:
            raise RemoteObjectError(uri, f"the manifest puts {name} at bytes {position}..{position + size}, "
                                         f"past the object's {f.size}")
        blob = f.read_at(position, size) if size else b""
    finally:
        if file is None:
            f.close()
    if size and manifest.encryption is not None:
        if keyring is None:
            raise RemoteObjectError(uri, "the side files are encrypted: give the plugin's config "
                                         "(tieredStorageConfig) with its private key")
        try:
            blob = _aes_gcm(keyring.data_key(manifest.encryption, uri), manifest.encryption.aad, blob, uri, None)
        except RemoteObjectError as exc:
            raise RemoteObjectError(uri, f"{name}: {exc.reason}") from None
    return blob


def side_files(storage, path: str, manifest: SegmentManifest, keyring: Optional[KeyRing] = None,
               object_size: Optional[int] = None) -> Dict[str, bytes]:
    """The side files in the ``.indexes`` object ``path``, by the manifest's names
    (:data:`SIDE_FILES`; ``transaction`` only when the segment has one), as the broker had them."""
    with storage.open(path, object_size) as f:
        out = {}
        for name in SIDE_FILES:
            blob = side_file(storage, path, manifest, name, keyring, file=f)
            if blob is not None:
                out[name] = blob
        return out


def read_manifests(storage, paths: List[Tuple[str, Optional[int]]]) -> Dict[str, Any]:
    """``{path: SegmentManifest or RemoteObjectError}`` for manifest objects ``(path, size)``,
    read a few at a time (one small request each)."""
    from concurrent.futures import ThreadPoolExecutor
    from kafkarec.errors import StorageError

    def one(item):
        path, size = item
        try:
            return path, parse_manifest(storage.read_file(path, size, limit=MANIFEST_LIMIT), storage.uri(path))
        except RemoteObjectError as exc:
            return path, exc
        except StorageError as exc:
            if exc.retriable:   # throttled, unavailable: a failed read, not a manifest to report
                raise
            return path, RemoteObjectError(storage.uri(path), f"unreadable segment manifest ({exc})")
        except OSError as exc:
            return path, RemoteObjectError(storage.uri(path), f"unreadable segment manifest ({exc})")
    if len(paths) <= 1:
        return dict(one(p) for p in paths)
    with ThreadPoolExecutor(max_workers=min(8, len(paths))) as pool:
        return dict(pool.map(one, paths))
