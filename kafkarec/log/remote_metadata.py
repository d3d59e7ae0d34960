"""Which remote segments are live: Kafka's ``__remote_log_metadata`` replayed as a broker's
cache replays it.

A broker with tiered storage records every remote copy in ``__remote_log_metadata``
(``TopicBasedRemoteLogMetadataManager``): a ``RemoteLogSegmentMetadataRecord`` when a copy
starts (state ``COPY_SEGMENT_STARTED``), ``RemoteLogSegmentMetadataUpdateRecord`` s as it
finishes (``COPY_SEGMENT_FINISHED``) and later as its deletion starts and finishes
(``DELETE_SEGMENT_STARTED``/``_FINISHED``), and ``RemotePartitionDeleteMetadataRecord`` s as a
partition's deletion is marked, started and finished.  Every broker replays the topic, each
partition in offset order, into an in-memory cache (``RemotePartitionMetadataStore`` holding a
``RemoteLogMetadataCache`` per partition) and serves reads from it; :func:`replay` applies the
records exactly as that cache does (Kafka 4.3):

* a segment is known by its partition (topic id, name, number) and id together;
* an update is applied only along ``RemoteLogSegmentState.isValidTransition``
  (``COPY_SEGMENT_STARTED`` → ``COPY_SEGMENT_FINISHED`` or ``DELETE_SEGMENT_STARTED``,
  ``COPY_SEGMENT_FINISHED`` → ``DELETE_SEGMENT_STARTED`` → ``DELETE_SEGMENT_FINISHED``, or the
  same state again); any other is dropped, so an old leader's late ``COPY_SEGMENT_FINISHED``
  does not bring back a copy whose deletion started;
* ``DELETE_SEGMENT_FINISHED`` forgets the segment: a later update of it is dropped, as one for
  a segment never recorded, and only a new metadata record starts it again;
* a partition's ``DELETE_PARTITION_MARKED``/``_STARTED`` change nothing the cache serves (the
  broker deletes the segments one by one, each through its own updates);
  ``DELETE_PARTITION_FINISHED`` drops the partition's cache, and Kafka refuses every later
  segment record of that partition.

A record Kafka drops or refuses (its serde or cache throws; the broker's consumer task then
stops, kafkarec goes on with the next record) changes nothing and is listed in
:attr:`RemoteLogMetadata.problems` with its position.  A copy is *live* (readers fetch it, as
the broker serves it) only when the cache holds it in state ``COPY_SEGMENT_FINISHED``.

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

import itertools
from typing import Dict, Iterable, List, NamedTuple, Optional, Set, Tuple

# Kafka's RemoteLogSegmentState and RemotePartitionDeleteState by wire id: the codec's tables (the log
# layer asks the codec of the internal topics, never the reverse)
from kafkarec.internal.topics import PARTITION_DELETE_STATES, SEGMENT_STATES

__all__ = ["TOPIC", "SEGMENT_STATES", "PARTITION_DELETE_STATES", "RemoteSegment", "RemoteLogMetadata",
           "load", "replay"]

TOPIC = "__remote_log_metadata"
STARTED, LIVE, DELETING, DELETED = SEGMENT_STATES
# RemoteLogSegmentState.isValidTransition: the states each state may move to
_NEXT = {None: {STARTED}, STARTED: {STARTED, LIVE, DELETING}, LIVE: {LIVE, DELETING},
         DELETING: {DELETING, DELETED}}


class RemoteSegment(NamedTuple):
    """One remote copy as the metadata tells it."""
    topic_id: str
    topic: str
    partition: int
    segment_id: str
    start_offset: int
    end_offset: int
    state: str                   # the last of SEGMENT_STATES Kafka applied
    partition_deleted: bool      # its partition's DELETE_PARTITION_FINISHED dropped it

    @property
    def live(self) -> bool:
        return self.state == LIVE and not self.partition_deleted


class RemoteLogMetadata:
    """The replayed topic: :class:`RemoteSegment` by segment id (the segments Kafka's cache
    holds, and those it forgot, in the state they had then); ``problems``: the records Kafka
    drops or refuses, each with its position."""

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


Partition = Tuple[str, str, int]          # Kafka's TopicIdPartition: topic id, name, number


class _Cache:
    """Kafka's RemotePartitionMetadataStore, as far as it decides a copy's state: the one place
    the replay's rules live."""

    def __init__(self) -> None:
        self.held: Dict[Tuple[Partition, str], RemoteSegment] = {}     # idToSegmentMetadata
        self.forgotten: Dict[Tuple[Partition, str], RemoteSegment] = {}
        self.deleted: Set[Partition] = set()                            # DELETE_PARTITION_FINISHED
        self.partitions_of: Dict[str, Set[Partition]] = {}              # segment id -> partitions
        self.problems: List[str] = []

    def refuse(self, where: str, reason: str) -> None:
        self.problems.append(f"{where}: {reason}")

    def apply(self, where: str, rec) -> None:
        v = rec.value
        if rec.unknown or v is None:
            return self.refuse(where, f"a {rec.record_type} record, which Kafka's RemoteLogMetadataSerde "
                                      f"does not read: skipped")
        kind = rec.value_schema
        if kind == "RemoteLogSegmentMetadataRecord":
            self._segment(where, v)
        elif kind == "RemoteLogSegmentMetadataUpdateRecord":
            self._update(where, v)
        elif kind == "RemotePartitionDeleteMetadataRecord":
            self._partition_delete(where, v)
        else:                           # a snapshot record: the store handles none
            self.refuse(where, f"a {kind}, which Kafka's remote log metadata store does not apply: skipped")

    def _segment(self, where: str, v: dict) -> None:
        sid, part = _segment_id(v["remoteLogSegmentId"])
        state = _state(v["remoteLogSegmentState"])
        start, end = v["startOffset"], v["endOffset"]
        # RemoteLogSegmentMetadata's constructor, which Kafka's serde calls
        if state not in SEGMENT_STATES or start < 0 or end < start or not v["segmentLeaderEpochs"]:
            return self.refuse(where, f"remote segment {sid} in state {state}, offsets {start}..{end}, "
                                      f"{len(v['segmentLeaderEpochs'])} leader epochs: Kafka refuses it")
        if part in self.deleted:
            return self._after_partition_deleted(where, sid, part)
        if state != STARTED:
            return self.refuse(where, f"remote segment {sid} recorded in state {state}, not {STARTED}: "
                                      f"Kafka refuses it")
        key = (part, sid)
        held = self.held.get(key)
        if not self._valid(where, sid, held.state if held else None, state):
            return
        others = self.partitions_of.setdefault(sid, set())
        if others - {part}:
            self.refuse(where, f"remote segment {sid} is recorded for "
                               f"{', '.join(_named(p) for p in sorted(others - {part}))} too; "
                               f"kafkarec looks copies up by id and takes this one")
        others.add(part)
        self.forgotten.pop(key, None)
        self.held[key] = RemoteSegment(part[0], part[1], part[2], sid, start, end, state, False)

    def _update(self, where: str, v: dict) -> None:
        sid, part = _segment_id(v["remoteLogSegmentId"])
        state = _state(v["remoteLogSegmentState"])
        if state not in SEGMENT_STATES:
            return self.refuse(where, f"an update of remote segment {sid} to state {state}: Kafka refuses it")
        if part in self.deleted:
            return self._after_partition_deleted(where, sid, part)
        key = (part, sid)
        held = self.held.get(key)
        if held is None:
            gone = self.forgotten.get(key)
            if gone is None:
                return self.refuse(where, f"an update of remote segment {sid} before its metadata record")
            return self.refuse(where, f"an update of remote segment {sid} to {state} after Kafka forgot it "
                                      f"({gone.state}): dropped")
        if not self._valid(where, sid, held.state, state):
            return
        if state == STARTED:            # RemoteLogMetadataCache: only a metadata record starts a copy
            return self.refuse(where, f"an update of remote segment {sid} to {STARTED}: Kafka refuses it")
        if state == DELETED:
            del self.held[key]
            self.forgotten[key] = held._replace(state=state)
        else:
            self.held[key] = held._replace(state=state)

    def _partition_delete(self, where: str, v: dict) -> None:
        tip = v["topicIdPartition"]
        part = (str(tip["id"]), tip["name"], tip["partition"])
        code = v["remotePartitionDeleteState"]
        if not 0 <= code < len(PARTITION_DELETE_STATES):
            return self.refuse(where, f"partition {_named(part)} in deletion state UNKNOWN({code}): Kafka refuses it")
        # The store keeps MARKED/STARTED without a transition check and serves the partition's
        # copies as before; FINISHED drops its whole cache.
        if PARTITION_DELETE_STATES[code] != "DELETE_PARTITION_FINISHED":
            return
        self.deleted.add(part)
        for key in [key for key in self.held if key[0] == part]:
            self.forgotten[key] = self.held.pop(key)._replace(partition_deleted=True)

    def _valid(self, where: str, sid: str, state: Optional[str], target: str) -> bool:
        if target in _NEXT.get(state, ()):
            return True
        self.refuse(where, f"remote segment {sid} cannot move from {state or 'no state'} to {target} "
                           f"(RemoteLogSegmentState.isValidTransition): dropped")
        return False

    def _after_partition_deleted(self, where: str, sid: str, part: Partition) -> None:
        self.refuse(where, f"remote segment {sid} of partition {_named(part)} after its "
                           f"DELETE_PARTITION_FINISHED: Kafka refuses it")

    def result(self) -> RemoteLogMetadata:
        segments = {seg.segment_id: seg for seg in self.forgotten.values()}
        segments.update((seg.segment_id, seg) for seg in self.held.values())
        return RemoteLogMetadata(segments, self.problems)


