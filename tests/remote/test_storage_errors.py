"""Storage failures are ONE line naming the URI: wrong credentials and a missing bucket
against a real S3 server (SeaweedFS), an unreachable endpoint (a closed port on
127.0.0.1).  Library callers get a StorageError (a KafkaRecError and an OSError);
`kafkarec dump|stats|verify` print that line and exit 2, without a traceback."""
from __future__ import annotations

import pickle
import time

import pytest

from kafkarec.cli import main
from kafkarec.errors import KafkaRecError, StorageError
from kafkarec.log import layout, storage
from support.logs.logdir import build_log_dir
from support.net import free_port

BUCKET = "errors-logs"
COMMANDS = (("dump",), ("stats", "--no-progress"), ("verify", "--no-progress"))


@pytest.fixture(scope="module")
def s3_uri(s3, tmp_path_factory):
    root = str(tmp_path_factory.mktemp("logs"))
    build_log_dir(root)
    s3.upload_dir(root, BUCKET, "cluster")
    return f"s3://{BUCKET}/cluster"


@pytest.fixture
def clean_env(monkeypatch):
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL",
              "AWS_ENDPOINT_URL_S3", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(k, raising=False)


def _options(s3, **over) -> dict:
    opts = dict(s3.options())
    opts.update(over)
    return opts


def _flags(opts: dict) -> list:
    return [f"--storage-option={k}={v}" for k, v in opts.items()]


def _closed_port() -> int:
    return free_port()        # nothing listens once the socket is closed


def _one_line(capfd, args, uri: str) -> str:
    code = main(list(args))
    out, err = capfd.readouterr()
    assert code == 2, (code, out, err)
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert uri in err, err
    return err


def _library_error(uri: str, opts: dict) -> StorageError:
    st, path = storage.resolve(uri, opts)
    with pytest.raises(StorageError) as info:
        layout.scan(st, path)
    err = info.value
    assert isinstance(err, KafkaRecError) and isinstance(err, OSError)
    assert "\n" not in str(err) and uri in str(err) and err.uri == uri
    again = pickle.loads(pickle.dumps(err))          # as Spark ships it from an executor
    assert type(again) is StorageError and str(again) == str(err) and again.uri == uri
    return err


def test_wrong_secret_key(s3, s3_uri, clean_env, capfd):
    opts = _options(s3, secret_key="not-the-secret")
    assert "access denied (AWS Error" in str(_library_error(s3_uri, opts))
    for cmd in COMMANDS:
        err = _one_line(capfd, [*cmd, *_flags(opts), s3_uri], s3_uri)
        assert f"kafkarec {cmd[0]}: error: {s3_uri}" in err and "access denied" in err, err


def test_unknown_access_key(s3, s3_uri, clean_env, capfd):
    opts = _options(s3, access_key="nobody-has-this-key")
    assert "access denied" in str(_library_error(s3_uri, opts))


def test_no_such_bucket(s3, clean_env, capfd):
    uri = "s3://no-such-bucket-here/cluster"
    assert str(_library_error(uri, _options(s3))) == f"{uri}: no such bucket"
    for cmd in COMMANDS:
        err = _one_line(capfd, [*cmd, *_flags(_options(s3)), uri], uri)
        assert "no such bucket" in err, err


def test_unreachable_endpoint(s3, clean_env, capfd):
    port = _closed_port()
    opts = _options(s3, endpoint=f"http://127.0.0.1:{port}", connect_timeout=1, request_timeout=2,
                    max_attempts=1)
    uri = f"s3://{BUCKET}/cluster"
    t0 = time.monotonic()
    err = _library_error(uri, opts)
    assert f"cannot reach the endpoint (127.0.0.1:{port}" in str(err), str(err)
    for cmd in COMMANDS:
        line = _one_line(capfd, [*cmd, *_flags(opts), uri], uri)
        assert "cannot reach the endpoint" in line, line
    assert time.monotonic() - t0 < 30


def test_a_missing_object_stays_a_missing_file(s3, s3_uri, clean_env):
    """Inside an existing bucket, a path that is not there is FileNotFoundError (the callers
    say "no such file or directory"), not a storage failure."""
    st, path = storage.resolve(s3_uri + "-not-there", _options(s3))
    with pytest.raises(FileNotFoundError):
        storage.list_files(st, path)


