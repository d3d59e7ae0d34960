"""Regression fixtures a real broker wrote (tests/data/broker, written by
tests/broker/capture_fixtures.py with Kafka 4.3.1): read without a JVM.

* ``stopped/txn-0``: an aborted transaction spanning segments; the broker put its
  ``.txnindex`` entry (first offset 0) in the segment of the ABORT marker (base 12).
* ``live/txn-0``: the same partition copied while the broker ran: the active segment's
  ``.index`` and ``.timeindex`` are preallocated and all zeros (no entry yet).
* ``__transaction_state-0``: the coordinator's records, with what Kafka's kafka-dump-log
  printed for them (``transactionStatus`` as the record's number, as Kafka 4.3 prints it).
"""
import os
import re
import subprocess
import sys

import pytest

from support.paths import TESTS

DATA = os.path.join(TESTS, "data", "broker")


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "kafkarec", *args], capture_output=True, text=True,
                          timeout=120, cwd=cwd)


@pytest.mark.parametrize("state", ["stopped", "live"])
def test_verify_broker_written_partition(state):
    proc = _cli("verify", "--deep", os.path.join(DATA, state))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().endswith("0 error(s), 0 warning(s)"), proc.stdout


def test_transaction_spans_segments_and_reads_committed():
    from support.brokers.readers import kafkarec_rows
    rows = {s: {rc: kafkarec_rows(os.path.join(DATA, s), {"txn"}, rc) for rc in (False, True)}
            for s in ("stopped", "live")}
    assert rows["stopped"] == rows["live"]
    every, committed = rows["stopped"][False], rows["stopped"][True]
    assert [r[2] for r in every] == list(range(0, 12)) + list(range(13, 25))   # markers at 12 and 25
    assert [r[2] for r in committed] == list(range(13, 25))                  # the aborted one left out
    assert all(r[6] == 0 and r[5] == (("n", str(r[2] - (r[2] > 12)).encode()),) for r in every)


def test_transaction_log_dump_is_kafka_dump_log():
    rel = os.path.join("__transaction_state-0", "00000000000000000000.log")
    proc = _cli("dump", "--transaction-log-decoder", "--deep-iteration", "--kafka-version", "4.3", rel, cwd=DATA)
    assert proc.returncode == 0, proc.stderr
    with open(os.path.join(DATA, rel + ".dump.txt"), encoding="utf-8") as fh:
        want = fh.read()
    assert '"transactionStatus":4' in want          # CompleteCommit, as a number (Kafka 4.3; 4.4 names it)
    assert proc.stdout == want
    proc = _cli("dump", "--transaction-log-decoder", "--deep-iteration", rel, cwd=DATA)   # 4.4 by default
    assert proc.returncode == 0, proc.stderr
    names = ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort")
    assert proc.stdout == re.sub(r'"transactionStatus":(\d)', lambda m: f'"transactionStatus":"{names[int(m[1])]}"',
                                 want)


def test_cluster_ids_never_read_as_an_option(monkeypatch):
    """16 bytes whose base64 starts with ``-`` (0xf8...) are drawn again, as Kafka's Uuid.randomUuid does."""
    from support.brokers import kafka_broker
    draws = iter([b"\xf8" + bytes(15), b"\x01" * 16])
    monkeypatch.setattr(kafka_broker.os, "urandom", lambda n: next(draws))
    cluster_id = kafka_broker.random_cluster_id()
    assert cluster_id == "AQEBAQEBAQEBAQEBAQEBAQ"
