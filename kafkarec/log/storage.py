"""Log files wherever they are: local disks, object stores, HDFS.

:func:`resolve` turns a URI into a ``(pyarrow.fs.FileSystem, path)`` pair:

* ``s3://bucket/key`` - :class:`pyarrow.fs.S3FileSystem`, configured the AWS
  way: ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` / ``AWS_SESSION_TOKEN``
  (or profiles, instance roles: the AWS SDK's default chain),
  ``AWS_ENDPOINT_URL_S3`` or ``AWS_ENDPOINT_URL`` for S3-compatible stores,
  ``AWS_REGION`` / ``AWS_DEFAULT_REGION``; explicit options win (below);
* ``gs://``, ``gcs://`` - GCS (``GOOGLE_APPLICATION_CREDENTIALS``, the default
  Google credentials); ``abfs://``, ``abfss://``, ``az://`` - Azure
  (``AZURE_STORAGE_ACCOUNT_KEY`` / ``AZURE_STORAGE_SAS_TOKEN`` or
  ``DefaultAzureCredential``); ``hdfs://`` - libhdfs; all through
  :meth:`pyarrow.fs.FileSystem.from_uri`;
* ``file://`` and plain paths - the local file system;
* any other scheme - fsspec, when it is installed.

Options (case-insensitive; ``_`` and ``.`` ignored, so ``accessKey``,
``access_key`` and ``s3.access.key`` are one option): ``endpoint`` (URL, e.g.
``http://127.0.0.1:9000``), ``region``, ``accessKey``, ``secretKey``,
``sessionToken``, ``anonymous``, ``connectTimeout`` and ``requestTimeout`` (seconds),
``maxAttempts`` (requests tried per call, retries included); for Azure ``accountName``, ``accountKey``,
``sasToken``; for GCS ``accessToken``, ``projectId``.  Unknown keys are left
alone (they belong to the caller), see :func:`storage_options`.

Reading: the caller lists once (:func:`list_files`), then opens each file it
needs with the size from the listing (:meth:`Storage.open`: no extra request
for the size) and reads byte ranges with :meth:`RangeFile.read_at`, one ranged
GET on an object store.  :func:`iter_pieces` walks a byte range of a segment in
pieces of whole batches (framed by :func:`kafkarec.iter_batches` with Kafka's
file rules), reading a bounded chunk at a time: a batch that crosses the end
of a chunk or of the range is completed by reading just the bytes it lacks,
never the rest of the object.

Failures: every file-system error met resolving, listing or reading (other than
a missing file) becomes ONE :class:`kafkarec.errors.StorageError` line naming the
URI and what went wrong - an unreachable endpoint, no such bucket, access
denied, expired credentials (:func:`storage_error`); the CLI prints it and exits
2, Spark shows it as the task's message.
"""
from __future__ import annotations

import contextlib
import os
import re
import threading
from typing import Any, Iterator, List, NamedTuple, Optional, Tuple
from urllib.parse import parse_qsl, unquote, urlsplit

import kafkarec
from kafkarec._extras import require
from kafkarec.errors import DecodeError, StorageError

__all__ = [
    "StorageError", "Storage", "FileEntry", "RangeFile", "Piece",
    "ReadStats", "resolve", "open_storage", "storage_options", "list_files", "iter_pieces", "BatchWalk",
    "iter_remote_batches",
    "is_uri", "DEFAULT_CHUNK", "without_spans", "storage_error", "storage_errors",
    "BYTES_READ_ENV", "count_read", "bytes_read", "process_bytes_read", "process_walk_bytes", "count_listing",
    "process_listings", "HEADER_WALK_BYTES", "HeldSegments", "HOLD_BYTES_ENV", "DEFAULT_HOLD_BYTES",
    "process_opens", "process_held_bytes", "process_window_maps", "process_map_hits", "count_window_map",
    "count_map_hit",
]

DEFAULT_CHUNK = 8 << 20           # bytes read per request while walking a segment
# Framing only (headers, no CRC), with Kafka's file rules: where batches start and end.
_FRAMING_OPTIONS = kafkarec.ReadOptions(file_rules=True, verify_crc=False)
from kafkarec._core import HEADER_SIZE_UP_TO_MAGIC  # noqa: E402  (framing sizes are the core's)

_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*)://")


# --- failures: one line naming the URI -----------------------------------------------

# What object stores answer (the AWS SDK's error names, as pyarrow quotes them; Azure's
# and GCS's codes), grouped by what a user has to fix, and whether the same request may pass when
# made again (the stores' own advice for these answers, and what their SDKs' standard retry
# strategies retry: throttling, a 5xx, a timeout, a connection cut mid-answer).  A task that fails
# so is tried again (KafkaRecError.retriable); the rest need the user's fix.  The first row that
# matches decides.
_FAILURES = (
    ("cannot reach the endpoint", True, re.compile(
        r"timed out|Timeout was reached|Connection reset|Recv failure|Failure when receiving data", re.I)),
    ("cannot reach the endpoint", False, re.compile(
        r"NETWORK_CONNECTION|Could not connect|Couldn't connect|Could not resolve|Couldn't resolve"
        r"|Connection refused|Name or service not known", re.I)),
    ("credentials expired", False, re.compile(
        r"EXPIRED_TOKEN|ExpiredToken|TokenRefreshRequired|RequestExpired|token (has )?expired"
        r"|AuthenticationExpired", re.I)),
    ("no such bucket", False, re.compile(r"NO_SUCH_BUCKET|NoSuchBucket|ContainerNotFound|bucket does not exist",
                                         re.I)),
    ("access denied", False, re.compile(
        r"ACCESS_DENIED|AccessDenied|SIGNATURE_DOES_NOT_MATCH|SignatureDoesNotMatch|INVALID_ACCESS_KEY_ID"
        r"|InvalidAccessKeyId|UNRECOGNIZED_CLIENT|InvalidClientTokenId|AuthorizationFailure"
        r"|AuthenticationFailed|HTTP status 40[13]|Forbidden|Unauthorized|Permission denied", re.I)),
    ("throttled or unavailable", True, re.compile(
        r"SLOW_DOWN|SlowDown|Reduce your request rate|THROTTLING|Throttl|TooManyRequests|RequestLimitExceeded"
        r"|rateLimitExceeded|SERVICE_UNAVAILABLE|ServiceUnavailable|ServerBusy|INTERNAL_FAILURE|InternalError"
        r"|OperationTimedOut|HTTP status (?:429|5\d\d)", re.I)),
)
_AWS_CODE = re.compile(r"AWS Error (\w+)(?: \(HTTP status (\d+)\))? during (\w+) operation")
# curl names the peer "host:port" or "host port N" (as libcurl versions differ: pyarrow 25 and 26)
_PEER = re.compile(r"(?:Failed to connect to|resolve host:?) ([^\s;,]+)(?: port (\d+))?", re.I)


