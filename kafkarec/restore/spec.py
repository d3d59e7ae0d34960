"""A restore's options, read once into a frozen :class:`RestoreSpec` (the command line and the
Python functions make one the same way, :meth:`RestoreSpec.of`; every refusal is a
:class:`kafkarec.errors.UsageError`)."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from kafkarec.errors import SelectionError, UsageError

__all__ = ["RestoreSpec", "PROGRESS_GROUP_PREFIX", "SAME_OFFSETS_STEPS"]

#: the steps of a restore at the source's offsets, in order: ``prepare`` (the target running: its
#: topics created), ``write`` (the target stopped: its partition folders written), ``groups`` (the
#: target running again: the groups' positions set as they were)
SAME_OFFSETS_STEPS = ("prepare", "write", "groups")

#: the consumer group on the target that holds a restore's progress is this prefix and its id
PROGRESS_GROUP_PREFIX = "kafkarec-restore."
# Kafka's legal topic names (Topic.validate): 1 to 249 of these characters, not "." or ".."
_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")
#: --timeout's seconds: every client's socket.timeout.ms is the timeout in ms, which librdkafka takes
#: from 10 to 300,000 (and transaction.timeout.ms twice that, within the broker's 900,000 default
#: transaction.max.timeout.ms)
TIMEOUT_MIN_S, TIMEOUT_MAX_S = 0.01, 300.0
#: records per transaction: Kafka counts records in a Java int
_TRANSACTION_RECORDS_MAX = 2**31 - 1
#: times are Kafka timestamps, ms since the epoch in a Java long; before 1970 none selects anything
_TIME_MAX = 2**63 - 1


def _topic_name(name: str, what: str) -> str:
    name = str(name).strip()
    if not _TOPIC.fullmatch(name) or name in (".", ".."):
        raise UsageError(f"{what} {name!r}: not a Kafka topic name (1 to 249 of a-z A-Z 0-9 . _ -)")
    return name


@dataclass(frozen=True)
class RestoreSpec:
    """One restore, settled.

    ``source``: the history (a log directory, a URI, as :class:`kafkarec.scan.LogScan` reads it);
    ``target``: the target cluster's bootstrap servers (None only for a dry run that reads no
    target: :func:`kafkarec.restore.dry_run`; every client of the target refuses it); ``topics``: the source topics restored
    (None: every topic but Kafka's ``__*``); ``rename``: ``((source topic, target topic), ...)``;
    ``end_time``: ms since the epoch, each partition ends at the last stable offset at the first
    record at or after it (None: at the end of the log); ``restore_id``: names the restore's progress
    group and transactional ids on the target (a re-run with the same id resumes); ``transaction_records``:
    records per transaction; ``target_properties``: librdkafka properties for every client of the
    target (security settings); ``storage_options``, ``tiered_storage``: as every reader's;
    ``timeout``: seconds any one request to the target may take, its
    retries of retriable errors included (:func:`kafkarec.restore.target.retried`; 0.01 to 300); ``groups_as_of``: ms since the
    epoch, the moment whose group positions are translated (default: the end of the history
    restored, ``end_time`` when given, else None: the end of the log);
    ``share_groups_acknowledge``: after the share groups' start offsets are set on the target,
    acknowledge each share group's records past its start offset there as the source's group had
    (:func:`kafkarec.restore.shares.acknowledge`); ``bootstrap``: the running source cluster's
    bootstrap servers, asked for each partition's log start and last stable offset
    (:func:`kafkarec.lakehouse.handoff.plan_hand_off`: the log directory's checkpoint lags a
    ``deleteRecords``); ``source_registry``, ``target_registry``, ``subject_strategy``: schema ids
    translated from the one registry into the other (:mod:`kafkarec.restore.schemas`; both or
    neither)."""
    source: str
    target: Optional[str]
    topics: Optional[Tuple[str, ...]] = None
    rename: Tuple[Tuple[str, str], ...] = ()
    end_time: Optional[int] = None
    restore_id: str = "default"
    transaction_records: int = 1000
    target_properties: Tuple[Tuple[str, str], ...] = ()
    storage_options: Optional[Mapping[str, str]] = None
    tiered_storage: Optional[str] = None
    timeout: float = 30.0
    groups_as_of: Optional[int] = None
    share_groups_acknowledge: bool = False
    bootstrap: Optional[str] = None
    #: each partition's content digest taken as its records are read (``--evidence``:
    #: :mod:`kafkarec.restore.evidence`)
    digest: bool = False
    #: schema ids carried across registries (:mod:`kafkarec.restore.schemas`): the source's registry
    #: (a log dir holding ``_schemas``, a folder of schema files, a URL), the target's (a URL) and
    #: the subject-naming strategy (``topic``, ``record``, ``topic_record``)
    source_registry: Optional[str] = None
    target_registry: Optional[str] = None
    subject_strategy: str = "topic"
    #: a restore at the source's offsets (:mod:`kafkarec.restore.same_offsets`): its step,
    #: one of :data:`SAME_OFFSETS_STEPS` (None: the produced restore), and the target brokers' log
    #: dirs (every log dir of every broker: each replica is written)
    same_offsets: Optional[str] = None
    target_log_dirs: Tuple[str, ...] = ()

    @classmethod
    def of(cls, source: str, target: Optional[str], *, topics: Union[str, Iterable[str], None] = None,
           rename: Union[Mapping[str, str], Iterable[str], None] = None, end_time=None,
           restore_id: str = "default", transaction_records: int = 1000,
           target_properties: Optional[Mapping[str, str]] = None, storage_options: Optional[Mapping[str, str]] = None,
           tiered_storage: Optional[str] = None, timeout: float = 30.0, groups_as_of=None,
           share_groups_acknowledge: bool = False, bootstrap: Optional[str] = None,
           digest: bool = False, source_registry: Optional[str] = None, target_registry: Optional[str] = None,
           subject_strategy: str = "topic", same_offsets: Optional[str] = None,
           target_log_dir: Union[str, Sequence[str], None] = None) -> "RestoreSpec":
        """The spec of these options, checked (the one place they are read): ``topics`` a list or
        ``"a,b"``; ``rename`` a mapping or ``["a=b", ...]``; ``end_time`` and ``groups_as_of`` ms or
        ISO 8601; ``target`` None for a dry run that reads no target."""
        if not source:
            raise UsageError("restore: no source history given")
        if target is not None and not str(target).strip():
            raise UsageError("restore: no target cluster given (its bootstrap servers, host:port)")
        if bootstrap is not None and not str(bootstrap).strip():
            raise UsageError("restore: --bootstrap names no source cluster (its bootstrap servers, host:port)")
        names = None
        if topics is not None:
            items = topics.split(",") if isinstance(topics, str) else list(topics)
            names = tuple(sorted({_topic_name(t, "topic") for t in items if str(t).strip()}))
            if not names:
                raise UsageError("restore: topics names no topic")
        pairs: Dict[str, str] = {}
        given: Iterable[Tuple[str, str]] = (rename.items() if isinstance(rename, Mapping)
                                             else [_pair(x, "rename") for x in rename or ()])
        for a, b in given:
            a, b = _topic_name(a, "rename: source topic"), _topic_name(b, "rename: target topic")
            if pairs.get(a, b) != b:
                raise UsageError(f"rename: {a} is renamed to {pairs[a]} and to {b}")
            pairs[a] = b
        if names is not None and set(pairs) - set(names):
            raise UsageError(f"rename: {', '.join(sorted(set(pairs) - set(names)))} not among the topics restored")
        targets = list(pairs.values())
        if len(set(targets)) != len(targets):
            raise UsageError("rename: two source topics renamed to one target topic")
        restore_id = str(restore_id).strip()
        if not restore_id:
            raise UsageError("restore id: empty")
        records = _whole(transaction_records, "transaction records", 1, _TRANSACTION_RECORDS_MAX)
        limit = _seconds(timeout)
        props = tuple(sorted((str(k), str(v)) for k, v in (target_properties or {}).items()))
        for k, _ in props:
            if k in ("bootstrap.servers", "transactional.id", "group.id", "isolation.level"):
                raise UsageError(f"target property {k}: the restore sets it")
        end = None if end_time is None else _time(end_time, "end time")
        # the groups as the restored history leaves them: at its end, --end-time's when given
        as_of = end if groups_as_of is None else _time(groups_as_of, "groups as of")
        if (source_registry is None) != (target_registry is None):
            raise UsageError("--source-registry and --target-registry go together: the ids of one are translated "
                             "into the other's")
        strategy = str(subject_strategy).lower().replace("-", "_")
        from kafkarec.restore.schemas import STRATEGIES
        if strategy not in STRATEGIES:
            raise UsageError(f"subject strategy {subject_strategy!r}: one of {', '.join(STRATEGIES)}")
        if target_registry is not None and not str(target_registry).lower().startswith(("http://", "https://")):
            raise UsageError(f"--target-registry {target_registry}: not a registry URL (http:// or https://)")
        step = _same_offsets(same_offsets, target, target_log_dir, end_time=end, digest=digest,
                             registry=source_registry is not None, bootstrap=bootstrap)
        return cls(str(source), None if target is None else str(target).strip(), names, tuple(sorted(pairs.items())),
                   end, restore_id, records, props,
                   dict(storage_options) if storage_options else None, tiered_storage, limit,
                   as_of, bool(share_groups_acknowledge), None if bootstrap is None else str(bootstrap).strip(),
                   bool(digest), None if source_registry is None else str(source_registry),
                   None if target_registry is None else str(target_registry), strategy, step,
                   _log_dirs(target_log_dir))

    def target_topic(self, topic: str) -> str:
        """The target topic a source topic is restored into."""
        return dict(self.rename).get(topic, topic)

    @property
    def progress_group(self) -> str:
        """The consumer group on the target whose committed offsets are the restore's progress:
        per target partition, the next source offset to restore."""
        return PROGRESS_GROUP_PREFIX + self.restore_id

    def transactional_id(self, target_topic: str, partition: int) -> str:
        """The one transactional id of a target partition's producer: a restarted restore fences
        the one before it (its open transaction is aborted) by taking the same id."""
        return f"{self.progress_group}.{target_topic}-{partition}"

    def client_config(self, **extra) -> dict:
        """librdkafka's configuration of a client of the target."""
        if self.target is None:
            raise UsageError("restore: no target cluster given (its bootstrap servers, host:port): only a dry "
                             "run reads none")
        conf = {"bootstrap.servers": self.target, "log_level": 0, "socket.timeout.ms": int(self.timeout * 1000)}
        conf.update(dict(self.target_properties))
        conf.update(extra)
        return conf


def _log_dirs(value) -> Tuple[str, ...]:
    """``--target-log-dir``'s folders: one, several given apart or comma-separated, each once."""
    if value is None:
        return ()
    items = [value] if isinstance(value, (str, os.PathLike)) else list(value)
    out: List[str] = []
    for item in items:
        for part in str(os.fspath(item)).split(","):
            part = part.strip()
            if not part:
                continue
            if os.path.abspath(part) in {os.path.abspath(o) for o in out}:
                raise UsageError(f"--target-log-dir {part}: given twice")
            out.append(part)
    return tuple(out)


def _same_offsets(step, target, log_dir, *, end_time, digest, registry, bootstrap) -> Optional[str]:
    """``--same-offsets STEP``'s checks: the step is known, it has the log dir and the target it
    needs, and nothing is asked that a copy of the log at its offsets does not do."""
    if step is None:
        if log_dir is not None:
            raise UsageError("--target-log-dir is --same-offsets': add --same-offsets STEP")
        return None
    step = str(step).strip().lower()
    if step not in SAME_OFFSETS_STEPS:
        raise UsageError(f"--same-offsets {step!r}: one of {', '.join(SAME_OFFSETS_STEPS)}")
    if not _log_dirs(log_dir):
        raise UsageError("--same-offsets needs --target-log-dir: the target broker's log dir (its log.dirs)")
    if step != "write" and target is None:
        raise UsageError(f"--same-offsets {step} needs --target-bootstrap: the target broker is running then")
    given = [flag for flag, on in (("--end-time", end_time is not None), ("--evidence", digest),
                                   ("--source-registry/--target-registry", registry),
                                   ("--bootstrap", bootstrap is not None)) if on]
    if given:
        raise UsageError(f"--same-offsets with {', '.join(given)}: the log is copied whole from its log start, "
                         "its bytes as they are")
    return step


def _whole(value, what: str, low: int, high: int) -> int:
    """A whole number from ``low`` to ``high`` (an int, its digits, or a float without a fraction)."""
    refused = UsageError(f"{what} {str(value)[:40]!r}: not a whole number at least {low} and at most {high}")
    if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
        raise refused
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):     # a text of thousands of digits: ValueError
        raise refused from None
    if not low <= number <= high:
        raise refused
    return number


