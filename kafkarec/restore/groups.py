"""Consumer groups, as of any time T: their committed positions in the source's
``__consumer_offsets`` (:func:`kafkarec.cluster.coordinators.committed_offsets`, classic and
consumer-protocol groups alike), translated through the offset map, then applied on the target
(confluent-kafka's ``AdminClient.alter_consumer_group_offsets``: Kafka's OffsetCommit for an empty
group) or written as the CSV ``kafka-consumer-groups --reset-offsets --from-file`` takes.

Nothing is half-applied: every position is translated (a position past the source's log as it
stood when the group committed it is refused, naming the group and partition) and every group is checked empty on the target before
any group is altered.
"""
from __future__ import annotations

import csv
import io
import os
from typing import Dict, List, NamedTuple, Tuple

from kafkarec._extras import require
from kafkarec.errors import RestoreError
from kafkarec.restore import steps, target
from kafkarec.restore.offsets import OffsetMap
from kafkarec.restore.source import SourcePartition, SourcePlan, internal_source
from kafkarec.restore.spec import PROGRESS_GROUP_PREFIX, RestoreSpec
from kafkarec.times import time_text

__all__ = ["GroupPosition", "source_positions", "checked_positions", "translate", "apply", "write_csv"]


class GroupPosition(NamedTuple):
    """A group's position on one partition: on the source (``source_offset``, the next record to
    read) and on the target (``target_offset``)."""
    group: str
    topic: str
    partition: int
    source_offset: int
    target_topic: str
    target_offset: int


def source_positions(spec: RestoreSpec) -> Dict[Tuple[str, str, int], Tuple[int, int]]:
    """``{(group, topic, partition): (committed offset, commit timestamp)}`` in the source's
    ``__consumer_offsets`` as of ``spec.groups_as_of`` (ms since the epoch; None: the end of the
    history), wherever the source is (a local log directory, a URI with the spec's storage options,
    with its tiered-storage root: :func:`kafkarec.restore.source.internal_source`); one without
    ``__consumer_offsets`` has no groups."""
    from kafkarec.cluster.coordinators import committed_offsets
    source, kw = internal_source(spec)
    found = committed_offsets(source, as_of=spec.groups_as_of, **kw)
    return {k: (v["offset"], v["commit_timestamp"]) for k, v in found.items()
            if not k[0].startswith(PROGRESS_GROUP_PREFIX)}




def checked_positions(spec: RestoreSpec, plan: SourcePlan) -> List[GroupPosition]:
    """Every group's source positions on the restored partitions (``target_offset`` -1: not yet
    translated) -- asked before anything is written.

    A position is the next offset the group reads, so Kafka's consumers commit at most the log's end
    *as it was when they committed*.  A position past the history as of its commit (the log's end
    at its commit timestamp, :func:`source.log_ends_at`, for a LogAppendTime topic, whose record
    times are the brokers'; the log's end now for a CreateTime one), or negative, is a history that disagrees
    with itself (Kafka's OffsetCommit takes any offset, an admin's too): a :class:`RestoreError`
    naming the group, the partition, the commit's time and the log's end then.  Positions as of
    ``spec.groups_as_of`` are commits made by then, so none is past T's history either.  A position
    in [H, the log end then] is inside the history: it maps to the target's end."""
    from kafkarec.restore import source
    parts = {p.key: p for p in plan.partitions}
    found = {k: v for k, v in sorted(source_positions(spec).items()) if (k[1], k[2]) in parts}
    asked: Dict[SourcePartition, List[int]] = {}
    for (group, topic, partition), (offset, committed_at) in found.items():
        # a position at or below the log start is inside any history; the log's end at a commit is
        # known only where record times are the brokers' (LogAppendTime): a CreateTime record may
        # carry any producer's clock, ahead of the commit, and would refuse a good history
        if offset > parts[(topic, partition)].start and topic in plan.append_time_topics:
            asked.setdefault(parts[(topic, partition)], []).append(committed_at)
    ends_then = source.log_ends_at(spec, asked, plan.listing)
    out = []
    for (group, topic, partition), (offset, committed_at) in found.items():
        part = parts[(topic, partition)]
        then = ends_then.get((topic, partition, committed_at), part.log_end)
        if offset < 0 or offset > then:
            raise RestoreError(spec.target, f"the source position {offset} of {topic}-{partition} is outside the "
                                            f"history (its log ended at {then} when the group committed it, at "
                                            f"{time_text(committed_at)}; it ends at {part.log_end}): the group's "
                                            "commits and the log disagree", group=group, topic=topic,
                               partition=partition)
        out.append(GroupPosition(group, topic, partition, offset, part.target_topic, -1))
    return out