def storage_error(uri: str, exc: BaseException) -> StorageError:
    """``exc`` (an OSError from a file system) as ONE line: ``URI: what went wrong (detail)``.

    ``what`` names the user's fix - ``cannot reach the endpoint``, ``no such bucket``,
    ``access denied``, ``credentials expired``, ``throttled or unavailable`` (retriable, as a
    timeout reaching the endpoint is) - and the detail is the store's own error
    code (``AWS Error ACCESS_DENIED during HeadObject``) or the first line of its message."""
    if isinstance(exc, StorageError):
        return exc
    text = " ".join(str(exc).split())
    what, retriable = next(((name, again) for name, again, pattern in _FAILURES if pattern.search(text)),
                           (None, False))
    m = _AWS_CODE.search(text)
    if m:
        detail = f"AWS Error {m.group(1)} during {m.group(3)}"
        if m.group(2):
            detail += f", HTTP {m.group(2)}"
    else:
        detail = text if len(text) <= 200 else text[:197] + "..."
    if what == "cannot reach the endpoint":
        peer = _PEER.search(text)
        if peer:
            host = peer.group(1) if peer.group(2) is None else f"{peer.group(1)}:{peer.group(2)}"
            detail = f"{host}; {detail}"
    line = f"{uri}: {what} ({detail})" if what else f"{uri}: {detail}"
    err = StorageError(line, uri, retriable=retriable)
    err.__cause__ = exc
    return err


@contextlib.contextmanager
def storage_errors(uri: str):
    """Turn file-system failures inside the block into :func:`storage_error` lines; a missing
    file stays a ``FileNotFoundError`` (callers say "no such file" themselves)."""
    try:
        yield
    except (FileNotFoundError, StorageError):
        raise
    except OSError as exc:
        raise storage_error(uri, exc) from exc


def is_uri(path: str) -> bool:
    """Whether ``path`` names a scheme (``s3://...``) rather than a local path."""
    return bool(_SCHEME.match(str(path)))


# --- options ---------------------------------------------------------------------

_OPTION_NAMES = {
    "endpoint": "endpoint", "endpointurl": "endpoint", "endpointoverride": "endpoint",
    "s3endpoint": "endpoint",
    "region": "region", "s3region": "region",
    "accesskey": "access_key", "accesskeyid": "access_key", "s3accesskey": "access_key",
    "secretkey": "secret_key", "secretaccesskey": "secret_key", "s3secretkey": "secret_key",
    "sessiontoken": "session_token", "s3sessiontoken": "session_token",
    "anonymous": "anonymous",
    "accountname": "account_name", "accountkey": "account_key", "sastoken": "sas_token",
    "accesstoken": "access_token", "projectid": "project_id",
    "connecttimeout": "connect_timeout", "requesttimeout": "request_timeout",
    "maxattempts": "max_attempts",
    "tieredstorageconfig": "tieredStorageConfig",     # kafkarec.log.rsm: not a file system's option
    "remotelogmetadata": "remoteLogMetadata",         # kafkarec.log.remote_metadata: nor this
}


def _norm_key(key: str) -> str:
    return re.sub(r"[._\-]", "", str(key).lower())


def storage_options(options: Optional[dict]) -> dict:
    """The storage options among ``options`` (e.g. a data source's), canonical names."""
    out = {}
    for k, v in dict(options or {}).items():
        name = _OPTION_NAMES.get(_norm_key(k))
        if name is not None and v is not None and v != "":
            out[name] = v
    return out


def _truthy(v) -> bool:
    return str(v).strip().lower() in ("1", "true", "yes", "on") if not isinstance(v, bool) else v


# --- resolving -------------------------------------------------------------------

class FileEntry(NamedTuple):
    """A file found by :func:`list_files`: path as the file system names it, size, mtime (ns or None)."""
    path: str
    size: int
    mtime_ns: Optional[int] = None


#: the bytes of segments a walk of an object store read whole that its storage keeps for the read
#: that follows (:class:`HeldSegments`); the environment variable of that name overrides it (0: none)
HOLD_BYTES_ENV = "KAFKAREC_HOLD_BYTES"
DEFAULT_HOLD_BYTES = 256 << 20


def _hold_budget() -> int:
    text = os.environ.get(HOLD_BYTES_ENV)
    if text is None or not text.strip():
        return DEFAULT_HOLD_BYTES
    try:
        n = int(text)
    except ValueError:
        raise StorageError(f"{HOLD_BYTES_ENV} must be a whole number of bytes, not {text!r}") from None
    if n < 0:
        raise StorageError(f"{HOLD_BYTES_ENV} must be >= 0, not {n}")
    return n


