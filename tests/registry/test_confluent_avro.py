"""End to end on bytes we did not write: values and keys from confluent-kafka's AvroSerializer
(id prefix and header GUIDs, an evolved schema), the registry replayed from ``_schemas-0``,
decoded by kafkarec's Avro decoder to the latest version's type; also the CLI surfaces."""
from __future__ import annotations

import io
import json
import os

import pyarrow as pa
import pytest

import kafkarec
import kafkarec.registry as kr

from support.registry import registry_world as world

pytest.importorskip("confluent_kafka.schema_registry.avro")


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("confluent"))
    facts = world.build(root)
    return root, facts


def _orders_table(root):
    data = open(os.path.join(root, "orders-0", "00000000000000000000.log"), "rb").read()
    return kafkarec.to_arrow(data, topic="orders")


def _check(out, facts):
    rows = out.to_pylist()
    assert len(rows) == len(facts["expected"])
    for row, (key, value, err) in zip(rows, facts["expected"]):
        assert row["value"] == value, (row["offset"], row["value"], value)
        if err is None:
            assert row["_corrupt_record"] is None, row
        else:
            assert row["_corrupt_record"] is not None and err in row["_corrupt_record"], row
        if key is not None:
            assert row["key"] == key


def test_python_surface_to_arrow(logdir):
    root, facts = logdir
    reg = kr.load(root)
    assert not reg.problems
    out = kr.decode_table(_orders_table(root), reg, key=True)
    _check(out, facts)
    assert pa.types.is_struct(out.schema.field("value").type)
    assert out.schema.field("key").type == pa.string()        # a primitive schema, a primitive column
    v1, v2 = sorted(facts["ids"]["orders-value"])
    assert out.column("value_schema_id").to_pylist()[:11] == [v1] * 5 + [v2] * 6
    assert out.column("offset").to_pylist() == list(range(len(facts["expected"])))


def test_python_surface_iter_arrow_and_log_readers(logdir):
    root, facts = logdir
    reg = kr.load(root)
    columns = {}
    outs = []
    data = open(os.path.join(root, "orders-0", "00000000000000000000.log"), "rb").read()
    for rb in kafkarec.iter_arrow(data, topic="orders"):
        outs.append(kr.decode_table(pa.Table.from_batches([rb]), reg, key=True, columns=columns))
    _check(pa.concat_tables(outs), facts)
    # The one reader (any storage): LogScan yields the same batches.
    from kafkarec.scan import LogScan
    got = [kr.decode_table(pa.Table.from_batches([rb]), reg, key=True, columns=columns)
           for rb in LogScan(root, topics=["orders"], threads=1)]
    _check(pa.concat_tables(got), facts)


def test_pinned_reader_version_and_reader_schema(logdir):
    root, facts = logdir
    reg = kr.load(root)
    out = kr.decode_table(_orders_table(root), reg, value_version=1)
    names = [f.name for f in out.schema.field("value").type]
    assert names == ["id", "amount", "status", "ts", "qty"]
    # v2 records read as v1: the added fields are skipped; qty long -> int is not a promotion.
    corrupt = out.column("_corrupt_record").to_pylist()
    assert corrupt[0] is None and corrupt[5] is not None and "cannot be read" in corrupt[5]
    reader = json.dumps({"type": "record", "name": "Order", "namespace": "com.acme",
                         "fields": [{"name": "id", "type": "long"}]})
    out = kr.decode_table(_orders_table(root), reg, value_reader_schema=reader)
    assert out.column("value").to_pylist()[:2] == [{"id": 0}, {"id": 1}]


def test_cli_schemas_lists_like_the_rest_api(logdir):
    from kafkarec.cli.main import main
    root, facts = logdir
    out, err = io.StringIO(), io.StringIO()
    import contextlib
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["schemas", root, "--json"])
    assert rc == 0, err.getvalue()
    listing = json.loads(out.getvalue())
    assert [(e["subject"], e["version"]) for e in listing] == [("orders-key", 1), ("orders-value", 1),
                                                              ("orders-value", 2)]
    assert all("schema" in e and "id" in e and "guid" in e for e in listing)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["schemas", os.path.join(root, "_schemas-0")]) == 0
    assert "orders-value" in out.getvalue() and "2 subjects, 3 versions" in out.getvalue()


def test_cli_dump_value_decoder_registry(logdir):
    import contextlib
    from kafkarec.cli.main import main
    root, facts = logdir
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["dump", os.path.join(root, "orders-0"), "--value-decoder", "registry",
                   "--key-decoder", "registry", "--registry", root, "--json"])
    recs = [json.loads(l) for l in out.getvalue().splitlines() if '"type": "record"' in l or '"type":"record"' in l]
    assert len(recs) == len(facts["expected"]), out.getvalue()[:2000]
    assert recs[0]["decoded_value"]["id"] == 0 and recs[0]["decoded_key"] == "k0"
    assert recs[0]["decoded_value"]["amount"] == "0.00"
    assert recs[5]["decoded_value"]["lines"] == [{"sku": "s5", "n": 1}, {"sku": "x", "n": 5}]
    assert "Unknown magic byte" in recs[11]["value_error"]
    assert recs[14]["decoded_value"] is None and "value_error" not in recs[14]
    # Text mode: kafka-dump-log's lines with the JSON of the decoded value.
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        main(["dump", os.path.join(root, "orders-0"), "--value-decoder", "registry", "--registry", root])
    lines = [l for l in out.getvalue().splitlines() if l.startswith("| offset: 0 ")]
    assert lines and 'payload: {"id": 0, "amount": "0.00", "status": "NEW"' in lines[0], lines
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["dump", os.path.join(root, "orders-0"), "--value-decoder", "registry"])
    assert rc == 2 and "--registry" in err.getvalue()
