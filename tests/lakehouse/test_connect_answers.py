"""The hand-off against Connect workers that answer badly (issue 49, findings 9 and 12): every
failure is a ConnectError naming the call, every call ends by its deadline, a FAILED task fails the
hand-off with its trace, a refused repeat says the worker answered.

No real worker: :class:`FakeWorker` is a REST port on 127.0.0.1 answering from a script, one
connection at a time, in one thread stopped and joined when the test ends.
"""
from __future__ import annotations

import functools
import json
import time

import pytest

from support.servers.scripted_http import Answer, ScriptedPort, http, trickle

from kafkarec.errors import ConnectError, ConnectorFailedError, HandOffOverlapError, HandOffRefusedError
from kafkarec.lakehouse import HandOff
from kafkarec.lakehouse.connect import hand_off

NAME = "sink"
POINTS = {("orders", 0): 41, ("orders", 1): 17}
SET = {"offsets": [
    {"partition": {"kafka_topic": "orders", "kafka_partition": 0}, "offset": {"kafka_offset": 41}},
    {"partition": {"kafka_topic": "orders", "kafka_partition": 1}, "offset": {"kafka_offset": 17}}]}
TRACE = "java.lang.NoClassDefFoundError: org/apache/kafka/common/utils/AppInfoParser\n\tat IcebergSinkTask.start"

#: Connect's slow proxy: the head at once, then the body a byte at a time
trickle = functools.partial(trickle, body_only=True)
#: a Connect worker's port (:class:`support.servers.scripted_http.ScriptedPort`)
FakeWorker = ScriptedPort


def connect(**overrides: Answer):
    """A script of a Connect worker holding connector ``sink``, whose offsets read back as they
    were set; ``overrides``: ``**{"GET /connectors/sink/status": answer, ...}``.  Its status is
    STOPPED until ``PUT .../resume``, RUNNING with one RUNNING task after."""
    def script(method: str, path: str, calls) -> Answer:
        request = f"{method} {path}"
        if request in overrides:
            return overrides[request]
        resumed = any(c[:2] == ("PUT", f"/connectors/{NAME}/resume") for c in calls)
        if request == f"GET /connectors/{NAME}":
            return http(200, {"name": NAME, "config": {}, "tasks": [], "type": "sink"})
        if request == f"GET /connectors/{NAME}/status":
            return http(200, {"name": NAME, "connector": {"state": "RUNNING" if resumed else "STOPPED"},
                              "tasks": [{"id": 0, "state": "RUNNING"}] if resumed else [], "type": "sink"})
        if request == f"GET /connectors/{NAME}/offsets":
            patched = [json.loads(c[2]) for c in calls if c[0] == "PATCH"]
            return http(200, patched[-1] if patched else {"offsets": []})
        if request == f"PATCH /connectors/{NAME}/offsets":
            return http(200, {"message": "The offsets for this connector have been altered successfully"})
        if method == "PUT":
            return http(202, b"", content_type="")
        return http(404, {"error_code": 404, "message": f"no {request}"})
    return script


def run(script, **kw):
    with FakeWorker(script) as worker:
        return hand_off(worker.url, NAME, POINTS, **kw), worker.calls


def test_the_hand_off_returns_once_the_connector_and_its_tasks_are_running():
    def script(method, path, calls):
        resumes = [i for i, c in enumerate(calls) if c[:2] == ("PUT", "/connectors/sink/resume")]
        if (method, path) == ("GET", "/connectors/sink/status") and resumes and len(calls) - resumes[0] < 4:
            return http(200, {"connector": {"state": "RUNNING"}, "tasks": [{"id": 0, "state": "UNASSIGNED"}]})
        return connect()(method, path, calls)
    body, calls = run(script)
    assert body == SET
    assert [c[:2] for c in calls if c[0] != "GET"] == [
        ("PUT", "/connectors/sink/stop"), ("PATCH", "/connectors/sink/offsets"), ("PUT", "/connectors/sink/resume")]
    assert [c[:2] for c in calls][-4:] == [("PUT", "/connectors/sink/resume")] + [
        ("GET", "/connectors/sink/status")] * 3