@pytest.mark.parametrize("text, what", [
    ("When getting information for key 'x' in bucket 'b': AWS Error NETWORK_CONNECTION during "
     "HeadObject operation: curlCode: 7, Could not connect to server; Details: Failed to connect "
     "to 10.0.0.1:9000 after 0 ms", "cannot reach the endpoint (10.0.0.1:9000; AWS Error NETWORK_CONNECTION during HeadObject)"),
    ("AWS Error UNKNOWN (HTTP status 400) during ListObjectsV2 operation: ExpiredToken: The provided "
     "token has expired.", "credentials expired (AWS Error UNKNOWN during ListObjectsV2, HTTP 400)"),
    ("AWS Error ACCESS_DENIED during HeadObject operation: No response body.",
     "access denied (AWS Error ACCESS_DENIED during HeadObject)"),
    ("AWS Error NO_SUCH_BUCKET during ListObjectsV2 operation: The specified bucket does not exist",
     "no such bucket (AWS Error NO_SUCH_BUCKET during ListObjectsV2)"),
    ("something\nelse", "something else"),
])
def test_failure_names(text, what):
    err = storage.storage_error("s3://b/x", OSError(text))
    assert str(err) == f"s3://b/x: {what}" and err.uri == "s3://b/x"
    assert isinstance(err.__cause__, OSError)


@pytest.mark.parametrize("text, what, retriable", [
    ("AWS Error SLOW_DOWN during GetObject operation: Please reduce your request rate.",
     "throttled or unavailable (AWS Error SLOW_DOWN during GetObject)", True),
    ("AWS Error UNKNOWN (HTTP status 503) during GetObject operation: Service Unavailable",
     "throttled or unavailable (AWS Error UNKNOWN during GetObject, HTTP 503)", True),
    ("AWS Error INTERNAL_FAILURE during ListObjectsV2 operation: We encountered an internal error.",
     "throttled or unavailable (AWS Error INTERNAL_FAILURE during ListObjectsV2)", True),
    ("When reading information for key 'x' in bucket 'b': AWS Error NETWORK_CONNECTION during HeadObject "
     "operation: curlCode: 28, Timeout was reached", "cannot reach the endpoint (AWS Error NETWORK_CONNECTION "
     "during HeadObject)", True),
    ("AWS Error NETWORK_CONNECTION during GetObject operation: curlCode: 56, Failure when receiving data from "
     "the peer", "cannot reach the endpoint (AWS Error NETWORK_CONNECTION during GetObject)", True),
    ("AWS Error NETWORK_CONNECTION during HeadObject operation: curlCode: 6, Could not resolve host: nowhere",
     "cannot reach the endpoint (nowhere; AWS Error NETWORK_CONNECTION during HeadObject)", False),
    ("AWS Error ACCESS_DENIED during HeadObject operation: No response body.",
     "access denied (AWS Error ACCESS_DENIED during HeadObject)", False),
    ("AWS Error NO_SUCH_BUCKET during ListObjectsV2 operation: The specified bucket does not exist",
     "no such bucket (AWS Error NO_SUCH_BUCKET during ListObjectsV2)", False),
])
def test_throttling_5xx_and_timeouts_are_retriable(text, what, retriable):
    """What may pass when asked again (a restore's Spark task is tried again: docs/restore.md) is
    said by the one table that names the failure; the pickle to a driver keeps it."""
    err = storage.storage_error("s3://b/x", OSError(text))
    assert str(err) == f"s3://b/x: {what}"
    assert err.retriable is retriable and pickle.loads(pickle.dumps(err)).retriable is retriable


def test_bad_timeout_option():
    with pytest.raises(StorageError, match="connect_timeout must be a number"):
        storage.resolve("s3://b/x", {"endpoint": "http://127.0.0.1:1", "connectTimeout": "soon"})


@pytest.mark.spark
def test_spark_shows_the_one_line(spark, s3, s3_uri, clean_env):
    """The data source plans through kafkarec.log: its error is the same line, not a
    pyarrow traceback about AWS errors."""
    from support.spark import spark_helpers as H
    opts = _options(s3, secret_key="not-the-secret")
    with pytest.raises(Exception) as info:
        H.read(spark, s3_uri, **opts).collect()
    text = str(info.value)
    assert f"{s3_uri}: access denied (AWS Error" in text, text[-3000:]
