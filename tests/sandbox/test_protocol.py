"""The tool server's protocol (sandbox/toolserver/ts_protocol.py): one request type and one result type per op,
arguments checked against the request's fields before anything runs, and the host's result models holding the
same fields as the protocol's results."""

from __future__ import annotations

import pytest

from sandbox import base
from sandbox.toolserver import ts_protocol as wire


def test_every_op_has_one_request_and_one_result_type():
    assert sorted(wire.REQUESTS) == ["delete", "exec", "glob", "grep", "list", "ping", "read", "write"]
    for op, request in wire.REQUESTS.items():
        assert request.OP == op and issubclass(request.RESULT, wire.Message) and request.RESULT is not wire.Message
        assert set(request.__slots__) == {name for name, _, _ in request.FIELDS}


@pytest.mark.parametrize(("op", "args", "message"), [
    ("read", {}, "missing required argument 'path'"),
    ("read", {"path": 3}, "argument 'path' must be a string, got int"),
    ("write", {"path": "a", "text": "x", "create_dirs": "yes"}, "'create_dirs' must be a boolean, got str"),
    ("glob", {"pattern": "*", "max_results": True}, "'max_results' must be an integer, got a boolean"),
    ("exec", {"cmd": {"a": 1}}, "'cmd' must be a list or a string, got dict"),
    ("exec", {"cmd": "ls", "timeout_s": "5"}, "'timeout_s' must be a number, got str"),
    ("read", {"path": "a", "offset": 1}, "unknown argument(s) 'offset' for Read; known: path"),
    ("read", [], "request field 'args' must be an object"),
])
def test_arguments_that_do_not_fit_are_refused(op, args, message):
    with pytest.raises(wire.ProtocolError) as caught:
        wire.REQUESTS[op].parse(args)
    assert str(caught.value).endswith(message)


def test_null_is_the_default_and_defaults_are_not_shared():
    grep = wire.Grep.parse({"pattern": "x", "glob": None, "max_results": None})
    assert (grep.glob, grep.max_results, grep.path) == (None, 200, ".")
    one, two = wire.Exec(cmd="ls"), wire.Exec(cmd="ls")
    one.env["A"] = "1"
    assert two.env == {} and wire.Exec.parse({"cmd": ["ls"], "timeout_s": 5}).timeout_s == 5
    assert wire.Write.parse(wire.Write(path="a", text="b").wire()) == wire.Write(path="a", text="b")
    assert repr(wire.Read(path="x")) == "Read(path='x')"


@pytest.mark.parametrize(("result", "model"), [
    (wire.ReadResult, base.FileText), (wire.DeleteResult, base.Deleted), (wire.ListResult, base.Listing),
    (wire.GlobResult, base.GlobResult), (wire.GrepResult, base.GrepResult), (wire.ExecResult, base.ExecResult),
])
def test_the_hosts_result_models_have_the_protocols_fields(result, model):
    assert [name for name, _, _ in result.FIELDS] == list(model.model_fields)
