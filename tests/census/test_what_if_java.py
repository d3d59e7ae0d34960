"""The what-if's batches against Kafka's own MemoryRecordsBuilder (kafka-clients 4.4.0, the
Kafka the tests run: tests/java/ProducerBatchOracle.java in one JVM): the same records cut into
the same batches, built with each codec and level, are the same number of bytes, batch by
batch, and the same bytes."""
import base64
import json

import pytest

from kafkarec.census import parse_codecs, what_if
from kafkarec.census.what_if import _Writer
from kafkarec.scan import Bounds, LogScan

SPEC = "zstd:3,zstd:9,zstd:-5,zstd,lz4,lz4:1,lz4:2,lz4:3,lz4:17,snappy,gzip,gzip:1,gzip:9,none"


@pytest.fixture(scope="module")
def oracle():
    from support.java import LineOracle, compiled
    from support.jvm import classpath, require_tools
    from support.paths import ROOT
    require_tools()
    program = compiled(f"{ROOT}/tests/java/ProducerBatchOracle.java", classpath("jvm/kafka"))
    o = LineOracle(program.command(jvm_flags=["-XX:+UseSerialGC", "-Xmx512m"]), "ProducerBatchOracle")
    yield o
    o.close()


def _b64(data):
    return None if data is None else base64.b64encode(data).decode()


@pytest.mark.parametrize("keep_batches", [False, True])
def test_what_if_bytes_are_memory_records_builders(oracle, tmp_path, keep_batches):
    from support.oracles.javacodec import require_kafkas_snappy
    require_kafkas_snappy()         # snappy's bytes are Google snappy 1.1's, the system's
    from kafkarec.sample import generate
    root = str(tmp_path / "sample")
    generate(root, seed=7, scale=1)
    bounds = Bounds.of(topics=["orders", "payments"])           # headers, transactions, every codec
    codecs = parse_codecs(SPEC)
    doc = what_if(root, codecs, bounds=bounds, detail=True, keep_batches=keep_batches)
    assert not doc["errors"]
    table = LogScan(root, bounds=bounds, isolation_level="read_committed").to_table()
    ts = table.column("timestamp").cast("int64").to_pylist()
    rows = table.to_pylist()
    requests, expected, ours = [], [], []
    for part in doc["partitions"]:
        records = [[ts[i], _b64(r["key"]), _b64(r["value"]), [[h["key"], _b64(h["value"])] for h in r["headers"] or ()]]
                   for i, r in enumerate(rows) if (r["topic"], r["partition"]) == (part["topic"], part["partition"])]
        for codec, figures in zip(codecs, part["codecs"]):
            assert figures["codec"] == codec.label and sum(figures["batch_records"]) == len(records)
            requests.append(json.dumps({"codec": codec.name, "level": codec.level, "batch_size": 16384,
                                        "counts": figures["batch_records"], "records": records}))
            expected.append((part["topic"], part["partition"], codec.label, figures["batch_bytes"]))
            # the what-if's own writer over the same records, cut where the what-if cut them
            writer, cuts = _Writer(codec, None, sink=[]), []
            for count in figures["batch_records"][:-1]:
                cuts.append((cuts[-1] if cuts else 0) + count)
            writer.append_all([(base64.b64decode(v) if v is not None else None,
                                base64.b64decode(k) if k is not None else None, t,
                                [(hk, base64.b64decode(hv) if hv is not None else None) for hk, hv in hs])
                               for t, k, v, hs in records], cuts)
            writer.close()
            assert [len(b) for b in writer.sink] == figures["batch_bytes"]
            ours.append(writer.sink)
    answers = [json.loads(a) for a in oracle.ask(requests, timeout=300)]
    wrong, unequal = [], []
    for (topic, partition, label, want), answer, batches in zip(expected, answers, ours):
        assert "error" not in answer, (topic, partition, label, answer)
        if answer["sizes"] != want:
            wrong.append((topic, partition, label, sum(want), sum(answer["sizes"])))
        elif [base64.b64decode(b) for b in answer["batches"]] != batches:
            unequal.append((topic, partition, label))
    assert not wrong, (sorted({w[2] for w in wrong}), wrong)
    assert not unequal, unequal
    assert len(answers) == len(expected) == 4 * len(codecs)
