"""The hand-off point H (the LSO at the chosen end) and the backfill's rows of [start, H), on logs
written as a broker writes them, against a plain model of read_committed."""
from __future__ import annotations

import os
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

pa = pytest.importorskip("pyarrow")

from kafkarec.errors import SelectionError  # noqa: E402
from kafkarec.lakehouse import backfill_batches, hand_off_points, positions  # noqa: E402
from support.logs.lakehouse_logs import ops_strategy, write_partition  # noqa: E402

OPS = ops_strategy()


def _offsets(log_dir, layout="kafka-delta-ingest", **kw):
    pos = positions(list(backfill_batches(log_dir, layout, **kw)), layout, topic="t")
    return sorted(zip(pos.column("partition").to_pylist(), pos.column("offset").to_pylist()))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS, cut=st.integers(0, 60))
def test_hand_off_is_the_lso_and_the_rows_are_read_committed(ops, cut):
    with tempfile.TemporaryDirectory() as root:
        m = write_partition(root, "t", 0, ops, segment_bytes=300)
        points = hand_off_points(root)
        assert points == {("t", 0): (0, m.lso())}
        assert _offsets(root) == [(0, o) for o in m.read_committed(0, m.lso())]
        # an earlier end: the LSO of the log as it stood there
        end = min(cut, m.end)
        h = m.lso(end)
        assert hand_off_points(root, end_offsets={("t", 0): end})[("t", 0)].end == h
        assert _offsets(root, end_offsets={"t": {0: end}}) == [(0, o) for o in m.read_committed(0, h)]


def test_an_open_transaction_holds_h_at_its_first_offset(tmp_path):
    root = str(tmp_path)
    m = write_partition(root, "t", 0, [("plain", 3), ("data", 7, 2), ("data", 8, 2), ("commit", 7),
                                       ("plain", 2), ("data", 9, 1), ("abort", 9), ("plain", 1)])
    write_partition(root, "t", 1, [("plain", 4)])
    # producer 8's transaction (offsets 5, 6) never ends: H = 5 whatever follows
    assert hand_off_points(root) == {("t", 0): (0, 5), ("t", 1): (0, 4)}
    assert m.lso() == 5
    assert _offsets(root) == [(0, 0), (0, 1), (0, 2), (0, 3), (0, 4), (1, 0), (1, 1), (1, 2), (1, 3)]


def test_end_time_and_topics(tmp_path):
    root = str(tmp_path)
    write_partition(root, "t", 0, [("plain", 5), ("plain", 5)])
    write_partition(root, "u", 0, [("plain", 2)])
    os.makedirs(os.path.join(root, "__consumer_offsets-0"))
    # records are stamped T0, T0 + 1...: the first at or after T0 + 4 is offset 4
    from support.logs.lakehouse_logs import T0
    assert hand_off_points(root, topics="t", end_time=T0 + 4) == {("t", 0): (0, 4)}
    assert set(hand_off_points(root)) == {("t", 0), ("u", 0)}       # Kafka's internal topics are not data
    with pytest.raises(SelectionError, match="nope"):
        hand_off_points(root, topics=["nope"])
