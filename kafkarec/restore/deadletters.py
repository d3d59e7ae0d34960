"""Share groups' dead letters restored (KIP-1191, :mod:`kafkarec.dlq`): each one's source offset
translated through the offset map, so the restored DLQ names the same records on the target.

A dead letter names its source record by topic, partition and offset (``__dlq.errors.*``
headers).  Restored as it was, its offset would name whatever record holds that offset on the
target, which is another one wherever the target's offsets differ (a log start, compaction's
holes, aborted records and markers, the restore's own transaction markers).  So a dead letter whose
source partition this restore covers is written with:

- ``__dlq.errors.offset``: the target offset of that record, or ``-1`` where the record is not on
  the target (it was not restored: below the log start, aborted, compacted away, past the
  restored range);
- ``__dlq.errors.topic``: the target topic, where ``--rename`` renamed the source topic;
- :data:`kafkarec.dlq.ORIGINAL_OFFSET` (and :data:`~kafkarec.dlq.ORIGINAL_TOPIC` where renamed):
  the value the source cluster's broker wrote, appended (a dead letter restored twice keeps the
  first one: the value its own broker wrote).

A dead letter whose source partition the restore does not cover (another topic, not selected), or
whose headers are not what Kafka writes, is restored as it is.  The rule is one function, applied
where the restore produces the records, where a resumed run rebuilds its digest, and where
``--verify`` and ``--check`` compare the target with the source.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from kafkarec.dlq import HEADER_OFFSET, HEADER_TOPIC, ORIGINAL_OFFSET, ORIGINAL_TOPIC, dead_letter
from kafkarec.errors import RestoreError
from kafkarec.restore.offsets import OffsetMap

__all__ = ["Translation", "SourceNotRestored"]


class SourceNotRestored(RestoreError):
    """A dead letter names a record of ``source`` (a partition of the plan), whose restore has not
    finished: its target offset is not known yet.  Retriable (a Spark task's partition restored
    meanwhile); :func:`kafkarec.restore.produce.restore_partitions` restores ``source`` first and
    resumes the DLQ partition."""

    #: the partition named (None once pickled: a Spark task's error on the driver)
    source = None

    @classmethod
    def of(cls, target: str, source, done) -> "SourceNotRestored":
        e = cls(target, f"the dead letters name source {source.topic}-{source.partition}, whose restore has not "
                        f"finished (its progress is {done}, its range [{source.start}, {source.end})): its records' "
                        "target offsets are not known yet (a re-run restores it first)",
                topic=source.target_topic, partition=source.partition, retriable=True)
        e.source = source
        return e


class Translation:
    """Dead letters translated through ``omap``, which holds the partitions of ``plan`` the dead
    letters name; or, with ``spec`` and ``rebuild`` (the restore's
    :func:`kafkarec.restore.produce.rebuild_pairs`), a partition's map is rebuilt from the target
    where its restore has finished there (:class:`SourceNotRestored` where it has not).  A dead
    letter naming a partition whose map is not known otherwise is left as it is."""

    def __init__(self, plan, omap: OffsetMap, spec=None, rebuild=None) -> None:
        # without a plan (one partition restored on its own: a Spark task), the source is planned
        # at the first dead letter met
        self._plan = plan
        self.omap = omap
        self.spec = spec
        self.rebuild = rebuild
        self._rebuilt = OffsetMap()
        self._parts = None

    @property
    def listing(self):
        """The source listing of the plan it was given (:attr:`kafkarec.restore.source.SourcePlan.listing`),
        which the partitions' records are read over; None: no plan given (planned elsewhere)."""
        return getattr(self._plan, "listing", None)

    @property
    def parts(self):
        if self._plan is None:
            from kafkarec.restore import source
            self._plan = source.plan(self.spec)
        return {p.key: p for p in self._plan.partitions}

    def record(self, r):
        """``r`` (a :class:`kafkarec.restore.source.Record`) as the restore writes it."""
        if not r.headers or not any(k == HEADER_OFFSET for k, _ in r.headers):
            return r
        letter = dead_letter(r.headers)
        if letter is None or letter.error is not None:
            return r
        if self._parts is None:
            self._parts = self.parts
        part = self._parts.get((letter.topic, letter.partition))
        if part is None:
            return r
        if letter.offset < 0:
            new = -1        # a dead letter an earlier restore found no record for
        else:
            m = self._map_of(part)
            if m is None:
                return r
            pair = next(m.pairs_between(part.topic, part.partition, letter.offset, letter.offset + 1), None)
            new = -1 if pair is None else pair[1]
        return r._replace(headers=_rewritten(r.headers, str(new).encode("ascii"),
                                             None if part.target_topic == part.topic else part.target_topic))

    def _map_of(self, part) -> Optional[OffsetMap]:
        if part.key in self.omap.ends:
            return self.omap
        if part.key in self._rebuilt.ends:
            return self._rebuilt
        if self.spec is None or self.rebuild is None:
            return None         # not known here (a check's map, not there yet): left as it is
        from kafkarec.restore import target
        key = (part.target_topic, part.partition)
        done = target.progress(self.spec, [key]).get(key)
        if done is None or done < part.end:
            raise SourceNotRestored.of(self.spec.target, part, done)
        self.rebuild(self.spec, part, done, self._rebuilt)
        self._rebuilt.set_end(part.topic, part.partition, part.target_topic, done, -1)
        return self._rebuilt


def _rewritten(headers: List[Tuple[str, Optional[bytes]]], offset: bytes,
               topic: Optional[str]) -> List[Tuple[str, Optional[bytes]]]:
    """The headers with the first ``__dlq.errors.offset`` (and ``__dlq.errors.topic`` where
    ``topic``) replaced, the replaced values appended under kafkarec's original-value headers
    unless a record restored before carries them already."""
    out: List[Tuple[str, Optional[bytes]]] = []
    originals: Dict[str, Optional[bytes]] = {}
    have = {k for k, _ in headers}
    for k, v in headers:
        if k == HEADER_OFFSET and ORIGINAL_OFFSET not in originals:
            originals[ORIGINAL_OFFSET] = v
            v = offset
        elif k == HEADER_TOPIC and topic is not None and ORIGINAL_TOPIC not in originals:
            originals[ORIGINAL_TOPIC] = v
            v = topic.encode("utf-8")
        out.append((k, v))
    out.extend((k, v) for k, v in originals.items() if k not in have)
    return out