class HeldSegments:
    """Segments of an object store that a walk of batch headers read whole, kept for the read
    that follows it in this process, so that the read does not request them again (issue 79:
    each byte read once).  On an object store the transaction rule's walk reads a segment whole
    (a request per batch header would cost more than the bytes it saves), and the command's read
    then wants the same bytes; kept here, the read's :class:`RangeFile` serves them from memory.
    Bounded by ``budget`` bytes (:data:`HOLD_BYTES_ENV`): a segment that does not fit is not
    kept, and the read requests it as before.  Keyed by path and the listing's size (an object
    of another size is another object).  Never pickled: a worker process reads for itself, and
    a storage pickled for workers lets its held segments go (:meth:`release`)."""

    def __init__(self, budget: int):
        self.budget = budget
        self.used = 0
        self._held: dict = {}
        self._reserved: dict = {}
        self._lock = threading.Lock()

    def room(self, size: int) -> bool:
        """Whether a segment of ``size`` bytes would be kept."""
        return 0 < size <= self.budget - self.used

    def reserve(self, path: str, size: int) -> bool:
        """Set ``size`` bytes of the budget aside for ``path`` while it is read (walks of several
        segments at once never overrun the budget); False when they do not fit, or ``path`` is
        held at that size or being read already.  :meth:`put` or :meth:`unreserve` follows."""
        with self._lock:
            old = self._held.get(path)
            if (old is not None and len(old) == size) or path in self._reserved:
                return False
            if old is not None:                 # another size: the object grew, say
                del self._held[path]
                self.used -= len(old)
            if not self.room(size):
                return False
            self._reserved[path] = size
            self.used += size
            return True

    def put(self, path: str, data: memoryview) -> bool:
        """Keep ``data``, the whole bytes :meth:`reserve` set room aside for; False when the
        room was let go meanwhile (:meth:`release`)."""
        with self._lock:
            size = self._reserved.pop(path, None)
            if size is None:
                return False
            self.used += len(data) - size
            self._held[path] = data
            return True

    def unreserve(self, path: str) -> None:
        with self._lock:
            self.used -= self._reserved.pop(path, 0)

    def get(self, path: str, size: Optional[int]) -> Optional[memoryview]:
        data = self._held.get(path)
        return data if data is not None and (size is None or len(data) == size) else None

    def release(self) -> None:
        """Drop every segment kept, and keep none from here on (the reads are elsewhere)."""
        with self._lock:
            self._held.clear()
            self._reserved.clear()
            self.used = 0
            self.budget = 0


class Storage:
    """A file system and how to name its files as URIs again; ``tiered``: what the
    tiered-storage plugin that wrote its objects was configured with (its key ring), when the
    user gave it (option ``tieredStorageConfig``, :class:`kafkarec.log.rsm.Tiered`).  ``held``:
    the segments a walk of an object store read whole, kept for the read (:class:`HeldSegments`;
    None on a local disk, where a walk reads headers only)."""

    def __init__(self, fs, prefix: str = "", tiered: Any = None, tiered_source: Any = None):
        self.fs = fs
        self.prefix = prefix         # "s3://" etc.; "" for local paths
        self.is_local = prefix == "" and _is_local_fs(fs)
        self.tiered = tiered
        self.tiered_source = tiered_source    # (config, metadata location, options) until loaded
        self.held: Optional[HeldSegments] = None if self.is_local else HeldSegments(_hold_budget())

    def uri(self, path: str) -> str:
        return self.prefix + path

    def open(self, path: str, size: Optional[int] = None) -> "RangeFile":
        return RangeFile(self, path, size)

    def read_file(self, path: str, size: Optional[int] = None, *, limit: int = 64 << 20) -> bytes:
        """A small file whole (side files: indexes, checkpoints, manifests); refuses more than ``limit``."""
        with self.open(path, size) as f:
            if f.size > limit:
                raise StorageError(f"{self.uri(path)} is {f.size} bytes, more than the {limit} "
                                   f"expected of this kind of file")
            return f.read_at(0, f.size)

    def __getstate__(self):
        # pyarrow's file systems pickle (for Spark tasks); fsspec-wrapped ones too.  A storage sent
        # to workers is read there: what this process held for its own read is let go, and it holds
        # nothing more (a Spark driver's walks for read_committed keep no segment bytes).
        if self.held is not None:
            self.held.release()
        return {"fs": self.fs, "prefix": self.prefix, "tiered": self.tiered,
                "tiered_source": self.tiered_source}

    def __setstate__(self, state):
        self.__init__(state["fs"], state["prefix"], state.get("tiered"), state.get("tiered_source"))

    def __repr__(self):
        return f"Storage({type(self.fs).__name__}, prefix={self.prefix!r})"


def _is_local_fs(fs) -> bool:
    pafs = require("pyarrow.fs")
    return isinstance(fs, pafs.LocalFileSystem)


