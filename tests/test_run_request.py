"""The one `RunRequest` (DESIGN §6): what the user asked for round-trips, as run.json stores it, and an
older run.json's `args` dict still reads as one."""

from pathlib import Path

import pytest
from pydantic import ValidationError

from mobilemem.records import RunRequest
from lifecycle import run_plan
from cli.rejudge import rejudge_request

OLDER_ARGS = {"dataset": "/data/MobileMem-Omni", "output": "runs", "model": "qwen3.8-max", "user_concurrency": None,
              "query_concurrency": 8, "config": None, "users": [0, 3], "limit_questions": 2, "simulate": True,
              "reuse": ["runs/a"], "rejudge": None, "judge_model": None, "candidate": None}


def test_a_request_round_trips_through_json_and_python():
    request = RunRequest(dataset=Path("d"), output=Path("o"), model="m", users=[1, 2], reuse=[Path("r1"), Path("r2")],
                         config=Path("c.yaml"), rejudge=Path("e"), judge_model="j", candidate="bm25-rag",
                         simulate=True, limit_questions=3, user_concurrency=2, query_concurrency=5)
    assert RunRequest.model_validate_json(request.model_dump_json()) == request
    assert RunRequest.model_validate(request.model_dump()) == request
    assert RunRequest.model_validate(request.model_dump(mode="json")) == request
    assert hash(RunRequest.model_validate(request.model_dump())) == hash(request)  # the flow finds the CLI's plan


def test_an_older_run_json_args_dict_reads_as_a_request():
    request = RunRequest.model_validate(OLDER_ARGS)
    assert request.users == (0, 3) and request.reuse == (Path("runs/a"),) and request.query_concurrency == 8
    # written back in the same shape, with the fields added since at their defaults
    assert request.model_dump(mode="json") == {**OLDER_ARGS, "workers": None, "endpoint_limit": None, "endpoint_key": None}


def test_the_flows_parameters_with_their_defaults_read_as_a_request():
    """What a deployment's flow run holds (`flow_run.parameters`, every default filled in)."""
    defaults = {name: None for name in ("model", "user_concurrency", "query_concurrency", "config", "users",
                                        "limit_questions", "reuse", "rejudge", "judge_model", "candidate")}
    request = RunRequest.model_validate({**defaults, "dataset": "examples/sample", "output": "runs", "simulate": True})
    assert request == RunRequest(dataset=Path("examples/sample"), output=Path("runs"), simulate=True)


def test_an_unknown_field_is_refused():
    with pytest.raises(ValidationError):
        RunRequest.model_validate({**OLDER_ARGS, "surprise": 1})


def test_the_flags_override_the_configuration():
    request = RunRequest(dataset=Path("d"), output=Path("o"), model="m", judge_model="j", candidate="no-memory",
                         endpoint_limit=3, endpoint_key="shared")
    assert run_plan.overrides(request) == {"model": "m", "user_concurrency": None, "query_concurrency": None,
                                            "judge": {"model": "j"}, "candidate": {"kind": "no-memory"},
                                            "endpoint_limit": 3, "endpoint_name": "shared"}


def test_a_rejudge_request_takes_the_earlier_runs_selection(tmp_path, capsys):
    assert rejudge_request([str(tmp_path / "missing"), "--output", str(tmp_path)]) == 1
    assert "refused to start: rejudge" in capsys.readouterr().err