def _segment_id(entry: dict) -> Tuple[str, Partition]:
    tip = entry["topicIdPartition"]
    return entry["id"], (str(tip["id"]), tip["name"], tip["partition"])


def _named(part: Partition) -> str:
    return f"{part[1]}-{part[2]} (topic id {part[0]})"


def _state(code: int) -> str:
    return SEGMENT_STATES[code] if 0 <= code < len(SEGMENT_STATES) else f"UNKNOWN({code})"


def replay(records: Iterable, positions: Optional[Iterable[str]] = None) -> RemoteLogMetadata:
    """Replay decoded records (``kafkarec.internal.topics.InternalRecord`` s of the topic, each
    partition in offset order) as Kafka's cache does; ``positions`` names each record in
    :attr:`RemoteLogMetadata.problems` (default ``record N``, counted from 0)."""
    cache = _Cache()
    names = positions if positions is not None else (f"record {i}" for i in itertools.count())
    for where, rec in zip(names, records):
        cache.apply(where, rec)
    return cache.result()


def load(source: str, storage_options: Optional[dict] = None) -> RemoteLogMetadata:
    """Replay the ``__remote_log_metadata`` partitions found under ``source`` (a broker's log
    directory, local or a URI), each partition's segments in offset order."""
    import re
    import posixpath
    from kafkarec.errors import DecodeError, InternalRecordError, SelectionError
    from kafkarec.internal import topics
    from kafkarec.log import storage
    # Read below the layout (kafkarec.log.layout asks this replay which remote copies are live, so
    # neither the layout nor the scan over it can list this topic): the storage alone, without the
    # plugin's options, and each segment through the storage layer's walk of a file
    st, root = storage.resolve(source, storage_options, tiered=False)
    folder = re.compile(re.escape(TOPIC) + r"-\d+$")
    logs = sorted((e for e in storage.list_files(st, root)
                   if e.path.endswith(".log") and folder.search(posixpath.dirname(e.path))),
                  key=lambda e: (posixpath.dirname(e.path), posixpath.basename(e.path)))
    if not logs:
        raise SelectionError(f"{source}: no {TOPIC} partition (a broker log directory with tiered "
                             f"storage holds {TOPIC}-0 ...)")
    cache = _Cache()
    for e in logs:
        partition = posixpath.basename(posixpath.dirname(e.path))
        with st.open(e.path, e.size) as f:
            try:
                for _, batch in storage.iter_remote_batches(f, 0, None):
                    if batch.is_control:
                        continue
                    for r in batch:
                        where = f"{partition} offset {r.offset}"
                        try:
                            rec = topics.decode(TOPIC, r.key, r.value)
                        except InternalRecordError as exc:
                            cache.refuse(where, f"{exc}: Kafka's RemoteLogMetadataSerde refuses it")
                            continue
                        cache.apply(where, rec)
            except DecodeError:
                pass                  # the active segment's unfinished tail
    return cache.result()
