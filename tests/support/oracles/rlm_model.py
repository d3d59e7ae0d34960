"""A model of Kafka's remote log metadata cache, written from Kafka's source (4.3,
storage/src/main/java/org/apache/kafka/server/log/remote/metadata/storage/ and
storage/api/.../remote/storage/), to check :mod:`kafkarec.log.remote_metadata` against.

It follows Kafka's classes one by one, not kafkarec's code:

* the serde (``RemoteLogMetadataSerde`` and its transforms) builds the metadata objects, whose
  constructors refuse an unknown state id (``forId`` gives null), a negative start offset, an
  end offset below the start and an empty leader-epoch map;
* ``RemotePartitionMetadataStore`` keeps one ``RemoteLogMetadataCache`` per partition loaded
  when the partition is assigned (here: every partition), records every partition-delete
  state and drops the partition's cache at ``DELETE_PARTITION_FINISHED``; a segment record
  for a partition without a cache throws ``IllegalStateException``;
* ``RemoteLogMetadataCache.addCopyInProgressSegment`` throws for a state other than
  ``COPY_SEGMENT_STARTED`` and drops an invalid transition; ``updateRemoteLogSegmentMetadata``
  drops an update of a segment it does not hold (before the cache is initialized, as during
  the replay at start-up) and an invalid transition, throws for ``COPY_SEGMENT_STARTED``, and
  removes the segment at ``DELETE_SEGMENT_FINISHED``.

A throw stops Kafka's consumer task; the model counts it with the drops (``ignored``) and goes
on, as kafkarec does.  Input: decoded ``__remote_log_metadata`` values, ``(schema name, dict)``.
"""
from __future__ import annotations

from typing import Dict, Optional, Set, Tuple

COPY_SEGMENT_STARTED, COPY_SEGMENT_FINISHED, DELETE_SEGMENT_STARTED, DELETE_SEGMENT_FINISHED = range(4)
DELETE_PARTITION_MARKED, DELETE_PARTITION_STARTED, DELETE_PARTITION_FINISHED = range(3)
NAMES = ("COPY_SEGMENT_STARTED", "COPY_SEGMENT_FINISHED", "DELETE_SEGMENT_STARTED", "DELETE_SEGMENT_FINISHED")


class Thrown(Exception):
    """What Kafka throws while applying a record: nothing of it is applied."""


def is_valid_transition(src: Optional[int], target: int) -> bool:
    """RemoteLogSegmentState.isValidTransition."""
    if src is None:
        return target == COPY_SEGMENT_STARTED
    if src == target:
        return True
    if src == COPY_SEGMENT_STARTED:
        return target in (COPY_SEGMENT_FINISHED, DELETE_SEGMENT_STARTED)
    if src == COPY_SEGMENT_FINISHED:
        return target == DELETE_SEGMENT_STARTED
    if src == DELETE_SEGMENT_STARTED:
        return target == DELETE_SEGMENT_FINISHED
    return False


TopicIdPartition = Tuple[str, str, int]            # Uuid, TopicPartition(name, partition)
SegmentId = Tuple[TopicIdPartition, str]           # RemoteLogSegmentId: equal on both


def _tip(entry: dict) -> TopicIdPartition:
    return (entry["id"], entry["name"], entry["partition"])


def deserialize(schema: Optional[str], value: Optional[dict]):
    """RemoteLogMetadataSerde and the constructors it calls: (schema, partition, segment id or
    None, state id) of a record the store handles, else Thrown."""
    if schema == "RemotePartitionDeleteMetadataRecord":
        if value["remotePartitionDeleteState"] not in range(3):
            raise Thrown("NullPointerException: RemotePartitionDeleteState.forId gave null")
        return schema, _tip(value["topicIdPartition"]), None, value["remotePartitionDeleteState"]
    if schema not in ("RemoteLogSegmentMetadataRecord", "RemoteLogSegmentMetadataUpdateRecord") or value is None:
        raise Thrown("IllegalArgumentException: not a record the store handles")   # snapshot, unknown
    state = value["remoteLogSegmentState"]
    if state not in range(4):
        raise Thrown("NullPointerException: state can not be null")
    if schema == "RemoteLogSegmentMetadataRecord" and (
            value["startOffset"] < 0 or value["endOffset"] < value["startOffset"] or not value["segmentLeaderEpochs"]):
        raise Thrown("IllegalArgumentException: RemoteLogSegmentMetadata's constructor")
    entry = value["remoteLogSegmentId"]
    return schema, _tip(entry["topicIdPartition"]), entry["id"], state