def _s3(netloc: str, path: str, query: dict, opts: dict):
    pafs = require("pyarrow.fs")
    env = os.environ
    endpoint = (opts.get("endpoint") or query.get("endpoint_override") or query.get("endpoint")
                or env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL"))
    region = opts.get("region") or query.get("region") or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
    kw: dict = {}
    if endpoint:
        parts = urlsplit(endpoint if "://" in endpoint else "https://" + endpoint)
        kw["endpoint_override"] = parts.netloc + parts.path.rstrip("/")
        kw["scheme"] = parts.scheme
        # S3-compatible stores: no region lookup against AWS; path-style addressing.
        region = region or "us-east-1"
        kw["force_virtual_addressing"] = False
    elif not region and netloc:
        try:
            region = pafs.resolve_s3_region(netloc)
        except (OSError, ValueError):
            region = None
    if region:
        kw["region"] = region
    for name in ("connect_timeout", "request_timeout"):
        if opts.get(name) is not None:
            kw[name] = _seconds(opts[name], name)
    if opts.get("max_attempts") is not None:
        kw["retry_strategy"] = pafs.AwsStandardS3RetryStrategy(
            max_attempts=int(_seconds(opts["max_attempts"], "max_attempts")))
    if _truthy(opts.get("anonymous", query.get("anonymous", False))):
        kw["anonymous"] = True
    elif opts.get("access_key") or opts.get("secret_key"):
        if not (opts.get("access_key") and opts.get("secret_key")):
            raise StorageError("S3 options accessKey and secretKey go together")
        kw["access_key"] = opts["access_key"]
        kw["secret_key"] = opts["secret_key"]
        if opts.get("session_token"):
            kw["session_token"] = opts["session_token"]
    return pafs.S3FileSystem(**kw), f"{netloc}{path}".rstrip("/") or netloc


def _seconds(v, name: str) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        f = -1.0
    if not f >= 0:
        raise StorageError(f"storage option {name} must be a number >= 0, not {v!r}")
    return f


def _azure(scheme: str, netloc: str, path: str, opts: dict, uri: str):
    pafs = require("pyarrow.fs")
    env = os.environ
    key = opts.get("account_key") or env.get("AZURE_STORAGE_ACCOUNT_KEY")
    sas = opts.get("sas_token") or env.get("AZURE_STORAGE_SAS_TOKEN")
    account = opts.get("account_name") or env.get("AZURE_STORAGE_ACCOUNT_NAME")
    container = netloc
    if "@" in netloc:                      # abfs://container@account.dfs.core.windows.net/path
        container, host = netloc.split("@", 1)
        account = account or host.split(".", 1)[0]
    if not account:
        raise StorageError(f"{uri}: no Azure storage account (give it in the URI as "
                           f"container@account.dfs.core.windows.net, option accountName or "
                           f"AZURE_STORAGE_ACCOUNT_NAME)")
    kw: dict = {}
    if key:
        kw["account_key"] = key
    elif sas:
        kw["sas_token"] = sas
    return pafs.AzureFileSystem(account, **kw), f"{container}{path}".rstrip("/")


def _gcs(netloc: str, path: str, opts: dict):
    pafs = require("pyarrow.fs")
    kw: dict = {}
    if _truthy(opts.get("anonymous", False)):
        kw["anonymous"] = True
    if opts.get("access_token"):
        kw["access_token"] = opts["access_token"]
    if opts.get("project_id"):
        kw["project_id"] = opts["project_id"]
    if opts.get("endpoint"):
        parts = urlsplit(opts["endpoint"] if "://" in opts["endpoint"] else "https://" + opts["endpoint"])
        kw["endpoint_override"] = parts.netloc
        kw["scheme"] = parts.scheme
    return pafs.GcsFileSystem(**kw), f"{netloc}{path}".rstrip("/")


def resolve(uri: str, options: Optional[dict] = None, *, tiered: bool = True) -> Tuple["Storage", str]:
    """``(Storage, path)`` for a URI or local path; see the module docstring for options.
    ``tieredStorageConfig`` among the options: the properties of the tiered-storage plugin
    that wrote the objects (read with the same options; :mod:`kafkarec.log.rsm`).
    ``tiered`` False: the storage alone, whatever the options say of the plugin (what reads
    ``__remote_log_metadata``, which the plugin's objects are judged by, needs)."""
    st, path = _resolve(uri, options)
    if not tiered:
        return st, path
    config = tiered_config_option(options)
    metadata = option_value(options, "remotelogmetadata")
    if config is not None or metadata is not None:
        # read where the layout first needs them (kafkarec.log.rsm.tiered_of), with these options
        st.tiered_source = (config, metadata, {k: v for k, v in dict(options or {}).items()})
    return st, path


def option_value(options: Optional[dict], normalized: str) -> Optional[str]:
    """The value of an option whose name, lower-cased without ``.``/``_``/``-``, is ``normalized``."""
    for k, v in dict(options or {}).items():
        if _norm_key(k) == normalized and v not in (None, ""):
            return v
    return None


def tiered_config_option(options: Optional[dict]) -> Optional[str]:
    """The ``tieredStorageConfig`` option (any case, ``.``/``_``/``-`` ignored), or None."""
    return option_value(options, "tieredstorageconfig")


def _resolve(uri: str, options: Optional[dict] = None) -> Tuple["Storage", str]:
    pafs = require("pyarrow.fs")
    if isinstance(uri, os.PathLike):
        uri = os.fspath(uri)
    opts = storage_options(options)
    m = _SCHEME.match(uri)
    if not m:
        if uri.startswith("file:"):
            uri = "file://" + uri[len("file:"):]
        else:
            return Storage(pafs.LocalFileSystem()), os.path.abspath(os.path.expanduser(uri))
        m = _SCHEME.match(uri)
    assert m is not None
    scheme = m.group(1).lower()
    parts = urlsplit(uri)
    netloc, path = parts.netloc, unquote(parts.path)
    query = dict(parse_qsl(parts.query))
    if scheme == "file":
        return Storage(pafs.LocalFileSystem()), os.path.abspath(path)
    prefix = f"{scheme}://"
    try:
        if scheme in ("s3", "s3a", "s3n"):
            fs, p = _s3(netloc, path, query, opts)
            return Storage(fs, "s3://"), p
        if scheme in ("abfs", "abfss", "az", "azure", "wasb", "wasbs"):
            fs, p = _azure(scheme, netloc, path, opts, uri)
            return Storage(fs, prefix), p
        if scheme in ("gs", "gcs"):
            fs, p = _gcs(netloc, path, opts)
            return Storage(fs, "gs://"), p
        try:
            fs, p = pafs.FileSystem.from_uri(uri)
            return Storage(fs, _prefix_for(uri, p)), p
        except (pafs.ArrowInvalid if hasattr(pafs, "ArrowInvalid") else ValueError, ValueError, OSError):
            pass
    except (ImportError, AttributeError) as exc:
        raise StorageError(f"{uri}: this pyarrow cannot open {scheme}:// ({exc})") from exc
    except StorageError:
        raise
    except OSError as exc:
        raise storage_error(uri, exc) from exc
    with storage_errors(uri):
        return _fsspec(uri, scheme, opts)


def _prefix_for(uri: str, path: str) -> str:
    # hdfs://host:port/a/b -> from_uri gives "/a/b": keep what precedes it.
    i = uri.find(path) if path else -1
    return uri[:i] if i > 0 else uri.split("://", 1)[0] + "://"


def _fsspec(uri: str, scheme: str, opts: dict):
    pafs = require("pyarrow.fs")
    try:
        import fsspec
    except ImportError:
        raise StorageError(f"{uri}: pyarrow does not know the scheme {scheme}:// and fsspec is "
                           f"not installed") from None
    fs, path = fsspec.core.url_to_fs(uri)
    return Storage(pafs.PyFileSystem(pafs.FSSpecHandler(fs)), f"{scheme}://"), path


def open_storage(uri: str, options: Optional[dict] = None) -> Tuple["Storage", str]:
    """:func:`resolve`, for symmetry with callers that hold a Storage already."""
    return resolve(uri, options)


# --- listing ---------------------------------------------------------------------

_GLOB = re.compile(r"[*?\[]")


def _glob_regex(pattern: str):
    """A glob as a regular expression over ``/`` paths: ``*`` and ``?`` stay inside one
    folder, ``**`` crosses folders, ``[...]``/``[!...]`` are character classes."""
    out, i, n = [], 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "*":
            if pattern.startswith("**", i):
                out.append(".*")
                i += 2
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            j = pattern.find("]", i + 2)
            if j < 0:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1:j]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = j + 1
                continue
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out))


