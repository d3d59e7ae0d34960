"""Properties text read as Java's ``Properties.load`` reads it (kafkarec/log/_java_properties.py): the
tiered-storage plugin gets its ``tieredStorageConfig`` through ``Properties.load``, so kafkarec
must find the same keys and values (issue 40, finding 8).

CASES were answered by Java 17's ``Properties.load`` (tests/java/PropertiesOracle.java); with a
``java`` on PATH the table is asked again, and generated texts (the plugin's own settings with
escapes, separators, comments and continuations put anywhere) are compared with Java, a batch per example."""
from __future__ import annotations

import shutil

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kafkarec.log._java_properties import load_properties
from kafkarec.errors import KafkaRecError, PropertiesError
from kafkarec.log import rsm

# text -> what Properties.load reads (None: it throws IllegalArgumentException)
CASES = {
    "# a comment ending in a backslash\\\nkey.prefix=p/": {"key.prefix": "p/"},
    "! bang comment\\\nchunk.size=4": {"chunk.size": "4"},
    "key.prefix p/": {"key.prefix": "p/"},
    "key.prefix\t\f p/": {"key.prefix": "p/"},
    "key.prefix  =  :p/": {"key.prefix": ":p/"},
    "storage.root=/a\\\n     /b": {"storage.root": "/a/b"},
    "a=b\\\n\n#c": {"a": "b"},
    "k\\\n#x=y": {"k#x": "y"},
    "\\\n#x\ny": {"y": ""},
    "\\": {"": ""},
    "a\\=b\\:c\\ d=e": {"a=b:c d": "e"},
    "a=\\u0041\\t\\n\\r\\f\\x\\\\": {"a": "A\t\n\r\fx\\"},
    "k:\\uD83D\\uDE00": {"k": "\U0001F600"},
    "\\uD800=\\uDC00x": {"\ud800": "\udc00x"},
    "x\r\ny\rz\n": {"x": "", "y": "", "z": ""},
    "a\\\r\n   b\r\n": {"ab": ""},
    "a\\\r\rb": {"a": "", "b": ""},
    "k=1\x0bv": {"k": "1\x0bv"},
    "k=1\u2028v": {"k": "1\u2028v"},
    "k=1\nk=2": {"k": "2"},
    "   \t\f\n\n  =v": {"": "v"},
    "a=\\u12": None,
    "a\\u004=1": None,
    "a=\\uXYZW": None,
}


@pytest.mark.parametrize("text", list(CASES))
def test_properties_are_read_as_java_reads_them(text):
    if CASES[text] is None:
        with pytest.raises(PropertiesError) as info:
            load_properties(text, "rsm.properties")
        assert "rsm.properties, line 1: malformed \\uxxxx encoding" in str(info.value)
    else:
        assert load_properties(text) == CASES[text]


def test_the_plugins_config_is_read_as_the_plugin_reads_it():
    config = rsm.load_config("# the plugin's settings\\\nkey.prefix=tiered/\n"
                             "rsm.config.storage.root /var/objects\\\n    /x\n"
                             "encryption.key.pairs=k\\u0031\n")
    assert config.key_prefix == "tiered/"
    assert config.storage_root() == "/var/objects/x"
    assert list(config.key_pairs) == ["k1"]


def test_a_refused_escape_names_the_file_and_line(tmp_path):
    path = tmp_path / "rsm.properties"
    path.write_text("key.prefix=p/\n# fine\n\nchunk.size=\\u00zz\n")
    with pytest.raises(PropertiesError) as info:
        rsm.load_config(str(path))
    assert isinstance(info.value, KafkaRecError) and isinstance(info.value, ValueError)
    assert (info.value.source, info.value.line) == (str(path), 4)
    assert str(info.value) == f"{path}, line 4: malformed \\uxxxx encoding: \\u00zz"



def test_a_config_file_is_read_as_iso_8859_1(tmp_path):
    # the broker hands its config file to Properties.load(InputStream): one byte, one character
    path = tmp_path / "rsm.properties"
    path.write_bytes("key.prefix=caf\\u00e9/\nrsm.config.storage.root=/d/é\n".encode("utf-8"))
    config = rsm.load_config(str(path))
    assert config.key_prefix == "café/"
    assert config.storage_root() == "/d/\u00c3\u00a9"