class Cache:
    """RemoteLogMetadataCache: idToSegmentMetadata, segment id -> state."""

    def __init__(self) -> None:
        self.states: Dict[SegmentId, int] = {}

    def add_copy_in_progress_segment(self, sid: SegmentId, state: int) -> bool:
        if state != COPY_SEGMENT_STARTED:
            raise Thrown("IllegalArgumentException: should have state as COPY_SEGMENT_STARTED")
        if not is_valid_transition(self.states.get(sid), state):
            return False
        self.states[sid] = state
        return True

    def update_remote_log_segment_metadata(self, sid: SegmentId, state: int) -> bool:
        existing = self.states.get(sid)
        if existing is None:
            return False                  # not initialized yet: "base-metadata ... already removed"
        if not is_valid_transition(existing, state):
            return False
        if state == COPY_SEGMENT_STARTED:
            raise Thrown("IllegalArgumentException: can not be updated")
        if state == DELETE_SEGMENT_FINISHED:
            del self.states[sid]
        else:
            self.states[sid] = state
        return True


class Store:
    """RemotePartitionMetadataStore fed by the consumer task, every partition assigned."""

    def __init__(self) -> None:
        self.caches: Dict[TopicIdPartition, Cache] = {}
        self.unloaded: Set[TopicIdPartition] = set()      # removed by DELETE_PARTITION_FINISHED
        self.delete_states: Dict[TopicIdPartition, int] = {}
        self.ignored = 0                                  # records dropped or thrown on

    def _cache(self, tip: TopicIdPartition) -> Cache:
        if tip in self.unloaded:
            raise Thrown("IllegalStateException: No partition metadata found")
        return self.caches.setdefault(tip, Cache())       # maybeLoadPartition at assignment

    def handle(self, schema: Optional[str], value: Optional[dict]) -> None:
        try:
            applied = self._handle(schema, value)
        except Thrown:
            applied = False
        self.ignored += not applied

    def _handle(self, schema, value) -> bool:
        schema, tip, segment, state = deserialize(schema, value)
        if schema == "RemotePartitionDeleteMetadataRecord":
            self.delete_states[tip] = state
            if state == DELETE_PARTITION_FINISHED:
                self.caches.pop(tip, None)
                self.delete_states.pop(tip)
                self.unloaded.add(tip)
            return True
        cache = self._cache(tip)
        if schema == "RemoteLogSegmentMetadataRecord":
            return cache.add_copy_in_progress_segment((tip, segment), state)
        return cache.update_remote_log_segment_metadata((tip, segment), state)

    def held(self) -> Dict[Tuple[str, str, int, str], str]:
        """Every segment the caches hold, (topic id, topic, partition, segment id) -> state name."""
        return {tip + (seg,): NAMES[state] for cache in self.caches.values()
                for (tip, seg), state in cache.states.items()}

    def live(self) -> Set[Tuple[str, str, int, str]]:
        """What the broker serves reads from: the segments in COPY_SEGMENT_FINISHED."""
        return {key for key, state in self.held().items() if state == "COPY_SEGMENT_FINISHED"}


def held_by(metadata) -> Dict[Tuple[str, str, int, str], str]:
    """The same view of kafkarec's replay (:class:`kafkarec.log.remote_metadata.RemoteLogMetadata`):
    the segments it has not forgotten, with their states."""
    return {(s.topic_id, s.topic, s.partition, s.segment_id): s.state for s in metadata.segments.values()
            if s.state != "DELETE_SEGMENT_FINISHED" and not s.partition_deleted}


# Values of the three record kinds, for the project's encoder (kafkarec.internal.encode_record)
def segment_value(tip: TopicIdPartition, segment_id: str, start: int, end: int, *,
                  state: int = COPY_SEGMENT_STARTED, epochs=((0, None),)) -> dict:
    return {"remoteLogSegmentId": {"topicIdPartition": _entry(tip), "id": segment_id},
            "startOffset": start, "endOffset": end, "brokerId": 1, "maxTimestampMs": 0, "eventTimestampMs": 0,
            "segmentLeaderEpochs": [{"leaderEpoch": e, "offset": start if o is None else o} for e, o in epochs],
            "segmentSizeInBytes": 0, "customMetadata": None, "remoteLogSegmentState": state}


def update_value(tip: TopicIdPartition, segment_id: str, state: int) -> dict:
    return {"remoteLogSegmentId": {"topicIdPartition": _entry(tip), "id": segment_id}, "brokerId": 1,
            "eventTimestampMs": 0, "customMetadata": None, "remoteLogSegmentState": state}


def partition_delete_value(tip: TopicIdPartition, state: int) -> dict:
    return {"topicIdPartition": _entry(tip), "brokerId": 1, "eventTimestampMs": 0,
            "remotePartitionDeleteState": state}


API_KEYS = {"RemoteLogSegmentMetadataRecord": 0, "RemoteLogSegmentMetadataUpdateRecord": 1,
            "RemotePartitionDeleteMetadataRecord": 2}


def _entry(tip: TopicIdPartition) -> dict:
    return {"id": tip[0], "name": tip[1], "partition": tip[2]}
