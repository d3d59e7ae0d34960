"""``--verify``: the target read back (a read_committed consumer) against the source's committed
records, record for record (key, value, headers, timestamp, and the target offset the map says),
and each applied group position against its translation."""
from __future__ import annotations

from typing import Dict, List, NamedTuple, Optional

from kafkarec._extras import require
from kafkarec.restore import source, target
from kafkarec.restore.groups import GroupPosition
from kafkarec.restore.offsets import OffsetMap
from kafkarec.restore.source import SourcePlan
from kafkarec.restore.spec import RestoreSpec

__all__ = ["VerifyReport", "verify"]


class VerifyReport(NamedTuple):
    """``records`` compared, ``groups`` positions compared, and every ``problems`` line (empty: the
    target holds the source's committed records exactly and every group stands where it should)."""
    records: int
    groups: int
    problems: List[str]

    @property
    def ok(self) -> bool:
        return not self.problems


def _fields(r: source.Record):
    return (r.key, r.value, r.timestamp, [(k, v) for k, v in r.headers])


def verify(spec: RestoreSpec, plan: SourcePlan, omap: OffsetMap,
           positions: Optional[List[GroupPosition]] = None, *, max_problems: int = 20) -> VerifyReport:
    """Compare (see the module docstring); ``positions``: the group positions applied, read back
    from the target's groups."""
    problems: List[str] = []
    records = 0

    def problem(text: str) -> None:
        if len(problems) < max_problems:
            problems.append(text)

    for part in plan.partitions:
        where = f"{part.topic}-{part.partition} -> {part.target_topic}-{part.partition}"
        expected = dict(omap.pairs(part.topic, part.partition))
        got = target.read_back(spec, part.target_topic, part.partition)
        # up to where the target's records reach (an earlier run's later end: the map's source end)
        upto = max(part.end, omap.ends.get(part.key, (part.end, 0))[0])
        for s in source.committed_records(spec, part.topic, part.partition, part.start, upto):
            t = next(got, None)
            records += 1
            if t is None:
                problem(f"{where}: source offset {s.offset} is missing on the target")
                break
            if expected.get(s.offset) != t.offset:
                problem(f"{where}: source offset {s.offset} is target offset {t.offset}, the map says "
                        f"{expected.get(s.offset)}")
            if _fields(s) != _fields(t):
                problem(f"{where}: source offset {s.offset} and target offset {t.offset} differ")
        extra = next(got, None)
        if extra is not None:
            problem(f"{where}: the target holds a record at offset {extra.offset} the source's range does not")
    checked = 0
    if positions:
        ck = require("confluent_kafka")
        asker = target.admin(spec)
        by_group: Dict[str, List[GroupPosition]] = {}
        for p in positions:
            by_group.setdefault(p.group, []).append(p)
        for group, ps in sorted(by_group.items()):
            request = [ck.ConsumerGroupTopicPartitions(group, [ck.TopicPartition(p.target_topic, p.partition)
                                                               for p in ps])]
            future = list(asker.list_consumer_group_offsets(request, request_timeout=spec.timeout).values())[0]
            committed = {(tp.topic, tp.partition): tp.offset
                         for tp in target.result(spec, future, "reading the group's offsets", group=group).topic_partitions}
            for p in ps:
                checked += 1
                have = committed.get((p.target_topic, p.partition))
                if have != p.target_offset:
                    problem(f"group {group}: {p.target_topic}-{p.partition} stands at {have}, the translation of "
                            f"source position {p.source_offset} is {p.target_offset}")
                elif omap.target_offset(p.topic, p.partition, p.source_offset) != have:
                    problem(f"group {group}: {p.target_topic}-{p.partition} at {have} is not where source "
                            f"position {p.source_offset} points")
    return VerifyReport(records, checked, problems)