def list_files(storage: Storage, path: str) -> List[FileEntry]:
    """Every file under ``path`` (or ``path`` itself if it is a file): on an object store one
    recursive listing, its pages the only requests (a ``path`` that is one object: the listing's
    one empty page, then the object's metadata).  Sorted by path.  A glob (``logs/*/0000*.log``, ``**``
    for any depth) lists the folder before its first wildcard once and keeps the matches
    and the files under matching folders."""
    count_listing(storage.uri(path))
    with storage_errors(storage.uri(path)):
        return _list_files(storage, path)


def _no_such_bucket(storage: Storage, path: str) -> bool:
    """Whether the first component of an object-store path (its bucket or container) is missing."""
    pafs = require("pyarrow.fs")
    if storage.is_local or not storage.prefix:
        return False
    bucket = path.lstrip("/").split("/", 1)[0]
    return bool(bucket) and storage.fs.get_file_info(bucket).type == pafs.FileType.NotFound


def _list_files(storage: Storage, path: str) -> List[FileEntry]:
    pafs = require("pyarrow.fs")
    fs = storage.fs
    m = _GLOB.search(path)
    if m:
        base = path[:m.start()].rsplit("/", 1)[0] or "/"
        pattern = _glob_regex(path)
        listing = fs.get_file_info(pafs.FileSelector(base, recursive=True, allow_not_found=True))
        dirs = tuple(i.path + "/" for i in listing
                     if i.type == pafs.FileType.Directory and pattern.fullmatch(i.path))
        out = [FileEntry(i.path, i.size, i.mtime_ns) for i in listing
               if i.type == pafs.FileType.File and (pattern.fullmatch(i.path) or i.path.startswith(dirs))]
        if not out:
            if _no_such_bucket(storage, base):
                raise StorageError(f"{storage.uri(path)}: no such bucket", storage.uri(path))
            raise FileNotFoundError(f"no file matches {storage.uri(path)}")
        return sorted(out, key=lambda e: e.path)
    if not storage.is_local:
        # An object store: the folder's listing first, its pages the only requests (asking what
        # ``path`` is first costs a HEAD and a LIST more); only an empty listing asks whether
        # ``path`` is one object, or nothing.
        out = [FileEntry(i.path, i.size, i.mtime_ns)
               for i in fs.get_file_info(pafs.FileSelector(path, recursive=True, allow_not_found=True))
               if i.type == pafs.FileType.File]
        if out:
            out.sort(key=lambda e: e.path)
            return out
    info = fs.get_file_info(path)
    if info.type == pafs.FileType.NotFound:
        if _no_such_bucket(storage, path):
            raise StorageError(f"{storage.uri(path)}: no such bucket", storage.uri(path))
        raise FileNotFoundError(f"path does not exist: {storage.uri(path)}")
    if info.type == pafs.FileType.File:
        return [FileEntry(info.path, info.size, info.mtime_ns)]
    out = [FileEntry(i.path, i.size, i.mtime_ns)
           for i in fs.get_file_info(pafs.FileSelector(path, recursive=True))
           if i.type == pafs.FileType.File]
    out.sort(key=lambda e: e.path)
    return out


# --- ranged reads ----------------------------------------------------------------

class ReadStats:
    """Bytes and requests of every :class:`RangeFile` sharing it (thread-safe counters)."""

    def __init__(self):
        self.bytes = 0
        self.requests = 0
        self.by_path: dict = {}
        self._lock = threading.Lock()

    def add(self, n: int, path: str = "") -> None:
        with self._lock:
            self.bytes += n
            self.requests += 1
            self.by_path[path] = self.by_path.get(path, 0) + n


# Segment and side-file bytes read, counted where they are read (RangeFile's requests and the
# local reader's memory maps) so that a test or a benchmark can show what a bounded read cost,
# whichever process read them (Spark executors, Ray and Daft workers).  In-process: a counter
# per path (process_bytes_read).  Across processes: when the environment variable names a
# folder, each process appends ``<bytes>\t<path>`` lines to a file of its own there
# (bytes_read sums them); set it before the workers start.
BYTES_READ_ENV = "KAFKAREC_BYTES_READ_DIR"
_process_read = ReadStats()
# Of those, the bytes a walk of batch headers read (the transaction rule's walk: a header per
# batch, a transactional batch whole for its CRC and marker), counted apart as well: what a
# command's records cost is the total less these (issue 79).
_process_walk = ReadStats()

#: what a walk of headers reads of a batch: a v2 batch's header (a legacy message's is shorter)
HEADER_WALK_BYTES = 61


