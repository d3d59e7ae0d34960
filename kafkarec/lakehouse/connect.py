"""The hand-off to Apache Iceberg's Kafka Connect sink: after kafkarec wrote [start, H) of every
partition into the table, the sink's connector goes on from H.

The sink keeps its source position in the connector's consumer group (``connect-<name>``; it
commits there in the same Kafka transaction as its control events), so the hand-off sets that
group's offsets through the Connect REST API:

1. create the connector STOPPED (KIP-980: ``"initial_state": "STOPPED"``), or stop an existing one
   (``PUT /connectors/NAME/stop``) and wait until its tasks are gone;
2. ``PATCH /connectors/NAME/offsets`` with :func:`offsets_body` (KIP-875, Kafka >= 3.6: only a
   STOPPED connector's offsets can be altered), and read them back (``GET``);
3. ``PUT /connectors/NAME/resume``, and wait until the connector and every task are RUNNING.

Each step is safe to repeat: a run that crashed anywhere in between is finished by running the same
procedure again (the connector found STOPPED or running is stopped, the same offsets are set again).
Every failure is a :class:`kafkarec.errors.ConnectError` carrying the call, the HTTP status and
the worker's answer: every answer is read in one place (:meth:`_Rest.call`), which checks its
status, its content type and its shape against what the call expects, and every call waits at
most until its deadline (its own, and the whole procedure's): connecting, sending and every read of
the answer, through kafkarec's one HTTP client (:mod:`kafkarec._http`).
"""
from __future__ import annotations

import json
import time
import urllib.parse
from typing import Any, Callable, Dict, List, Mapping, NamedTuple, Optional, Tuple

from .._http import Answer, NoAnswer, exchange, quote
from ..errors import ConnectError, ConnectorFailedError, HandOffOverlapError, HandOffRefusedError

__all__ = ["offsets_body", "hand_off"]

#: The keys of a sink connector's offsets in KIP-875's REST bodies: Kafka's
#: ``org.apache.kafka.connect.util.SinkUtils`` (KAFKA_TOPIC_KEY, KAFKA_PARTITION_KEY, KAFKA_OFFSET_KEY).
TOPIC_KEY, PARTITION_KEY, OFFSET_KEY = "kafka_topic", "kafka_partition", "kafka_offset"

#: The largest answer read, in bytes: Connect's answers are small (an offsets list of 100,000
#: partitions is about 10 MB); anything larger is not a Connect worker's answer.
MAX_ANSWER = 64 << 20
#: Seconds between two polls of the connector's status.
POLL = 0.25


def _end(point: Any) -> int:
    """H of a hand-off point: a ``HandOff(start, end)`` or a bare offset."""
    return int(getattr(point, "end", point))


def _start(point: Any) -> Optional[int]:
    """The backfill's start of a hand-off point: a ``HandOff``'s, None for a bare H (unknown)."""
    start = getattr(point, "start", None)
    return None if start is None else int(start)


def offsets_body(points: Mapping[Tuple[str, int], Any]) -> Dict[str, list]:
    """KIP-875's ``PATCH /connectors/NAME/offsets`` body for a sink connector: per partition, the
    offset its consumer group resumes from, H (the first offset the backfill did not write).

    ``points``: ``{(topic, partition): HandOff(start, end)}`` (:func:`kafkarec.lakehouse.hand_off_points`)
    or ``{(topic, partition): H}``."""
    return {"offsets": [
        {"partition": {TOPIC_KEY: topic, PARTITION_KEY: int(partition)}, "offset": {OFFSET_KEY: _end(point)}}
        for (topic, partition), point in sorted(points.items())]}


# --- one reader of every answer ------------------------------------------------------------------

class _Unexpected(Exception):
    """An answer of the wrong shape for its call (turned into a ConnectError by :meth:`_Rest.call`)."""


def _is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or media.endswith("+json")


def _json(answer: Answer):
    """The JSON value of an answer that declares and holds JSON."""
    if not answer.body.strip():
        raise _Unexpected("an empty answer where JSON was expected")
    if not _is_json(answer.content_type):
        raise _Unexpected(f"the answer is {answer.content_type or 'of no content type'}, not JSON")
    try:
        return json.loads(answer.body)
    except (ValueError, RecursionError) as exc:      # JSONDecodeError, UnicodeDecodeError, too deep
        raise _Unexpected(f"the answer is not valid JSON ({exc})") from None


def _message(answer: Answer) -> str:
    """Connect's error answers are ``{"error_code": N, "message": "..."}``; the message, or the text."""
    if _is_json(answer.content_type):
        try:
            value = json.loads(answer.body)
        except (ValueError, RecursionError):
            value = None
        if isinstance(value, dict) and isinstance(value.get("message"), str):
            return value["message"]
    return quote(answer.body)


