"""Kafka's own internal-topic segments and their expected decodings (tests/data/internal-topics/)."""
import glob
import json
import os

from support.paths import TESTS

DATA = os.path.join(TESTS, "data", "internal-topics")


def expected_files():
    return sorted(glob.glob(os.path.join(DATA, "expected", "*", "*.json")))


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def segment_path(expected):
    return os.path.join(DATA, expected["segment"])


def records(expected):
    """(kafkarec Record, expected record dict, batch dict) for every record of one expected file."""
    from kafkarec.log.segment import Segment
    with Segment(segment_path(expected)) as seg:
        got = [(r, b) for b in seg.batches() for r in b]
        exp = [(r, b) for b in expected["batches"] for r in b["records"]]
        assert len(got) == len(exp) == expected["record_count"]
        for (r, _), (e, b) in zip(got, exp):
            assert r.offset == e["offset"]
            yield r, e, b