def count_read(n: int, path: str, *, walk: bool = False, mapped: bool = False) -> None:
    """Count ``n`` bytes of ``path`` read (see :data:`BYTES_READ_ENV`), the one counter of every
    byte kafkarec reads of a log: ranged requests (:class:`RangeFile`) and memory-mapped reads
    (a local read's windows, the walks of a local file's headers) alike.  ``walk``: read by a
    walk of batch headers (also counted in :func:`process_walk_bytes`); ``mapped``: a walk of a
    memory-mapped file's headers, counted in this process's tallies only (the workers' files of
    :data:`BYTES_READ_ENV` hold what they read for records and through ranged requests)."""
    if n <= 0:
        return
    _process_read.add(n, path)
    if walk:
        _process_walk.add(n, path)
    if mapped:
        return
    if RangeFile.stats is not None:
        RangeFile.stats.add(n, path)
    folder = os.environ.get(BYTES_READ_ENV)
    if folder:
        line = f"{n}\t{path}\n".encode("utf-8", "surrogateescape")
        fd = os.open(os.path.join(folder, f"{os.getpid()}.tsv"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)      # one O_APPEND write: lines of threads never interleave
        finally:
            os.close(fd)


# Listings, counted where a source is listed (list_files here; a local read's
# kafkarec.log.directory.find_segment_files): one per source a command plans over, whatever the
# partitions, is what "one plan per command" means, and what tests and the planning benchmark check.
_process_listings = ReadStats()


def count_listing(uri: str) -> None:
    """Count one listing of ``uri`` (a source listed whole, however many folders it holds)."""
    _process_listings.add(1, uri)


def process_listings() -> ReadStats:
    """This process's listings since it started (``.requests``: how many; ``.by_path``: of what)."""
    return _process_listings


def process_bytes_read() -> ReadStats:
    """This process's tally since it started (``.bytes``, ``.requests``, ``.by_path``): every byte
    read, walks of headers included."""
    return _process_read


# Opens of files for ranged reads (RangeFile's: on an object store pyarrow's request for the
# object's metadata, a HEAD), and the bytes served from segments a walk held
# (:class:`HeldSegments`) instead of read again: with the listings and the reads' requests, every
# request a command makes of an object store.
_process_opens = ReadStats()
_process_held = ReadStats()


def process_opens() -> ReadStats:
    """This process's opens of files for ranged reads (``.requests``; ``.by_path``: how many of
    each): on an object store each is one request for the object's metadata (a HEAD), before the
    first ranged GET (:func:`process_bytes_read`'s ``.requests``)."""
    return _process_opens


def process_held_bytes() -> ReadStats:
    """The bytes this process's reads took from segments a walk read whole and held
    (:class:`HeldSegments`): read once, by the walk, and not requested again."""
    return _process_held


# Maps of local windows (kafkarec.log.local.iter_pieces), and the windows a registered source's
# reads took from the maps it kept open instead (kafkarec.log.window_maps): what tests count to
# show a repeated query maps nothing anew.  A hit's bytes are counted read too (count_read: the
# window is decoded whole).
_process_window_maps = ReadStats()
_process_map_hits = ReadStats()


def count_window_map(n: int, path: str = "") -> None:
    """Count one window of ``n`` bytes mapped."""
    _process_window_maps.add(n, path)


def count_map_hit(n: int, path: str = "") -> None:
    """Count one window of ``n`` bytes read from a map kept open (:class:`kafkarec.log.window_maps.WindowMaps`)."""
    _process_map_hits.add(n, path)


def process_window_maps() -> ReadStats:
    """This process's maps of local windows (``.requests``: how many; ``.bytes``: their bytes)."""
    return _process_window_maps


def process_map_hits() -> ReadStats:
    """This process's windows read from a map a source kept open (``.requests``: how many)."""
    return _process_map_hits


def process_walk_bytes() -> ReadStats:
    """The share of :func:`process_bytes_read` that walks of batch headers read (``count_read(...,
    walk=True)``): the transaction rule's walk, the local reader's walk for its cuts."""
    return _process_walk


def bytes_read(folder: str) -> dict:
    """``{path: bytes}`` every process counting into ``folder`` (:data:`BYTES_READ_ENV`) read."""
    out: dict = {}
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".tsv"):
            continue
        with open(os.path.join(folder, name), "rb") as fh:
            for line in fh:
                n, _, path = line.rstrip(b"\n").partition(b"\t")
                key = path.decode("utf-8", "surrogateescape")
                out[key] = out.get(key, 0) + int(n)
    return out


class RangeFile:
    """One file opened for ranged reads (``read_at``).  With the size from the listing
    nothing is requested until the first read (pyarrow then asks an object store for the
    object's metadata once).  ``RangeFile.stats``, when set, counts what is read."""

    stats: Optional[ReadStats] = None     # a class-level hook for tests and benchmarks
    #: what this file's reads are counted as: a walk of headers (:func:`count_read`'s ``walk``)
    walk: bool = False

    def __init__(self, storage: Storage, path: str, size: Optional[int] = None):
        self.storage = storage
        self.path = path
        self._f: Any = None
        # a segment a walk read whole and its storage kept: served from memory, no request
        self._held = storage.held.get(path, size) if storage.held is not None else None
        if size is None:
            size = len(self._held) if self._held is not None else int(self._open().size())
        self.size: int = size

    def hold(self) -> bool:
        """Read the whole file in one request and keep it on its storage for later opens of
        it (:class:`HeldSegments`), when it fits the storage's budget; what is read from here
        on is served from those bytes.  False when it does not fit or the storage keeps nothing
        (a local disk): nothing read; or when the object is shorter than its listed size."""
        held = self.storage.held
        if self._held is not None:
            return True
        if held is None or not held.reserve(self.path, self.size):
            # (or another thread holds it now: its bytes are there when this path is opened again)
            return False
        try:
            pa = require("pyarrow")
            buf = memoryview(pa.allocate_buffer(self.size)).cast("B")
            got = self.read_into(0, buf)
        except BaseException:
            held.unreserve(self.path)
            raise
        if got != self.size:
            # fewer bytes than the listing's size (the object changed since): not kept; the walk
            # reads on as it would without a hold, and meets what the object holds now
            held.unreserve(self.path)
            return False
        held.put(self.path, buf)
        self._held = buf
        return True

    def _open(self) -> Any:
        with storage_errors(self.uri):
            self._f = self.storage.fs.open_input_file(self.path)
        # (pyarrow asks an object store for the object's metadata here: a HEAD request)
        _process_opens.add(1, self.path)
        return self._f

    @property
    def uri(self) -> str:
        return self.storage.uri(self.path)

    def read_at(self, position: int, nbytes: int) -> bytes:
        """Up to ``nbytes`` bytes at ``position`` (fewer at the end of the file); one request."""
        if nbytes <= 0 or position >= self.size:
            return b""
        if self._held is not None:
            return bytes(self._from_held(position, nbytes))
        if self._f is None:
            self._open()
        nbytes = min(nbytes, self.size - position)
        with storage_errors(self.uri):
            buf = self._f.read_at(nbytes, position)
        data = buf.to_pybytes() if hasattr(buf, "to_pybytes") else bytes(buf)
        count_read(len(data), self.path, walk=self.walk)
        return data

    def read_into(self, position: int, buf) -> int:
        """Read bytes at ``position`` straight into the writable buffer ``buf`` (no copy);
        returns how many (fewer only at the end of the file)."""
        mv = memoryview(buf).cast("B")
        if self._held is not None:
            got = self._from_held(position, len(mv))
            mv[:len(got)] = got
            return len(got)
        if self._f is None:
            self._open()
        want = min(len(mv), max(0, self.size - position))
        done = 0
        with storage_errors(self.uri):
            self._f.seek(position)
            while done < want:
                n = self._f.readinto(mv[done:want])
                if not n:
                    break
                done += n
        count_read(done, self.path, walk=self.walk)
        return done

    def read_buffer(self, position: int, nbytes: int):
        """Up to ``nbytes`` at ``position`` as the file system's own buffer (pyarrow.Buffer)."""
        if self._held is not None:
            return require("pyarrow").py_buffer(self._from_held(position, nbytes))
        if self._f is None:
            self._open()
        nbytes = max(0, min(nbytes, self.size - position))
        with storage_errors(self.uri):
            self._f.seek(position)
            buf = self._f.read_buffer(nbytes)
        count_read(buf.size, self.path, walk=self.walk)
        return buf

    def _from_held(self, position: int, nbytes: int) -> memoryview:
        # bytes read once already (by the walk that held them): a read's counted apart, not as
        # read again (the holding walk's own pass over them is no read of the command's)
        got = self._held[max(0, position):max(0, position) + max(0, nbytes)]
        if len(got) and not self.walk:
            _process_held.add(len(got), self.path)
        return got

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Piece(NamedTuple):
    """Bytes of a segment (a read-only-by-convention memoryview): ``data[0]`` is byte
    ``position`` of the file.  ``data`` holds
    whole batches, except a piece that ends where framing stopped (``stopped``): a cut-off
    batch at the end of the file, or the bytes from a framing error on, which the decoder
    then reports."""
    position: int
    data: memoryview
    stopped: bool = False