class _Rest:
    """The Connect REST calls of one hand-off: each waits at most ``request_timeout`` seconds, and
    none past ``deadline`` (the whole hand-off's)."""

    def __init__(self, url: str, connector: str, request_timeout: float, deadline: float, timeout: float) -> None:
        self.url = url.rstrip("/")
        self.connector = connector
        self.path = "/connectors/" + urllib.parse.quote(connector, safe="")
        self.request_timeout = request_timeout
        self.deadline = deadline
        self.timeout = timeout

    def _out_of_time(self, request: str) -> ConnectError:
        return ConnectError(self.connector, request,
                            f"the hand-off did not finish within its timeout of {self.timeout:g} s")

    def call(self, method: str, path: str, body: Optional[dict] = None, *,
             read: Optional[Callable[[Any], Any]] = None, missing_ok: bool = False):
        """``method path`` with ``body``; the answer ``read`` makes of its JSON (None without
        ``read``: the status is the answer, the body is not looked at; None too for a 404 with
        ``missing_ok``).  Anything else is a :class:`ConnectError` naming the call: no answer or
        not HTTP, a refusal (its status and Connect's message), an answer cut short, too large, not
        JSON or of another shape than ``read`` expects."""
        request = f"{method} {path}"
        now = time.monotonic()
        if now >= self.deadline:
            raise self._out_of_time(request)
        deadline = min(now + self.request_timeout, self.deadline)
        answer = self._exchange(request, method, path, body, deadline)
        if answer.status == 404 and missing_ok:
            return None
        if not 200 <= answer.status < 300:
            raise ConnectError(self.connector, request, "the worker refused the call", answer.status, _message(answer))
        if read is None:
            return None
        try:
            return read(_json(answer))
        except _Unexpected as exc:
            raise ConnectError(self.connector, request, f"unexpected answer: {exc}", answer.status,
                               quote(answer.body)) from None

    def _exchange(self, request: str, method: str, path: str, body: Optional[dict], deadline: float) -> Answer:
        data = None if body is None else json.dumps(body).encode()
        try:
            return exchange(method, self.url + path, deadline=deadline, max_answer=MAX_ANSWER, body=data,
                            headers={"Content-Type": "application/json", "Accept": "application/json"})
        except NoAnswer as exc:
            raise self._no_answer(request, exc, deadline) from None

    def _no_answer(self, request: str, exc: NoAnswer, deadline: float) -> ConnectError:
        """The hand-off's words for a call that got no whole answer (:class:`kafkarec._http.NoAnswer`)."""
        if exc.kind == "timeout":
            return self._late(request, exc.status, deadline)
        if exc.kind == "not_http":
            return ConnectError(self.connector, request, f"the answer from {self.url} is not HTTP ({exc.cause!r})")
        if exc.kind == "closed":
            return ConnectError(self.connector, request, f"the worker at {self.url} closed the connection without "
                                "answering")
        if exc.kind == "dropped":
            return ConnectError(self.connector, request, f"the worker at {self.url} dropped the connection: "
                                f"{exc.cause}", exc.status)
        if exc.kind in ("unreachable", "bad_url"):
            return ConnectError(self.connector, request, f"the worker at {self.url} did not answer: {exc.cause}")
        # cut short, too large: what came of the answer is quoted
        return ConnectError(self.connector, request, exc.reason, exc.status, quote(exc.body) if exc.body else "")

    def _late(self, request: str, status: Optional[int], deadline: float) -> ConnectError:
        if deadline >= self.deadline:
            return self._out_of_time(request)
        part = "no answer" if status is None else "no whole answer"
        return ConnectError(self.connector, request, f"{part} within the request timeout of "
                            f"{self.request_timeout:g} s from the worker at {self.url}", status)

    def _not_http(self, request: str, exc: Exception) -> ConnectError:
        return ConnectError(self.connector, request, f"the answer from {self.url} is not HTTP ({exc!r})")

    def wait(self, what: str, request: str, done: Callable[[], Any]):
        """Poll ``done()`` (a value, or None to go on) until the hand-off's deadline."""
        while True:
            value = done()
            if value is not None:
                return value
            time.sleep(max(min(POLL, self.deadline - time.monotonic()), 0))
            if time.monotonic() >= self.deadline:
                raise ConnectError(self.connector, request, f"{what} did not happen within the hand-off's timeout of "
                                   f"{self.timeout:g} s")


# --- what each answer holds ----------------------------------------------------------------------

class _Task(NamedTuple):
    id: int
    state: str
    trace: str