@pytest.mark.parametrize("request_, answer, reason, status", [
    # a proxy's (or a wrong port's) page, a 200 that is not JSON
    ("GET /connectors/sink", http(200, b"<html><body>Welcome</body></html>", "text/html"),
     "unexpected answer: the answer is text/html, not JSON", 200),
    ("GET /connectors/sink", http(200, b"{not json", "application/json"), "the answer is not valid JSON", 200),
    ("GET /connectors/sink", http(200, b""), "an empty answer where JSON was expected", 200),
    # JSON of another shape than the call's
    ("GET /connectors/sink/status", http(200, ["STOPPED"]), "the answer is a JSON list, not an object", 200),
    ("GET /connectors/sink/status", http(200, {"connector": {"state": 7}, "tasks": []}),
     "the connector's state is not a string", 200),
    ("GET /connectors/sink/offsets", http(200, {"offsets": {"orders": 41}}), "its offsets is not a list", 200),
    ("GET /connectors/sink/offsets", http(200, {"offsets": [{"partition": {"kafka_topic": "orders", "kafka_partition":
                                                 "0"}, "offset": {"kafka_offset": 9}}]}),
     "offsets[0].partition.kafka_partition is not an integer", 200),
    # not HTTP at all (a wrong port), an answer cut short (a worker restarting)
    ("GET /connectors/sink", b"SSH-2.0-OpenSSH_9.6\r\n", "is not HTTP", None),
    ("GET /connectors/sink", http(200, b'{"name": "si', length=51), "the answer was cut short: 12 of 51 bytes", 200),
    ("GET /connectors/sink", b"", "closed the connection without answering", None),
    # a Content-Length no Connect answer has, refused before reading
    ("GET /connectors/sink", http(200, b"{}", length=1 << 40), "more than the", 200),
], ids=["html", "bad-json", "empty", "list", "state-not-str", "offsets-not-list", "partition-not-int", "not-http",
        "cut-short", "closed", "too-large"])
def test_every_bad_answer_is_a_connect_error_naming_the_call(request_, answer, reason, status):
    with pytest.raises(ConnectError) as info:
        run(connect(**{request_: answer}), timeout=10, request_timeout=5)
    assert info.value.request == request_ and reason in info.value.reason, info.value
    assert info.value.status == status and info.value.connector == NAME


def test_a_refusal_carries_the_workers_message_and_at_most_the_start_of_a_page():
    page = b"<html><body>" + b"Internal error " * 1000 + b"</body></html>"
    with pytest.raises(ConnectError) as info:
        run(connect(**{"PUT /connectors/sink/stop": http(500, page, "text/html")}))
    assert (info.value.request, info.value.status) == ("PUT /connectors/sink/stop", 500)
    assert info.value.body.startswith("<html><body>Internal error") and len(info.value.body) < 400
    refusal = http(400, {"error_code": 400, "message": "Connectors must be in the STOPPED state"})
    with pytest.raises(ConnectError) as info:
        run(connect(**{"PATCH /connectors/sink/offsets": refusal}))
    assert (info.value.status, info.value.body) == (400, "Connectors must be in the STOPPED state")


BODY = json.dumps({"name": NAME, "config": {}, "tasks": [], "x": 1}).encode()


def test_a_trickled_answer_ends_at_the_request_timeout():
    assert len(BODY) == 51         # ~13 s at 4 bytes a second
    script = connect(**{"GET /connectors/sink": trickle(http(200, BODY))})
    started = time.monotonic()
    with pytest.raises(ConnectError) as info:
        run(script, timeout=2, request_timeout=1)
    took = time.monotonic() - started
    assert "within the request timeout of 1 s" in info.value.reason and info.value.request == "GET /connectors/sink"
    assert took < 2, f"the call took {took:.1f} s, past its timeout of 2 s"


