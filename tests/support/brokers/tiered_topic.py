"""The session broker's ``tiered`` topic (tests/broker/test_broker_tiered.py reads it).

The broker runs Kafka's LocalTieredStorage (``KafkaBroker(tiered_storage=True)``); this topic
has remote storage enabled, small segments and ``local.retention.bytes`` under its size, so
the broker copies its closed segments to the remote storage, records each copy in
``__remote_log_metadata`` and deletes the local segments past the local retention.  It is
written with the other topics (:func:`produce.produce_all`) but kept out of
``BrokerData.topics``: the log dir alone holds only its tail, so the tests that compare the
log dir with Kafka's consumer leave it out, and it has its own acked records
(``BrokerData.tiered_acked``).
"""
from __future__ import annotations

import glob
import os
import shutil
import time
from typing import List

from support.brokers import produce

TOPIC = "tiered"
RECORDS = 400
CONFIG = {"remote.storage.enable": "true", "internal.segment.bytes": "4096",
          "local.retention.bytes": "8192", "retention.bytes": "-1"}


def topic_info() -> produce.TopicInfo:
    return produce.TopicInfo(TOPIC, 1, dict(CONFIG), "confluent-kafka", "none",
                             note="tiered storage: early segments remote only")


def write(bootstrap: str) -> List[produce.Acked]:
    """:data:`RECORDS` records in four rounds (segments roll at 4 KiB)."""
    return produce.produce_confluent(bootstrap, TOPIC, RECORDS, rounds=4, pause=0.2)


def wait_tiered(broker, timeout: float = 90) -> None:
    """Until the broker has copied at least five segments to its remote storage and deleted the
    first local ones; bounded (then :func:`produce.wait_settled` for the last of its work)."""
    deadline = time.monotonic() + timeout
    while True:
        local = sorted(glob.glob(os.path.join(broker.partition_dir(TOPIC), "*.log")))
        copies = glob.glob(os.path.join(broker.remote_dir, "**", "*.log"), recursive=True)
        if len(copies) >= 5 and local and int(os.path.basename(local[0])[:20]) > 0:
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"the broker did not tier {TOPIC} within {timeout} s "
                               f"({len(copies)} remote copies, local {local}):\n{broker.log_tail()}")
        time.sleep(0.5)


def live_remote_segments(log_dir: str):
    """The remote segments ``__remote_log_metadata`` (in ``log_dir``) says are live, by start offset."""
    from kafkarec.log import remote_metadata
    meta = remote_metadata.load(log_dir)
    return sorted((s for s in meta.segments.values() if s.live), key=lambda s: s.start_offset)


def copy_with_gap(log_dir: str, remote: str, dest: str):
    """``remote`` copied to ``dest`` without the files of its second live segment (offsets no
    longer local either: data loss); returns that segment's metadata."""
    victim = live_remote_segments(log_dir)[1]
    shutil.copytree(remote, dest)
    for f in glob.glob(os.path.join(dest, "**", f"*-{victim.segment_id}.*"), recursive=True):
        os.unlink(f)
    return victim
