"""A live registry's answers read as checked types (issue 78, finding 49 and "every network answer
bounded"): ``registry.load(URL)`` against a registry port that lies in one answer
(tests/support/registry/lying_registry.py) raises one RegistryError line naming the call, the member
and its value -- never a raw ValueError, TypeError, OverflowError, http.client exception or
RecursionError -- and a trickled answer ends at the call's timeout, not one timeout per byte later."""
from __future__ import annotations

import time

import pytest

import kafkarec.registry as kr
from kafkarec.registry import _sources
from support.registry.lying_registry import LyingRegistry, answer, trickle

VERSIONS = "GET /subjects/orders-value/versions"
VERSION = "GET /subjects/orders-value/versions/1"


def load(overrides, **kw):
    with LyingRegistry(overrides) as reg:
        return kr.read_http(reg.url, refresh=True, **kw), reg.url


def test_a_registry_that_answers_well_is_read():
    got, _ = load({})
    assert got.get("orders-value").id == 1 and got.subjects() == ["orders-value"] and not got.problems


@pytest.mark.parametrize("call, body, says", [
    # GET /subjects/S/versions: versions are int32 numbers from 1 (finding 49: int(v) unchecked)
    (VERSIONS, b'["x"]', '$[0] = "x": Expected `int`, got `str`'),
    (VERSIONS, b"[[1]]", "$[0] = [1]: Expected `int`, got `array`"),
    (VERSIONS, b"[1e400]", "$[0] = 1e400: Number out of range"),
    (VERSIONS, b"[true]", "$[0] = true: Expected `int`, got `bool`"),
    (VERSIONS, b"[0]", "$[0] = 0: Expected `int` >= 1"),
    (VERSIONS, b"[2147483648]", "$[0] = 2147483648: Expected `int` <= 2147483647"),
    (VERSIONS, b'{"versions": [1]}', "$ = {\"versions\": [1]}: Expected `array`, got `object`"),
    # the subjects list and the contexts: strings
    ("GET /subjects", b'["orders-value", 7]', "$[1] = 7: Expected `str`, got `int`"),
    ("GET /contexts", b"[null]", "$[0] = null: Expected `str`, got `null`"),
    # each version object: id an int32 >= 0, version >= 1, schema text, deleted a boolean
    (VERSION, b'{"subject": "orders-value", "version": 1, "id": "7", "schema": "\\"string\\""}',
     '$.id = "7": Expected `int`, got `str`'),
    (VERSION, b'{"subject": "orders-value", "version": 1, "id": -5, "schema": "\\"string\\""}',
     "$.id = -5: Expected `int` >= 0"),
    (VERSION, b'{"subject": "orders-value", "version": 1, "id": 2147483648, "schema": "\\"string\\""}',
     "$.id = 2147483648: Expected `int` <= 2147483647"),
    (VERSION, b'{"subject": "orders-value", "version": true, "id": 1, "schema": "\\"string\\""}',
     "$.version = true: Expected `int`, got `bool`"),
    (VERSION, b'{"subject": "orders-value", "version": 1, "schema": "\\"string\\""}',
     "$.id is missing (in {\"subject\": \"orders-value\", \"version\": 1, \"schema\": \"\\\"strin...)"),
    (VERSION, b'{"subject": "orders-value", "version": 1, "id": 1, "schema": 5}',
     "$.schema = 5: Expected `str`, got `int`"),
    (VERSION, b'{"subject": "orders-value", "version": 1, "id": 1, "schema": "\\"string\\"", "deleted": "no"}',
     '$.deleted = "no": Expected `bool | null`, got `str`'),
    # not JSON; nested past what a decoder follows (a RecursionError inside, a RegistryError out)
    (VERSION, b"{nope", "the answer is not JSON"),
    (VERSION, b'{"id": 1, "version": 1, "schema": "x", "metadata": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
     "the answer nests deeper than kafkarec reads"),
], ids=["str", "list", "1e400", "bool", "zero", "2^31", "object", "subject-int", "context-null", "id-str", "id-neg",
        "id-2^31", "version-bool", "id-missing", "schema-int", "deleted-str", "not-json", "deep"])
def test_a_wrong_answer_is_one_registry_error_naming_the_call_member_and_value(call, body, says):
    with LyingRegistry({call: answer(200, body)}) as reg:
        with pytest.raises(kr.RegistryError) as info:
            kr.read_http(reg.url, refresh=True)
    message = str(info.value)
    method, path = call.split(" ")
    assert message.startswith(f"{method} {reg.url}{path}"), message
    assert says in message and "\n" not in message, message


@pytest.mark.parametrize("reply, says", [
    (b"SSH-2.0-OpenSSH_9.6\r\n", "the answer is not HTTP (BadStatusLine"),
    (b"", "the connection closed without an answer"),
    (answer(200, b"[1]", length=51), "the answer was cut short: 3 of 51 bytes"),
    (answer(200, b"[1]", length=1 << 40), "more than the"),
], ids=["not-http", "closed", "cut-short", "too-large"])
def test_a_broken_answer_is_a_registry_error(reply, says):
    with LyingRegistry({VERSIONS: reply}) as reg:
        with pytest.raises(kr.RegistryError) as info:
            kr.read_http(reg.url, refresh=True, timeout=5)
    assert str(info.value).startswith(f"GET {reg.url}/subjects/orders-value/versions") and says in str(info.value), \
        info.value


def test_a_trickled_answer_ends_at_the_calls_timeout():
    """Finding 48: urllib's timeout bounds each socket read, so an answer of 90 bytes trickled one
    every 0.3 s ran ~29 s against a 1 s timeout; the call's whole time is bounded now."""
    started = time.monotonic()
    with LyingRegistry({VERSIONS: trickle(answer(200, [1] * 30))}) as reg:
        with pytest.raises(kr.RegistryError) as info:
            kr.read_http(reg.url, refresh=True, timeout=1)
        took = time.monotonic() - started
    assert "no answer within the timeout of 1 s" in str(info.value), info.value
    assert took < 4, f"the call took {took:.1f} s against a timeout of 1 s"


def test_the_one_decode_gives_types_or_a_registry_error():
    assert _sources.decode_answer("GET x", b"[1, 2147483647]", _sources.List[_sources.Version]) == [1, 2147483647]
    assert _sources.decode_answer("POST x", b'{"id": 0, "more": [1]}', _sources.RegisterSchemaResponse).id == 0
    for body in (b'{"id": true}', b'{"id": 7.0}', b'{"id": null}', b"", b"\xff", b'{"id": 1} x'):
        with pytest.raises(kr.RegistryError, match="^POST x: "):
            _sources.decode_answer("POST x", body, _sources.RegisterSchemaResponse)