class _Status(NamedTuple):
    state: str
    trace: str
    tasks: List[_Task]


def _object(value, what: str) -> dict:
    if not isinstance(value, dict):
        raise _Unexpected(f"{what} is a JSON {type(value).__name__}, not an object")
    return value


def _str(value, what: str) -> str:
    if not isinstance(value, str):
        raise _Unexpected(f"{what} is not a string")
    return value


def _int(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Unexpected(f"{what} is not an integer")
    return value


def _list(value, what: str) -> list:
    if not isinstance(value, list):
        raise _Unexpected(f"{what} is not a list")
    return value


def _any_object(value) -> dict:
    return _object(value, "the answer")


def _status(value) -> _Status:
    """``GET /connectors/NAME/status``: the connector's state and its tasks' (a ``trace`` on FAILED)."""
    value = _object(value, "the answer")
    connector = _object(value.get("connector"), "its connector")
    tasks = []
    for i, task in enumerate(_list(value.get("tasks", []), "its tasks")):
        task = _object(task, f"task {i}")
        tasks.append(_Task(_int(task.get("id"), f"task {i}'s id"), _str(task.get("state"), f"task {i}'s state"),
                           _str(task.get("trace", ""), f"task {i}'s trace")))
    return _Status(_str(connector.get("state"), "the connector's state"),
                   _str(connector.get("trace", ""), "the connector's trace"), tasks)


def _offsets(value) -> Dict[Tuple[str, int], int]:
    """``GET /connectors/NAME/offsets`` of a sink as ``{(topic, partition): offset}`` (a partition
    without an offset left out)."""
    out = {}
    for i, entry in enumerate(_list(_object(value, "the answer").get("offsets"), "its offsets")):
        entry = _object(entry, f"offsets[{i}]")
        if entry.get("offset") is None:
            continue
        partition = _object(entry.get("partition"), f"offsets[{i}].partition")
        offset = _object(entry["offset"], f"offsets[{i}].offset")
        out[(_str(partition.get(TOPIC_KEY), f"offsets[{i}].partition.{TOPIC_KEY}"),
             _int(partition.get(PARTITION_KEY), f"offsets[{i}].partition.{PARTITION_KEY}"))] = \
            _int(offset.get(OFFSET_KEY), f"offsets[{i}].offset.{OFFSET_KEY}")
    return out


# --- the procedure -------------------------------------------------------------------------------

def _stopped(rest: _Rest):
    # a connector just created has no status for a moment (404)
    status = rest.call("GET", rest.path + "/status", read=_status, missing_ok=True)
    return True if status is not None and status.state == "STOPPED" and not status.tasks else None


def _wait_running(rest: _Rest) -> None:
    """Until the connector and each of its tasks (one at least) are RUNNING; a FAILED one fails the
    hand-off with its trace, and so does the deadline."""
    request = f"GET {rest.path}/status"
    seen = "no status"
    while True:
        status = rest.call("GET", rest.path + "/status", read=_status, missing_ok=True)
        if status is not None:
            if status.state == "FAILED":
                raise ConnectorFailedError(rest.connector, request, "the connector FAILED after it was resumed", 200,
                                           status.trace)
            for task in status.tasks:
                if task.state == "FAILED":
                    raise ConnectorFailedError(rest.connector, request, f"task {task.id} FAILED after the connector "
                                               "was resumed", 200, task.trace)
            if status.state == "RUNNING" and status.tasks and all(t.state == "RUNNING" for t in status.tasks):
                return
            seen = ", ".join([f"connector {status.state}"] + (
                [f"task {t.id} {t.state}" for t in status.tasks] or ["no tasks"]))
        time.sleep(max(min(POLL, rest.deadline - time.monotonic()), 0))
        if time.monotonic() >= rest.deadline:
            raise ConnectorFailedError(rest.connector, request, "the connector and its tasks were not RUNNING within "
                                       f"the hand-off's timeout of {rest.timeout:g} s (last seen: {seen})")


def hand_off(connect_url: str, connector: str, points: Mapping[Tuple[str, int], Any], *,
             config: Optional[Mapping[str, str]] = None, timeout: float = 60.0,
             request_timeout: float = 30.0) -> Dict[str, list]:
    """Set ``connector``'s consumer group to ``points`` (see :func:`offsets_body`) on the Connect
    worker at ``connect_url`` and let it run from there.

    With ``config`` the connector is created STOPPED when it does not exist yet (an existing one is
    stopped, its configuration kept); without it, it must exist and is stopped.  Then its offsets
    are set, read back, and it is resumed; the call returns once the connector and every task are
    RUNNING.  ``timeout`` (seconds) bounds the whole call, ``request_timeout`` each REST call
    (connecting, sending and reading the whole answer).  Returns the offsets body that was set.

    Every failure is a :class:`kafkarec.errors.ConnectError` naming the call; three kinds say more:
    :class:`~kafkarec.errors.HandOffRefusedError` when an existing connector's group is already
    past H on a partition (it ran from the hand-off: setting it back would make the sink write
    those rows again), which leaves the connector as it was and resumes it;
    :class:`~kafkarec.errors.HandOffOverlapError` when an existing connector's group is above the
    backfill's start and below H on a partition (above any offset when ``points`` are bare H):
    its sink read records the backfill wrote too, which it has committed to the table or will
    commit from its control topic, whatever offsets are set; the connector is left STOPPED;
    :class:`~kafkarec.errors.ConnectorFailedError` when, the offsets set and the connector
    resumed, the connector or a task FAILED (``body``: its trace) or was not RUNNING in time."""
    deadline = time.monotonic() + timeout
    rest = _Rest(connect_url, connector, request_timeout, deadline, timeout)
    body = offsets_body(points)
    if not body["offsets"]:
        raise ConnectError(connector, "hand-off", "no partitions to hand off")
    exists = rest.call("GET", rest.path, read=_any_object, missing_ok=True) is not None
    if not exists and config is None:
        raise ConnectError(connector, f"GET {rest.path}", "no such connector, and no configuration to create it with",
                           404)
    if exists:
        rest.call("PUT", rest.path + "/stop")
    else:
        rest.call("POST", "/connectors", {"name": connector, "config": dict(config), "initial_state": "STOPPED"})
    rest.wait("the connector stopping (STOPPED, no tasks)", f"GET {rest.path}/status", lambda: _stopped(rest))
    wanted = {(o["partition"][TOPIC_KEY], o["partition"][PARTITION_KEY]): o["offset"][OFFSET_KEY]
              for o in body["offsets"]}
    starts = {(topic, int(partition)): _start(point) for (topic, partition), point in points.items()}
    if exists:
        now = rest.call("GET", rest.path + "/offsets", read=_offsets)
        # a group inside [start, H): the sink read records below H, and its workers handed their
        # files to the coordinator (DataWritten on the control topic) in the transaction that
        # committed those offsets; the coordinator commits them to the table whenever it runs
        # (they may not be there yet), so setting the group to H cannot keep them out
        inside = {tp: (h, now[tp]) for tp, h in wanted.items() if tp in now and now[tp] < h
                  and (starts[tp] is None or now[tp] > starts[tp])}
        if inside:
            raise HandOffOverlapError(connector, f"GET {rest.path}/offsets", (
                "the connector's consumer group is below the hand-off point (its sink has read records the backfill "
                "wrote, and has written them or will commit them from its control topic): it was left STOPPED, its "
                "offsets as they were; ") + ", ".join(
                    f"{t}-{p}: H {h}, group at {at}" for (t, p), (h, at) in sorted(inside.items())), 200)
        # a sink that already ran from H has moved its group past H: setting it back would make it
        # write those rows again (a repeat after a finished hand-off); it runs on as it was
        past = {tp: (h, now[tp]) for tp, h in wanted.items() if now.get(tp, h) > h}
        if past:
            rest.call("PUT", rest.path + "/resume")
            _wait_running(rest)
            raise HandOffRefusedError(connector, f"GET {rest.path}/offsets", (
                "the connector's consumer group is already past the hand-off point (it has run from there): "
                "its offsets were left as they are and it was resumed; ") + ", ".join(
                    f"{t}-{p}: H {h}, group at {at}" for (t, p), (h, at) in sorted(past.items())), 200)
    # the tasks' consumers leave the group a moment after the connector reports STOPPED; until then
    # the worker cannot alter the group's offsets (a server error, or 409 while it rebalances)
    request = f"PATCH {rest.path}/offsets"
    while True:
        try:
            rest.call("PATCH", rest.path + "/offsets", body)
            break
        except ConnectError as exc:
            if exc.status is None or (exc.status < 500 and exc.status != 409) or time.monotonic() > deadline:
                raise
            time.sleep(min(0.5, max(deadline - time.monotonic(), 0)))
    got = rest.call("GET", rest.path + "/offsets", read=_offsets)
    differ = {tp: (h, got.get(tp)) for tp, h in wanted.items() if got.get(tp) != h}
    if differ:
        raise ConnectError(connector, f"GET {rest.path}/offsets", "the offsets read back differ from those set: "
                           + ", ".join(f"{t}-{p}: set {h}, read {g}" for (t, p), (h, g) in sorted(differ.items())), 200)
    rest.call("PUT", rest.path + "/resume")
    _wait_running(rest)
    return body