def _seconds(value) -> float:
    """--timeout: finite seconds that every client setting derived from it takes (see TIMEOUT_MIN_S)."""
    refused = UsageError(f"timeout {str(value)[:40]!r}: not a number of seconds from {TIMEOUT_MIN_S:g} to "
                         f"{TIMEOUT_MAX_S:g} (librdkafka takes 10 to 300,000 ms for socket.timeout.ms)")
    if isinstance(value, bool):
        raise refused
    try:
        seconds = float(value)
    except (TypeError, ValueError, OverflowError):
        raise refused from None
    if not TIMEOUT_MIN_S <= seconds <= TIMEOUT_MAX_S:       # NaN compares false: refused too
        raise refused
    return seconds


def _time(value, what: str) -> int:
    """A time option: ms since the epoch or ISO 8601 (:func:`kafkarec.log.selection.parse_time`),
    from 0 to Java's largest long."""
    from kafkarec.log.selection import parse_time
    refused = UsageError(f"{what} {str(value)[:40]!r}: not a time (ms since the epoch or ISO 8601)")
    if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
        raise refused
    try:
        ms = parse_time(int(value) if isinstance(value, float) else value)
    except SelectionError as e:
        raise UsageError(f"{what}: {e}") from None
    except (ValueError, OverflowError):     # Python's own limits (a text of thousands of digits)
        raise refused from None
    if not 0 <= ms <= _TIME_MAX:
        raise UsageError(f"{what} {str(value)[:40]!r}: {ms} ms is not a Kafka time (0 to {_TIME_MAX} ms since "
                         "the epoch)")
    return ms


def _pair(text: str, what: str) -> Tuple[str, str]:
    a, sep, b = str(text).partition("=")
    if not sep or not a.strip() or not b.strip():
        raise UsageError(f"{what} {text!r}: expected SOURCE=TARGET")
    return a.strip(), b.strip()
