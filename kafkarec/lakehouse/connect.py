"""The hand-off to Apache Iceberg's Kafka Connect sink: after kafkarec wrote [start, H) of every
partition into the table, the sink's connector goes on from H.

The sink keeps its source position in the connector's consumer group (``connect-<name>``; it
commits there in the same Kafka transaction as its control events), so the hand-off sets that
group's offsets through the Connect REST API:

1. create the connector STOPPED (KIP-980: ``"initial_state": "STOPPED"``), or stop an existing one
   (``PUT /connectors/NAME/stop``) and wait until its tasks are gone;
2. ``PATCH /connectors/NAME/offsets`` with :func:`offsets_body` (KIP-875, Kafka >= 3.6: only a
   STOPPED connector's offsets can be altered), and read them back (``GET``);
3. ``PUT /connectors/NAME/resume``.

Each step is safe to repeat: a run that crashed anywhere in between is finished by running the same
procedure again (the connector found STOPPED or running is stopped, the same offsets are set again).
Every failure is a :class:`kafkarec.errors.ConnectError` carrying the call, the HTTP status and
the worker's answer.
"""
from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Dict, Mapping, Optional, Tuple

from ..errors import ConnectError

__all__ = ["offsets_body", "hand_off"]

#: The keys of a sink connector's offsets in KIP-875's REST bodies: Kafka's
#: ``org.apache.kafka.connect.util.SinkUtils`` (KAFKA_TOPIC_KEY, KAFKA_PARTITION_KEY, KAFKA_OFFSET_KEY).
TOPIC_KEY, PARTITION_KEY, OFFSET_KEY = "kafka_topic", "kafka_partition", "kafka_offset"


def _end(point: Any) -> int:
    """H of a hand-off point: a ``HandOff(start, end)`` or a bare offset."""
    return int(getattr(point, "end", point))


def offsets_body(points: Mapping[Tuple[str, int], Any]) -> Dict[str, list]:
    """KIP-875's ``PATCH /connectors/NAME/offsets`` body for a sink connector: per partition, the
    offset its consumer group resumes from, H (the first offset the backfill did not write).

    ``points``: ``{(topic, partition): HandOff(start, end)}`` (:func:`kafkarec.lakehouse.hand_off_points`)
    or ``{(topic, partition): H}``."""
    return {"offsets": [
        {"partition": {TOPIC_KEY: topic, PARTITION_KEY: int(partition)}, "offset": {OFFSET_KEY: _end(point)}}
        for (topic, partition), point in sorted(points.items())]}


class _Rest:
    """The Connect REST calls of one hand-off, each bounded by ``timeout`` seconds."""

    def __init__(self, url: str, connector: str, timeout: float) -> None:
        self.url = url.rstrip("/")
        self.connector = connector
        self.path = "/connectors/" + urllib.parse.quote(connector, safe="")
        self.timeout = timeout

    def call(self, method: str, path: str, body: Optional[dict] = None, *, missing_ok: bool = False):
        """The JSON answer of ``method path`` (None when empty, or 404 with ``missing_ok``)."""
        request = f"{method} {path}"
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json", "Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                text = resp.read()
        except urllib.error.HTTPError as exc:
            if exc.code == 404 and missing_ok:
                return None
            answer = exc.read().decode("utf-8", "replace")
            raise ConnectError(self.connector, request, "the worker refused the call", exc.code,
                               _message(answer)) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ConnectError(self.connector, request, f"the worker at {self.url} did not answer: {reason}") from None
        return json.loads(text) if text.strip() else None

    def wait(self, what: str, request: str, done, deadline: float):
        """Poll ``done()`` (a value, or None to go on) until ``deadline``."""
        while True:
            value = done()
            if value is not None:
                return value
            if time.monotonic() > deadline:
                raise ConnectError(self.connector, request, f"{what} did not happen in time")
            time.sleep(0.25)


def _message(answer: str) -> str:
    """Connect's error answers are ``{"error_code": N, "message": "..."}``; the message, or the text."""
    try:
        return str(json.loads(answer)["message"])
    except (ValueError, KeyError, TypeError):
        return answer.strip()


def _stopped(rest: _Rest):
    # a connector just created has no status for a moment (404)
    status = rest.call("GET", rest.path + "/status", missing_ok=True) or {}
    state = status.get("connector", {}).get("state")
    return True if state == "STOPPED" and not status.get("tasks") else None


def _by_partition(offsets: list) -> Dict[Tuple[str, int], int]:
    """A KIP-875 offsets list as ``{(topic, partition): offset}`` (a partition without an offset left out)."""
    return {(o["partition"][TOPIC_KEY], o["partition"][PARTITION_KEY]): o["offset"][OFFSET_KEY]
            for o in offsets if o.get("offset")}


def hand_off(connect_url: str, connector: str, points: Mapping[Tuple[str, int], Any], *,
             config: Optional[Mapping[str, str]] = None, timeout: float = 60.0,
             request_timeout: float = 30.0) -> Dict[str, list]:
    """Set ``connector``'s consumer group to ``points`` (see :func:`offsets_body`) on the Connect
    worker at ``connect_url`` and let it run from there.

    With ``config`` the connector is created STOPPED when it does not exist yet (an existing one is
    stopped, its configuration kept); without it, it must exist and is stopped.  Then its offsets
    are set, read back, and it is resumed.  An existing connector whose group is already past H
    on a partition (it ran from the hand-off) is resumed untouched and the call fails.
    ``timeout`` bounds the whole procedure (the waits for the tasks to stop and for the consumer
    group to empty), ``request_timeout`` each call.  Returns the offsets body that was set."""
    rest = _Rest(connect_url, connector, request_timeout)
    deadline = time.monotonic() + timeout
    body = offsets_body(points)
    if not body["offsets"]:
        raise ConnectError(connector, "hand-off", "no partitions to hand off")
    exists = rest.call("GET", rest.path, missing_ok=True) is not None
    if not exists and config is None:
        raise ConnectError(connector, f"GET {rest.path}", "no such connector, and no configuration to create it with",
                           404)
    if exists:
        rest.call("PUT", rest.path + "/stop")
    else:
        rest.call("POST", "/connectors",
                  {"name": connector, "config": dict(config), "initial_state": "STOPPED"})
    rest.wait("the connector stopping (STOPPED, no tasks)", f"GET {rest.path}/status",
              lambda: _stopped(rest), deadline)
    wanted = _by_partition(body["offsets"])
    if exists:
        # a sink that already ran from H has moved its group past H: setting it back would make it
        # write those rows again (a repeat after a finished hand-off); it runs on as it was
        now = _by_partition(rest.call("GET", rest.path + "/offsets")["offsets"])
        past = {tp: (h, now[tp]) for tp, h in wanted.items() if now.get(tp, h) > h}
        if past:
            rest.call("PUT", rest.path + "/resume")
            raise ConnectError(connector, f"GET {rest.path}/offsets", "the connector is already past the hand-off "
                               "point (it has run from there), nothing changed: " + ", ".join(
                                   f"{t}-{p}: H {h}, now {at}" for (t, p), (h, at) in sorted(past.items())))
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
            time.sleep(0.5)
    got = _by_partition(rest.call("GET", rest.path + "/offsets").get("offsets", []))
    differ = {tp: (h, got.get(tp)) for tp, h in wanted.items() if got.get(tp) != h}
    if differ:
        raise ConnectError(connector, request, "the offsets read back differ from those set: " + ", ".join(
            f"{t}-{p}: set {h}, read {g}" for (t, p), (h, g) in sorted(differ.items())))
    rest.call("PUT", rest.path + "/resume")
    return body