# -- against a live Java ----------------------------------------------------------------------------

needs_java = pytest.mark.skipif(shutil.which("java") is None or shutil.which("javac") is None,
                                reason="no JDK on PATH to ask Properties.load")

# The plugin's own settings (Aiven's RemoteStorageManagerConfig and its backends), the broker's prefix
PLUGIN_KEYS = ["storage.backend.class", "key.prefix", "key.prefix.mask", "chunk.size", "compression.enabled",
               "compression.heuristic.enabled", "encryption.enabled", "encryption.key.pair.id",
               "encryption.key.pairs", "encryption.key.pairs.k1.public.key.file",
               "encryption.key.pairs.k1.private.key.file", "segment.manifest.cache.size",
               "segment.manifest.cache.retention.ms", "segment.indexes.cache.size",
               "custom.metadata.fields.include", "storage.root", "storage.s3.bucket.name",
               "storage.s3.endpoint.url", "storage.s3.region", "storage.s3.path.style.access.enabled",
               "storage.gcs.bucket.name", "storage.azure.container.name", "metrics.num.samples"]
VALUES = ["", "tiered/", "true", "4194304", "/var/lib/kafka/keys/public.pem", "s3://bucket/a b",
          "http://127.0.0.1:9000", "io.aiven.kafka.tieredstorage.storage.filesystem.FileSystemStorage",
          "REMOTE_SIZE,OBJECT_PREFIX", "k1,k2", "C:\\\\keys\\\\private.pem", "é", "\U0001F600"]
# what Properties.load treats specially, where it is easy to get wrong
PIECES = ["\\", "\\\\", "\\u0041", "\\uD83D\\uDE00", "\\uDC00", "\\u12", "\\=", "\\:", "\\ ", "\\#", "\\t",
          "\\n", "\\r", "\\f", "\\x", "#", "!", "=", ":", " ", "\t", "\f", "\x0b", "\u2028", "\r", "\n",
          "\r\n", "\\\n", "\\\r\n", "\\\r", "\\\n   ", "\\\n#", "\\\n!", "\\\n\n"]
BREAKS = ["\n", "\r\n", "\r", "\\\n", "\n\n", "\n  "]

_prefix = st.sampled_from(["", "rsm.config.", " ", "\t ", "# ", "! ", "#", "\\\n"])
_separator = st.sampled_from(["=", ":", " ", "\t", " = ", "\f:", "  :  ", "==", " =: ", ""])
_bits = st.lists(st.one_of(st.sampled_from(VALUES), st.sampled_from(PIECES)), max_size=4).map("".join)
_line = st.builds(lambda p, k, s, v, tail: p + k + s + v + tail,
                  _prefix, st.one_of(st.sampled_from(PLUGIN_KEYS), _bits), _separator,
                  st.one_of(st.sampled_from(VALUES), _bits), _bits)
plugin_texts = st.lists(st.tuples(_line, st.sampled_from(BREAKS)), max_size=8).map(
    lambda lines: "".join(line + end for line, end in lines))
any_texts = st.text(st.sampled_from("ab=:#! \t\f\r\n\\u0DAé\x0b\u2028\U0001F600"), max_size=40)


@pytest.fixture(scope="module")
def java_properties():
    from support.oracles.properties_oracle import PropertiesOracle
    oracle = PropertiesOracle()
    yield oracle
    oracle.close()


def _same_as_java(oracle, texts):
    for text, answer in zip(texts, oracle.ask(texts)):
        if isinstance(answer, dict):
            assert load_properties(text) == answer, text
        else:
            with pytest.raises(PropertiesError):
                load_properties(text)


@needs_java
def test_the_recorded_table_is_still_javas(java_properties):
    answers = java_properties.ask(list(CASES))
    assert {t: (a if isinstance(a, dict) else None) for t, a in zip(CASES, answers)} == CASES


@needs_java
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(plugin_texts, any_texts), min_size=1, max_size=12))
def test_generated_texts_are_read_as_java_reads_them(java_properties, texts):
    _same_as_java(java_properties, texts)
