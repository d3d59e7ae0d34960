"""What Debezium wrote (tests/cdc/conftest.py) holds every kind of change the database made."""
import glob
import json
import os

import pytest

import kafkarec

pytestmark = [pytest.mark.slow]


def log_rows(log_dir, topic):
    out = []
    for path in sorted(glob.glob(os.path.join(log_dir, topic + "-0", "*.log"))):
        with open(path, "rb") as fh:
            out += kafkarec.to_arrow(fh.read()).select(["key", "value", "offset"]).to_pylist()
    return out


def test_the_capture_holds_every_kind_of_change(debezium_capture):
    log_dir, final = debezium_capture
    ops = {}
    for table in ("customers", "orders"):
        for prefix in ("plain", "dbz"):
            for r in log_rows(log_dir, f"{prefix}.public.{table}"):
                if r["value"] is None:
                    ops.setdefault((prefix, table), set()).add("tombstone")
                    continue
                v = json.loads(r["value"])
                if prefix == "dbz":
                    assert set(v) == {"schema", "payload"}
                    v = v["payload"]
                ops.setdefault((prefix, table), set()).add(v["op"])
    print(ops)
    assert ops[("plain", "customers")] == {"r", "c", "u", "d", "tombstone"}
    assert ops[("plain", "orders")] >= {"r", "c", "u", "t", "d"}
    assert ops[("dbz", "customers")] == ops[("plain", "customers")]
    assert [r["id"] for r in final["customers"]] == [1, 2, 4, 5, 40]
    assert [r["id"] for r in final["orders"]] == [11]
