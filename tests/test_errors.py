import asyncio
import base64
import json

import pytest

from conftest import ROOT
from mobilemem.errors import DatasetError, caller_frames, code_location, error_record, register_secret, sanitize

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
    assert line.failure.label == "RuntimeError" and line.failure.kind == "exception"
    assert "ConnectionError" in line.failure.message  # the cause chain is kept
    assert any(frame.function == "_raise_with_secret" for frame in line.failure.frames)
    assert "secret_local" not in dumped
    assert json.loads(dumped)["image_paths"] == ["image/uid3/a.png"]


def test_dataset_error_lists_every_problem():
    exc = DatasetError(["a.jsonl:1: one", "a.jsonl:2: two"])
    assert str(exc).splitlines() == ["the dataset cannot be evaluated: 2 problems", "a.jsonl:1: one", "a.jsonl:2: two"]


def test_frames_name_repository_files_relative_to_the_checkout_and_libraries_relative_to_site_packages():
    with pytest.raises(RuntimeError) as info:
        _raise_with_secret()
    files = {frame.function: frame.file for frame in error_record(info.value, stage="answer").failure.frames}
    assert files["_raise_with_secret"] == "tests/test_errors.py"  # not just the file name
    assert code_location(str(ROOT / "tasks" / "answer.py")) == ("tasks/answer.py", True)
    assert code_location(str(ROOT / "plugins/mobilemem/src/mobilemem/reme/answer.py")) == (
        "plugins/mobilemem/src/mobilemem/reme/answer.py", True)
    assert code_location("/opt/venv/lib/python3.11/site-packages/openai/_base_client.py") == (
        "openai/_base_client.py", False)
    # an install without the checkout: the project's packages are still its own code
    assert code_location("/opt/venv/lib/python3.11/site-packages/mobilemem/reme/answer.py") == (
        "mobilemem/reme/answer.py", True)
    assert code_location(asyncio.__file__) == ("asyncio/__init__.py", False)
    assert code_location("/home/someone/elsewhere/script.py") == ("script.py", False)


def _runner_code_asking():
    return caller_frames()


def test_caller_frames_are_the_runners_part_of_the_stack_outermost_first():
    frames = _runner_code_asking()
    assert frames[-1] == ("tests/test_errors.py", frames[-1][1], "_runner_code_asking")
    assert frames[-2][2] == "test_caller_frames_are_the_runners_part_of_the_stack_outermost_first"
    assert all(not file.startswith(("/", "_pytest", "pluggy")) for file, _, _ in frames)  # pytest's frames dropped