def without_spans(piece: Piece, spans) -> Iterator[Piece]:
    """The parts of ``piece`` outside ``spans`` (``(position, size)`` in file positions,
    sorted, not overlapping): what is left to decode when whole batches are left out (say,
    those of aborted transactions).  Parts are views of ``piece.data``, never copies; only
    the last part keeps ``stopped``."""
    from bisect import bisect_right
    start = piece.position
    end = start + len(piece.data)
    pos = start
    # the first span that may reach into the piece
    i = max(0, bisect_right(spans, (start,)) - 1)
    for p, n in spans[i:]:
        if p >= end:
            break
        if p + n <= pos:
            continue
        if p > pos:
            yield Piece(pos, piece.data[pos - start:p - start])
        pos = p + n
    if pos < end:
        yield Piece(pos, piece.data[pos - start:], piece.stopped)


def _frame(data, base: int, end: int):
    """Frame ``data`` (file bytes from position ``base``) with the core's file rules.

    Returns ``(cut, need, fault)``: ``cut`` - the length of the whole batches at the start
    of ``data`` that start before ``end``; ``need`` - how many bytes from ``cut`` the next
    batch needs in all if one starts there before ``end`` and is incomplete in ``data``
    (18 when even its size is not there yet), else 0; ``fault`` - framing failed at ``cut``
    (a size below 14: Kafka's FileLogInputStream stops there).
    """
    limit = end - base
    it = kafkarec.iter_batches(data, _FRAMING_OPTIONS)
    while True:
        try:
            for b in it:
                if b.position >= limit:
                    return b.position, 0, False
        except DecodeError:
            if it.resumable:
                # A whole frame whose header the core refuses: framing goes on after it
                # (the decoder reports this batch), as SegmentBatchIterator does.
                it.resume()
                continue
            return it.position, 0, True        # a size below 14: Kafka stops there
        pos = it.position
        if pos >= limit:
            return pos, 0, False
        # The data ran out: the batch starting here needs next_batch_size bytes in all
        # (one more than the 17 bytes framing reads while even its size is missing).
        return pos, it.next_batch_size or HEADER_SIZE_UP_TO_MAGIC + 1, False


class _ReadAhead:
    """Consecutive chunks of ``f`` covering ``[start, end)``, each read into a fresh buffer,
    the next one requested in a background thread while the caller works on the current
    one (pyarrow releases the GIL while it reads)."""

    def __init__(self, f: RangeFile, start: int, end: int, chunk_size: int, prefetch: bool):
        self.f = f
        self.pos = start
        self.end = end
        self.chunk = chunk_size
        self._pool = None
        self._next = None
        # (a RangeFile: a plugin's SegmentObject holds nothing)
        self._held = getattr(f, "_held", None) is not None
        if self._held:
            # a held segment: its chunks are views of the held bytes (no request, no copy)
            prefetch = False
        if prefetch and chunk_size >= 64 << 10 and end - start > chunk_size:
            from concurrent.futures import ThreadPoolExecutor
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kafkarec-read")

    def _read(self, pos: int, n: int):
        if self._held:
            return self.f._from_held(pos, n)
        pa = require("pyarrow")
        buf = memoryview(pa.allocate_buffer(n)).cast("B")
        got = self.f.read_into(pos, buf)
        return buf[:got]

    def next(self) -> Optional[memoryview]:
        if self._next is not None:
            view = self._next.result()
            self._next = None
        elif self.pos < self.end:
            view = self._read(self.pos, min(self.chunk, self.end - self.pos))
        else:
            return None
        self.pos += len(view)
        if not len(view):
            return None
        if self._pool is not None and self.pos < self.end:
            self._next = self._pool.submit(self._read, self.pos, min(self.chunk, self.end - self.pos))
        return view

    def close(self) -> None:
        if self._pool is not None:
            if self._next is not None:
                self._next.cancel()
            self._pool.shutdown(wait=True)
            self._pool = None


def _join(a, b) -> memoryview:
    pa = require("pyarrow")
    buf = memoryview(pa.allocate_buffer(len(a) + len(b))).cast("B")
    buf[:len(a)] = a
    buf[len(a):] = b
    return buf