def test_a_trickled_answer_ends_at_the_hand_offs_timeout():
    script = connect(**{"GET /connectors/sink/status": trickle(http(200, {"connector": {"state": "STOPPED"},
                                                                           "tasks": []}), body_only=False)})
    started = time.monotonic()
    with pytest.raises(ConnectError) as info:
        run(script, timeout=1.5, request_timeout=30)
    took = time.monotonic() - started
    assert "did not finish within its timeout of 1.5 s" in info.value.reason, info.value
    assert took < 2.5, f"the call took {took:.1f} s, past its timeout of 1.5 s"


def test_a_task_that_failed_after_resuming_fails_the_hand_off_with_its_trace():
    def script(method, path, calls):
        if (method, path) == ("GET", "/connectors/sink/status") and any(c[0] == "PATCH" for c in calls):
            return http(200, {"name": NAME, "connector": {"state": "RUNNING"}, "type": "sink", "tasks": [
                {"id": 0, "state": "RUNNING"}, {"id": 1, "state": "FAILED", "trace": TRACE}]})
        return connect()(method, path, calls)
    with pytest.raises(ConnectorFailedError) as info:
        run(script)
    assert info.value.reason == "task 1 FAILED after the connector was resumed"
    assert info.value.body == TRACE and TRACE in str(info.value)


def test_a_connector_that_never_runs_fails_the_hand_off_in_time():
    def script(method, path, calls):
        if (method, path) == ("GET", "/connectors/sink/status") and any(c[0] == "PATCH" for c in calls):
            return http(200, {"connector": {"state": "RUNNING"}, "tasks": [{"id": 0, "state": "UNASSIGNED"}]})
        return connect()(method, path, calls)
    with pytest.raises(ConnectorFailedError, match=r"not RUNNING within the hand-off's timeout of 2 s "
                                                   r"\(last seen: connector RUNNING, task 0 UNASSIGNED\)"):
        run(script, timeout=2)


def test_a_refused_repeat_says_the_worker_answered_and_resumes_the_connector():
    past = {"offsets": [{"partition": {"kafka_topic": "orders", "kafka_partition": 0}, "offset": {"kafka_offset": 90}},
                        {"partition": {"kafka_topic": "orders", "kafka_partition": 1}, "offset": {"kafka_offset": 17}}]}
    with FakeWorker(connect(**{"GET /connectors/sink/offsets": http(200, past)})) as worker:
        with pytest.raises(HandOffRefusedError) as info:
            hand_off(worker.url, NAME, POINTS)
    assert info.value.status == 200 and "(no answer)" not in str(info.value)
    assert "already past the hand-off point" in info.value.reason and "orders-0: H 41, group at 90" in info.value.reason
    assert ("PUT", "/connectors/sink/resume") in [c[:2] for c in worker.calls]
    assert "PATCH" not in [c[0] for c in worker.calls]


@pytest.mark.parametrize("points, refused", [
    # the group inside [start, H) on orders-0: the sink read records the backfill wrote
    ({("orders", 0): HandOff(10, 41), ("orders", 1): HandOff(0, 17)}, "orders-0: H 41, group at 30"),
    # bare H: the start is unknown, any group below H overlaps
    (POINTS, "orders-0: H 41, group at 30"),
])
def test_a_connector_whose_sink_read_below_the_hand_off_is_refused_and_left_stopped(points, refused):
    inside = {"offsets": [
        {"partition": {"kafka_topic": "orders", "kafka_partition": 0}, "offset": {"kafka_offset": 30}}]}
    with FakeWorker(connect(**{"GET /connectors/sink/offsets": http(200, inside)})) as worker:
        with pytest.raises(HandOffOverlapError) as info:
            hand_off(worker.url, NAME, points)
    assert refused in info.value.reason and "left STOPPED" in info.value.reason, info.value
    assert not isinstance(info.value, HandOffRefusedError)
    # neither set to H (its rows below H stay the sink's, in the table or its control topic) nor resumed
    assert [c[:2] for c in worker.calls if c[0] != "GET"] == [("PUT", "/connectors/sink/stop")]


