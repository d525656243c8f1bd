import subprocess
import sys

import pytest

from conftest import ROOT
from flows.mobilemem import main


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "flows/mobilemem.py", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


def test_script_prints_the_plan_without_writing(sample_root, tmp_path):
    result = _run("--dataset", str(sample_root), "--output", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    assert "scheduled 3 of 3 users, 12 sessions, 24 images, 9 visual_reasoning questions" in result.stdout
    assert not (tmp_path / "out").exists()


def test_broken_dataset_lists_problems_and_exits_1_without_traceback(sample_copy, tmp_path):
    with (sample_copy / "data.jsonl").open("a") as handle:
        handle.write("{not json\n")
    (sample_copy / "image" / "uid2" / "camera_photos" / "2_event_1_1.png").write_bytes(b"junk")
    result = _run("--dataset", str(sample_copy), "--output", str(tmp_path / "out"))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stderr.splitlines()
    assert lines[0] == "mobilemem: refused to start: the dataset cannot be evaluated: 2 problems"
    assert lines[1].startswith("data.jsonl:4: not valid JSON")
    assert lines[2].startswith("data.jsonl:3 user 2 session 2_1 turn 3: image 'image/uid2/camera photos/2_event_1_1.png'")


def test_module_form_and_flags(sample_root, tmp_path, capsys):
    assert main(["--dataset", str(sample_root), "--output", str(tmp_path), "--users", "2",
                 "--limit-questions", "1", "--model", "org/m:1", "--query-concurrency", "3"]) == 0
    out = capsys.readouterr().out
    assert "scheduled 1 of 3 users" in out and "1 visual_reasoning questions" in out
    assert f"{tmp_path}/mobilemem/org_m_1" in out


def test_bad_config_refuses_naming_the_key(sample_root, tmp_path, capsys):
    config = tmp_path / "c.yaml"
    config.write_text("candidate:\n  max_iter: 3\n")
    assert main(["--dataset", str(sample_root), "--output", str(tmp_path), "--config", str(config)]) == 1
    assert f"{config}: candidate.max_iter: unknown key" in capsys.readouterr().err


def test_unknown_user_refuses(sample_root, tmp_path, capsys):
    assert main(["--dataset", str(sample_root), "--output", str(tmp_path), "--users", "0,77"]) == 1
    assert "--users: user 77 is not in data.jsonl" in capsys.readouterr().err


@pytest.mark.parametrize("flag", [["--users", "a,b"], ["--query-concurrency", "0"], ["--limit-questions", "-1"]])
def test_bad_flags_exit_2_with_usage(flag, tmp_path):
    result = _run("--dataset", str(tmp_path), "--output", str(tmp_path), *flag)
    assert result.returncode == 2 and "usage:" in result.stderr and "Traceback" not in result.stderr


def test_not_a_dataset_folder(tmp_path, capsys):
    assert main(["--dataset", str(tmp_path), "--output", str(tmp_path)]) == 1
    assert "no data.jsonl and questions.jsonl here or under omni/" in capsys.readouterr().err
