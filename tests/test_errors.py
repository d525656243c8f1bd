import base64
import json

import pytest

from mobilemem.errors import DatasetError, error_record, register_secret, sanitize

KEY = "sk-test-PLANTED0123456789abcdef"


def test_sanitize_scrubs_every_credential_shape():
    register_secret("my-plain-secret-value")
    payload = base64.b64encode(bytes(range(256)) * 4).decode()
    text = (
        f"Error code: 401 - incorrect API key provided: {KEY}. headers={{'Authorization': 'Bearer {KEY}'}} "
        f"url=https://user:pa55word@api.example.test/v1 api_key={KEY} x-api-key: abc123secret "
        f"auth=Basic dXNlcjpwYTU1d29yZA== "
        f"image=data:image/png;base64,{payload} raw={payload} env my-plain-secret-value"
    )
    clean = sanitize(text)
    for secret in (KEY, "pa55word", "abc123secret", payload[:60], "my-plain-secret-value", "user:",
                   "dXNlcjpwYTU1d29yZA"):
        assert secret not in clean
    assert "Error code: 401" in clean
    assert "api.example.test/v1" in clean


def test_sanitize_cuts_long_reasons():
    assert len(sanitize("x " * 10_000)) < 2_100


def _raise_with_secret():
    secret_local = KEY  # noqa: F841 - frame locals must never be recorded
    try:
        raise ConnectionError(f"connect failed Authorization: Bearer {KEY}")
    except ConnectionError as exc:
        raise RuntimeError("model call failed") from exc


def test_error_record_has_stage_ids_frames_and_no_secret():
    with pytest.raises(RuntimeError) as info:
        _raise_with_secret()
    line = error_record(info.value, stage="answer", user_id=3, question_id="3_q_1",
                        image_paths=["image/uid3/a.png"])
    dumped = line.model_dump_json()
    assert KEY not in dumped
    assert line.stage == "answer" and line.user_id == 3 and line.question_id == "3_q_1"
    assert line.error_type == "RuntimeError"
    assert "ConnectionError" in line.reason  # the cause chain is kept
    assert any(frame.function == "_raise_with_secret" for frame in line.frames)
    assert "secret_local" not in dumped
    assert json.loads(dumped)["image_paths"] == ["image/uid3/a.png"]


def test_dataset_error_lists_every_problem():
    exc = DatasetError(["a.jsonl:1: one", "a.jsonl:2: two"])
    assert str(exc).splitlines() == ["the dataset cannot be evaluated: 2 problems", "a.jsonl:1: one", "a.jsonl:2: two"]