def test_a_group_at_or_below_the_backfills_start_is_set_to_h():
    at_start = {"offsets": [
        {"partition": {"kafka_topic": "orders", "kafka_partition": 0}, "offset": {"kafka_offset": 10}}]}

    def script(method, path, calls):
        if (method, path) == ("GET", "/connectors/sink/offsets") and not any(c[0] == "PATCH" for c in calls):
            return http(200, at_start)      # the sink read nothing the backfill wrote
        return connect()(method, path, calls)
    with FakeWorker(script) as worker:
        body = hand_off(worker.url, NAME, {("orders", 0): HandOff(10, 41), ("orders", 1): HandOff(0, 17)})
    assert body == SET
    assert [c[:2] for c in worker.calls if c[0] != "GET"] == [
        ("PUT", "/connectors/sink/stop"), ("PATCH", "/connectors/sink/offsets"), ("PUT", "/connectors/sink/resume")]


def _failed_task(method, path, calls):
    if (method, path) == ("GET", "/connectors/sink/status") and any(c[0] == "PATCH" for c in calls):
        return http(200, {"connector": {"state": "RUNNING"}, "tasks": [{"id": 0, "state": "FAILED", "trace": TRACE}]})
    return connect()(method, path, calls)


PAST = {"offsets": [{"partition": {"kafka_topic": "orders", "kafka_partition": 0}, "offset": {"kafka_offset": 12}}]}
INSIDE = {"offsets": [{"partition": {"kafka_topic": "orders", "kafka_partition": 0}, "offset": {"kafka_offset": 5}}]}


@pytest.mark.parametrize("script, says, not_says", [
    (connect(**{"GET /connectors/sink/offsets": http(200, PAST)}),
     ["already past the hand-off point", "orders-0: H 7, group at 12", "(HTTP 200)", "nothing to run again"],
     ["(no answer)", "run the same command again"]),
    (connect(**{"GET /connectors/sink/offsets": http(200, INSIDE)}),
     ["below the hand-off point", "orders-0: H 7, group at 5", "left STOPPED", "roll the table back"],
     ["nothing to run again", "run the same command again"]),
    (_failed_task, ["task 0 FAILED", "NoClassDefFoundError", "restart its failed tasks",
                    "/connectors/sink/restart?includeTasks=true&onlyFailed=true"], ["run the same command again"]),
    (connect(), ["connector sink: offsets set to H on 1 partition(s), resumed, its tasks RUNNING"],
     ["kafkarec backfill:"]),
])
def test_the_command_says_what_happened_and_what_to_do(tmp_path, capfd, script, says, not_says):
    pytest.importorskip("deltalake")
    from kafkarec.cli.main import main
    from support.logs.lakehouse_logs import write_partition
    log = str(tmp_path / "log")
    write_partition(log, "orders", 0, [("plain", 3), ("data", 7, 2), ("commit", 7), ("plain", 1)])
    with FakeWorker(script) as worker:
        status = main(["backfill", log, "--delta", str(tmp_path / "delta"), "--layout", "kafka-delta-ingest",
                       "--app-id", "ingest", "--connect-url", worker.url, "--connector", NAME])
    err = capfd.readouterr().err
    assert status == (0 if script is not _failed_task and "resumed" in says[0] else 1), err
    # the log start's note (no --bootstrap here) is not what this test is about
    said = "\n".join(line for line in err.splitlines() if not line.startswith("kafkarec backfill: note:"))
    assert all(s in said for s in says) and not any(s in said for s in not_says), err