def translate(spec: RestoreSpec, plan: SourcePlan, omap: OffsetMap) -> List[GroupPosition]:
    """:func:`checked_positions`, translated through ``omap``."""
    return [p._replace(target_offset=omap.target_offset(p.topic, p.partition, p.source_offset))
            for p in checked_positions(spec, plan)]


def _by_group(positions: List[GroupPosition]) -> Dict[str, List[GroupPosition]]:
    out: Dict[str, List[GroupPosition]] = {}
    for p in positions:
        out.setdefault(p.group, []).append(p)
    return out


def apply(spec: RestoreSpec, positions: List[GroupPosition]) -> List[str]:
    """Set the positions on the target: every group checked empty first (a group with members is
    refused, nothing altered), then each group's offsets altered.  Returns the groups altered."""
    ck = require("confluent_kafka")
    groups = _by_group(positions)
    if not groups:
        return []
    asker = target.admin(spec)

    def described(left: float) -> dict:
        out = {}
        for group, future in asker.describe_consumer_groups(sorted(groups), request_timeout=left).items():
            try:
                out[group] = future.result(timeout=left + 5)
            except ck.KafkaException as exc:
                if exc.args and getattr(exc.args[0], "code", lambda: None)() == ck.KafkaError.GROUP_ID_NOT_FOUND:
                    continue            # not on the target yet: altering creates it
                raise target.failure(spec, "describing the group", exc, group=group) from None
            except Exception as exc:
                raise target.failure(spec, "describing the group", exc, group=group) from None
        return out
    for group, desc in sorted(target.retried(spec, "describing the groups", described).items()):
        if desc.members:
            raise RestoreError(spec.target, f"the group has {len(desc.members)} member(s) (state "
                                            f"{desc.state.name}): its positions can only be set while it is "
                                            "empty; no group was altered", group=group)
    done: List[str] = []
    for group in sorted(groups):
        tps = [ck.TopicPartition(p.target_topic, p.partition, p.target_offset) for p in groups[group]]
        try:
            # altering to the same offsets again is harmless: asked again while it fails retriably
            target.retried(spec, "altering the group's offsets", lambda left, tps=tps, group=group:
                           _alter(spec, asker, group, tps, left), group=group)
        except RestoreError as exc:
            raise RestoreError(spec.target, f"{exc.reason} (groups altered before it: {', '.join(done) or 'none'})",
                               group=exc.group, topic=exc.topic, partition=exc.partition,
                               retriable=exc.retriable) from None
        done.append(group)
        steps.step("group-applied")                 # a named step (steps.py)
    return done


def _alter(spec: RestoreSpec, asker, group: str, tps, left: float) -> None:
    """One AlterConsumerGroupOffsets of ``group``; a partition's error a :class:`RestoreError`."""
    ck = require("confluent_kafka")
    request = [ck.ConsumerGroupTopicPartitions(group, tps)]
    for name, future in asker.alter_consumer_group_offsets(request, request_timeout=left).items():
        answer = target.result(spec, future, "altering the group's offsets", timeout=left, group=name)
        bad = [tp for tp in answer.topic_partitions if tp.error is not None]
        if bad:
            raise target.failure(spec, "altering the group's offsets", bad[0].error, group=name,
                                 topic=bad[0].topic, partition=bad[0].partition)


def write_csv(positions: List[GroupPosition], path: str) -> None:
    """The positions as ``kafka-consumer-groups --reset-offsets --from-file`` takes them for several
    groups: ``group,topic,partition,offset`` lines, no header (run it with ``--all-groups`` or a
    ``--group`` per group, ``--execute``)."""
    from kafkarec._boot.files import atomic_write
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    for p in positions:
        w.writerow([p.group, p.target_topic, p.partition, p.target_offset])
    atomic_write(os.fspath(path), buf.getvalue().encode(), mode=0o644)
