"""The failure vocabulary is closed (issue 23): every exception class the model libraries export has
its kind pinned here, the way httpx pins its exception map, and no code names a failure kind with a
string of its own instead of a `FailureKind`."""

import ast
import asyncio
import inspect
import json

import httpx
import openai
import pytest

from conftest import ROOT
from mobilemem.failure_kinds import FailureKind, failure_kinds, failure_label, kind_of

K = FailureKind
PINNED: dict[type[BaseException], FailureKind] = {
    asyncio.CancelledError: K.CANCELLED,
    json.JSONDecodeError: K.MALFORMED,
    # httpx
    httpx.HTTPError: K.EXCEPTION, httpx.RequestError: K.EXCEPTION, httpx.HTTPStatusError: K.EXCEPTION,
    httpx.TransportError: K.CONNECTION, httpx.TimeoutException: K.TIMEOUT, httpx.ConnectTimeout: K.TIMEOUT,
    httpx.ReadTimeout: K.TIMEOUT, httpx.WriteTimeout: K.TIMEOUT, httpx.PoolTimeout: K.TIMEOUT,
    httpx.NetworkError: K.CONNECTION, httpx.ConnectError: K.CONNECTION, httpx.ReadError: K.CONNECTION,
    httpx.WriteError: K.CONNECTION, httpx.CloseError: K.CONNECTION, httpx.ProtocolError: K.CONNECTION,
    httpx.LocalProtocolError: K.CONNECTION, httpx.RemoteProtocolError: K.CONNECTION,
    httpx.ProxyError: K.CONNECTION, httpx.UnsupportedProtocol: K.CONNECTION, httpx.DecodingError: K.EXCEPTION,
    httpx.TooManyRedirects: K.EXCEPTION, httpx.InvalidURL: K.EXCEPTION, httpx.CookieConflict: K.EXCEPTION,
    httpx.StreamError: K.EXCEPTION, httpx.StreamConsumed: K.EXCEPTION, httpx.StreamClosed: K.EXCEPTION,
    httpx.ResponseNotRead: K.EXCEPTION, httpx.RequestNotRead: K.EXCEPTION,
    # openai
    openai.OpenAIError: K.EXCEPTION, openai.APIError: K.EXCEPTION, openai.APIStatusError: K.HTTP_STATUS,
    openai.APIConnectionError: K.CONNECTION, openai.APITimeoutError: K.TIMEOUT,
    openai.APIResponseValidationError: K.MALFORMED, openai.BadRequestError: K.HTTP_STATUS,
    openai.AuthenticationError: K.HTTP_STATUS, openai.PermissionDeniedError: K.HTTP_STATUS,
    openai.NotFoundError: K.HTTP_STATUS, openai.ConflictError: K.HTTP_STATUS,
    openai.UnprocessableEntityError: K.HTTP_STATUS, openai.RateLimitError: K.HTTP_STATUS,
    openai.InternalServerError: K.HTTP_STATUS, openai.OAuthError: K.HTTP_STATUS,
    openai.ContentFilterFinishReasonError: K.EXCEPTION, openai.LengthFinishReasonError: K.EXCEPTION,
    openai.InvalidWebhookSignatureError: K.EXCEPTION, openai.WebSocketConnectionClosedError: K.EXCEPTION,
    openai.WebSocketQueueFullError: K.EXCEPTION,
}
# the keywords that carry a failure's kind or category (and Failure.of_label's label)
KIND_KEYWORDS = {"error_kind", "failure", "error_type", "gap", "kind"}
APPLICATION = ["flows", "lifecycle", "tasks", "plugins/mobilemem/src/mobilemem", "plugins/mobilemem-judge/src"]


def _exported(module) -> set[type[BaseException]]:
    values = [getattr(module, name) for name in dir(module) if not name.startswith("_")]
    return {value for value in values if inspect.isclass(value) and issubclass(value, BaseException)}


@pytest.mark.parametrize("module", [httpx, openai], ids=lambda m: m.__name__)
def test_every_exported_exception_class_has_its_kind_pinned(module):
    unpinned = sorted(cls.__name__ for cls in _exported(module) - set(PINNED) if cls.__module__.startswith(
        module.__name__))
    assert unpinned == [], f"{module.__name__} exports exception classes whose failure kind nobody decided"


def test_the_table_gives_each_pinned_class_its_kind():
    assert {cls: kind_of(cls) for cls in PINNED} == PINNED
    assert {cls for cls, _ in failure_kinds()} <= set(PINNED)


def test_labels_keep_the_gap_categories():
    request = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")
    status = openai.InternalServerError("boom", response=httpx.Response(500, request=request), body=None)
    assert failure_label(status) == "HTTP 500"
    assert failure_label(OSError("disk full")) == "OSError"
    assert failure_label(httpx.ReadTimeout("slow")) == "timeout"
    assert failure_label(openai.APITimeoutError(request=request)) == "timeout"
    assert failure_label(httpx.ConnectError("refused")) == "connection error"
    assert failure_label(json.JSONDecodeError("x", "doc", 0)) == "malformed response"


def _kind_literals():
    for folder in APPLICATION:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "simulator" in path.parts:  # its fault rules' `kind` is the simulator's own vocabulary
                continue
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.keyword) and node.arg in KIND_KEYWORDS:
                    value, name = node.value, node.arg
                elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "of_label" and node.args:
                    value, name = node.args[0], "Failure.of_label"
                else:
                    continue
                for branch in (value.body, value.orelse) if isinstance(value, ast.IfExp) else (value,):
                    if isinstance(branch, ast.Constant) and isinstance(branch.value, str):
                        yield f"{path.relative_to(ROOT)}:{branch.lineno} {name}({branch.value!r})"


def test_no_failure_kind_is_spelled_as_a_string():
    assert list(_kind_literals()) == []
