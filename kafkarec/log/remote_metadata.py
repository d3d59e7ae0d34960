"""Which remote segments are live: Kafka's ``__remote_log_metadata`` replayed.

A broker with tiered storage records every remote copy in ``__remote_log_metadata``
(``TopicBasedRemoteLogMetadataManager``): a ``RemoteLogSegmentMetadataRecord`` when a copy
starts (state ``COPY_SEGMENT_STARTED``), ``RemoteLogSegmentMetadataUpdateRecord`` s as it
finishes (``COPY_SEGMENT_FINISHED``) and later as its deletion starts and finishes
(``DELETE_SEGMENT_STARTED``/``_FINISHED``), and ``RemotePartitionDeleteMetadataRecord`` when a
topic's partition is deleted.  A copy is *live* (readers fetch it, as the broker serves it)
only when its last state is ``COPY_SEGMENT_FINISHED`` and its partition is not being deleted:
a copy that was started but never finished, or whose deletion started, may be incomplete or
gone, and must not be read.

:func:`load` replays the topic's partitions (a log directory holding
``__remote_log_metadata-N`` folders, local or a URI) with kafkarec's internal-topic decoder;
:meth:`RemoteLogMetadata.state` answers for one segment id, and
:func:`kafkarec.log.layout.scan` leaves out the segments that are not live (reported in
:attr:`kafkarec.log.layout.Layout.not_live`) when the storage carries the metadata
(option ``remoteLogMetadata``).

Without the metadata, a plugin's copy whose ``.rsm-manifest`` is missing is taken as
unfinished (the plugin writes the manifest last and deletes all three objects on a failed
copy), and every other remote segment as live.
"""
from __future__ import annotations

from typing import Dict, List, NamedTuple, Optional, Tuple

__all__ = ["TOPIC", "SEGMENT_STATES", "PARTITION_DELETE_STATES", "RemoteSegment", "RemoteLogMetadata",
           "load", "replay"]

TOPIC = "__remote_log_metadata"
# Kafka's RemoteLogSegmentState and RemotePartitionDeleteState, by their wire ids (also what
# kafka-dump-log prints: kafkarec.internal.dumplog)
SEGMENT_STATES = ("COPY_SEGMENT_STARTED", "COPY_SEGMENT_FINISHED", "DELETE_SEGMENT_STARTED",
                  "DELETE_SEGMENT_FINISHED")
PARTITION_DELETE_STATES = ("DELETE_PARTITION_MARKED", "DELETE_PARTITION_STARTED", "DELETE_PARTITION_FINISHED")
LIVE = "COPY_SEGMENT_FINISHED"


class RemoteSegment(NamedTuple):
    """One remote copy as the metadata tells it."""
    topic_id: str
    topic: str
    partition: int
    segment_id: str
    start_offset: int
    end_offset: int
    state: str                   # the last of SEGMENT_STATES recorded
    partition_deleted: bool      # a RemotePartitionDeleteMetadataRecord came for its partition

    @property
    def live(self) -> bool:
        return self.state == LIVE and not self.partition_deleted


class RemoteLogMetadata:
    """The replayed topic: :class:`RemoteSegment` by segment id."""

    def __init__(self, segments: Dict[str, RemoteSegment], problems: List[str]) -> None:
        self.segments = segments
        self.problems = problems

    def state(self, segment_id: str) -> Optional[RemoteSegment]:
        return self.segments.get(segment_id)

    def why_not_live(self, segment_id: str) -> Optional[str]:
        """None for a live copy, else why it is not read."""
        seg = self.segments.get(segment_id)
        if seg is None:
            return f"{TOPIC} does not record remote segment {segment_id}"
        if seg.partition_deleted:
            return f"its partition {seg.topic}-{seg.partition} is being deleted ({TOPIC})"
        if seg.state != LIVE:
            return f"its copy is in state {seg.state} ({TOPIC}), not {LIVE}"
        return None

    def __repr__(self) -> str:
        live = sum(s.live for s in self.segments.values())
        return f"RemoteLogMetadata({len(self.segments)} segments, {live} live)"


def replay(records) -> RemoteLogMetadata:
    """Replay decoded records (``kafkarec.internal.topics.InternalRecord`` s of the topic, each
    partition in offset order)."""
    segments: Dict[str, RemoteSegment] = {}
    deleted: set = set()
    problems: List[str] = []
    for rec in records:
        v = rec.value
        if rec.unknown or v is None:
            continue
        if rec.value_schema == "RemoteLogSegmentMetadataRecord":
            sid = v["remoteLogSegmentId"]
            tip = sid["topicIdPartition"]
            segments[sid["id"]] = RemoteSegment(
                str(tip["id"]), tip["name"], tip["partition"], sid["id"], v["startOffset"], v["endOffset"],
                _state(v["remoteLogSegmentState"]), (str(tip["id"]), tip["partition"]) in deleted)
        elif rec.value_schema == "RemoteLogSegmentMetadataUpdateRecord":
            sid = v["remoteLogSegmentId"]["id"]
            seg = segments.get(sid)
            if seg is None:
                problems.append(f"an update of remote segment {sid} before its metadata record")
                continue
            segments[sid] = seg._replace(state=_state(v["remoteLogSegmentState"]))
        elif rec.value_schema == "RemotePartitionDeleteMetadataRecord":
            tip = v["topicIdPartition"]
            key = (str(tip["id"]), tip["partition"])
            deleted.add(key)
            for sid, seg in segments.items():
                if (seg.topic_id, seg.partition) == key:
                    segments[sid] = seg._replace(partition_deleted=True)
    return RemoteLogMetadata(segments, problems)


def _state(code: int) -> str:
    return SEGMENT_STATES[code] if 0 <= code < len(SEGMENT_STATES) else f"UNKNOWN({code})"


def load(source: str, storage_options: Optional[dict] = None) -> RemoteLogMetadata:
    """Replay the ``__remote_log_metadata`` partitions found under ``source`` (a broker's log
    directory, local or a URI), each partition's segments in offset order."""
    import re
    import posixpath
    import kafkarec
    from kafkarec.errors import DecodeError, SelectionError
    from kafkarec.internal import topics
    from kafkarec.log import storage
    st, root = storage._resolve(source, storage_options)
    folder = re.compile(re.escape(TOPIC) + r"-\d+$")
    logs = sorted((e for e in storage.list_files(st, root)
                   if e.path.endswith(".log") and folder.search(posixpath.dirname(e.path))),
                  key=lambda e: (posixpath.dirname(e.path), posixpath.basename(e.path)))
    if not logs:
        raise SelectionError(f"{source}: no {TOPIC} partition (a broker log directory with tiered "
                             f"storage holds {TOPIC}-0 ...)")
    records = []
    for e in logs:
        with st.open(e.path, e.size) as f:
            for piece in storage.iter_pieces(f, 0, None):
                try:
                    for batch in kafkarec.iter_batches(piece.data):
                        if batch.is_control:
                            continue
                        for r in batch:
                            records.append(topics.decode(TOPIC, r.key, r.value))
                except DecodeError:
                    break                 # the active segment's unfinished tail
    return replay(records)