def iter_pieces(f: RangeFile, start: int = 0, end: Optional[int] = None, *,
                chunk_size: int = DEFAULT_CHUNK, prefetch: bool = True) -> Iterator[Piece]:
    """The batches of ``f`` that start in ``[start, end)``, in pieces of whole batches of
    about ``chunk_size`` bytes.

    ``start`` must be where a batch starts (0, an index position, a planned cut).  A batch
    that starts before ``end`` is read whole even if it runs past ``end``.  Reads: chunks of
    the range in order, each byte once, the next chunk read ahead in a background thread
    (``prefetch``) while the caller decodes; only the last batch's bytes past ``end`` are
    read beyond the range.  Memory: two chunks (the current one and the one read ahead),
    or a batch if larger.  Each chunk lands in a fresh buffer (pyarrow memory, not
    zero-filled), so a piece stays valid while the caller holds it; a batch that crosses
    from one chunk to the next is copied into a piece of its own.  A cut-off batch at the
    end of the file, or a framing error, ends the walk with a piece marked ``stopped``
    holding the bytes from there (the decoder reports them).
    """
    size = f.size
    end = size if end is None else min(end, size)
    src = _ReadAhead(f, start, end, chunk_size, prefetch)
    pos = start
    view = memoryview(b"")      # bytes from ``pos`` on, not yet handed out
    rest = None                 # bytes already read that follow ``view``
    need = 0
    try:
        while pos < end:
            if not len(view) or need > len(view):
                more, rest = (rest, None) if rest is not None else (src.next(), None)
                if more is None and need > len(view) and pos + len(view) < size:
                    # The last batch runs past the range: read just what it lacks.
                    more = src._read(pos + len(view), need - len(view))
                if more is None or not len(more):
                    if len(view):
                        yield Piece(pos, view, True)   # cut off by the end of the file
                    return
                if not len(view):
                    view = more
                else:
                    # Complete the batch that crosses into ``more`` (or learn its size).
                    take = min(len(more), max(need, 64) - len(view))
                    view = _join(view, more[:take])
                    rest = more[take:] if take < len(more) else None
            cut, need, fault = _frame(view, pos, end)
            if fault:
                yield Piece(pos, view, True)
                return
            if cut:
                yield Piece(pos, view[:cut])
                pos += cut
                view = view[cut:]
            if not need:
                return
    finally:
        src.close()


class BatchWalk:
    """The batches of a byte range of a segment, handed in as pieces of whole batches in file
    order (:class:`Piece` s: :func:`iter_pieces`', a listed range's, a local slice's), each
    framed by the core (:func:`kafkarec.iter_batches`) with ``origin`` its file position, so
    that every batch's ``position``, and a :class:`kafkarec.DecodeError`'s, is a file position.
    The one loop over a range's batches: the transaction rule's walk and a replay
    (:mod:`kafkarec.log.committed`), a remote range's batches (:func:`iter_remote_batches`), the
    scan's framed pieces and its offset-order rule (tests/test_layout.py keeps it the one).

    ``options``: the core's (the caller's framing: Kafka's file rules, CRCs checked or not).
    ``until``: a batch whose first offset is at or past it ends the walk, not yielded (a later
    copy of the segment holds the offsets from there).  ``errors``: ``"raise"``, a
    :class:`kafkarec.DecodeError` met framing (or reading the first offset ``until`` asks)
    propagates, as a segment read on disk raises it; ``"stop"``, it ends the walk, kept in
    :attr:`error` (the caller reports it, or leaves the bytes to the decoder that will).

    Once the walk ends, :attr:`stop_reason` says why: ``"end"`` (the pieces ran out, each framed
    to its end), ``"until"``, ``"truncated"`` (the last piece, ``stopped``, ends in a batch cut
    off by the file's end: no batch of the log end), ``"error"`` (a framing error: raised,
    kept in :attr:`error`, or the bytes of a stopped piece the core would not frame); None
    while it walks, or when its caller stopped walking."""

    __slots__ = ("pieces", "options", "until", "errors", "stop_reason", "error", "tail")

    def __init__(self, pieces, options: Optional[kafkarec.ReadOptions] = None, *, until: Optional[int] = None,
                 errors: str = "raise"):
        if errors not in ("raise", "stop"):
            raise ValueError(f"errors must be 'raise' or 'stop', not {errors!r}")
        self.pieces = pieces
        self.options = options
        self.until = until
        self.errors = errors
        self.stop_reason: Optional[str] = None
        self.error: Optional[DecodeError] = None
        #: the core's word on the last piece framed: ``(its stop_reason, its trailing bytes)`` (a
        #: count that must know every byte was a whole batch asks it)
        self.tail: Tuple[Optional[str], int] = (None, 0)

    def __iter__(self) -> Iterator:
        until = self.until
        for piece in self.pieces:
            it = kafkarec.iter_batches(piece.data, self.options, origin=piece.position)
            try:
                for b in it:
                    # the batch's first offset as Kafka's baseOffset() (a legacy wrapper is opened
                    # only here, where a later copy's end has to be compared)
                    if until is not None and b.base_offset >= until:
                        self.stop_reason = "until"
                        return
                    yield b
            except DecodeError as e:
                self.stop_reason = "error"
                if self.errors == "raise":
                    raise
                self.error = e
                return
            self.tail = (it.stop_reason, it.trailing_bytes)
            if piece.stopped:
                # a stopped piece is the range's last: a batch cut off by the file's end is not
                # counted (the log end's rule), any other stop is a framing error
                self.stop_reason = "truncated" if it.stop_reason == "truncated" else "error"
                return
        self.stop_reason = "end"


def iter_remote_batches(f: RangeFile, start: int = 0, end: Optional[int] = None,
                        options: Optional[kafkarec.ReadOptions] = None, *,
                        chunk_size: int = DEFAULT_CHUNK, prefetch: bool = True):
    """``(absolute position, kafkarec.RecordBatch)`` for the batches of a remote segment
    range, in bounded memory (see :func:`iter_pieces`), read with ``options`` (default:
    CRCs checked) and Kafka's file framing; positions, those of decode errors too, are file
    positions (each piece is read with its ``origin``); ``prefetch``: as :func:`iter_pieces`."""
    from kafkarec.log.segment import file_options
    options = file_options(options)
    for b in BatchWalk(iter_pieces(f, start, end, chunk_size=chunk_size, prefetch=prefetch), options):
        yield b.position, b
