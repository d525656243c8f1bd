import subprocess
import sys

import pytest

# Prefect imported at collection: its console handler keeps the real stderr, not a test's capture
import cli.run_flow  # noqa: F401
from conftest import ROOT
from cli import main


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "flows/mobilemem.py", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


def test_help_documents_every_flag():
    result = _run("--help")
    assert result.returncode == 0
    for flag in ("--dataset", "--output", "--model", "--user-concurrency", "--query-concurrency", "--config",
                 "--users", "--limit-questions", "--simulate", "--candidate", "--reuse", "--workers"):
        assert flag in result.stdout


def test_help_lists_every_command_in_one_line_each_before_the_run_flags():
    lines = _run("--help").stdout.splitlines()
    start = lines.index("commands:")
    listed = [line.split()[0] for line in lines[start + 1:start + 7]]
    assert listed == ["run", "summarize", "plan", "rejudge", "report", "compare"]
    assert lines[start + 7] == ""  # one line each, nothing wrapped
    assert lines[start + 2].startswith("  summarize  RUN_DIR: recompute summary.json")
    assert lines.index("options:") > start + 7 and "  --dataset DATASET" in "\n".join(lines[lines.index("options:"):])


def test_run_may_be_named(sample_root, tmp_path, capsys):
    assert main(["run", "--dataset", str(sample_root), "--output", str(tmp_path), "--users", "0,77", "--simulate"]) == 1
    assert capsys.readouterr().err == "mobilemem: refused to start: the dataset cannot be evaluated: 1 problem\n" \
                                      "--users: user 77 is not in data.jsonl\n"


def test_broken_dataset_lists_problems_and_exits_1_without_traceback(sample_copy, tmp_path):
    """Preflight refuses before any model request and writes nothing."""
    with (sample_copy / "data.jsonl").open("a") as handle:
        handle.write("{not json\n")
    (sample_copy / "image" / "uid2" / "camera_photos" / "2_event_1_1.png").write_bytes(b"junk")
    result = _run("--dataset", str(sample_copy), "--output", str(tmp_path / "out"), "--simulate")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stderr.splitlines()
    assert lines[0] == "mobilemem: refused to start: the dataset cannot be evaluated: 2 problems"
    assert lines[1].startswith("data.jsonl:4: not valid JSON")
    assert lines[2].startswith("data.jsonl:3 user 2 session 2_1 turn 3: image 'image/uid2/camera photos/2_event_1_1.png'")
    assert not (tmp_path / "out").exists()


def test_bad_config_refuses_naming_the_key(sample_root, tmp_path, capsys):
    config = tmp_path / "c.yaml"
    config.write_text("candidate:\n  max_iter: 3\n")
    assert main(["--dataset", str(sample_root), "--output", str(tmp_path), "--config", str(config), "--simulate"]) == 1
    assert f"{config}: candidate.max_iter: unknown key" in capsys.readouterr().err


def test_unknown_user_refuses(sample_root, tmp_path, capsys):
    assert main(["--dataset", str(sample_root), "--output", str(tmp_path), "--users", "0,77", "--simulate"]) == 1
    assert "--users: user 77 is not in data.jsonl" in capsys.readouterr().err


@pytest.mark.parametrize("flag", [["--users", "a,b"], ["--query-concurrency", "0"], ["--limit-questions", "-1"]])
def test_bad_flags_exit_1_in_one_line_naming_the_flag(flag, tmp_path):
    result = _run("--dataset", str(tmp_path), "--output", str(tmp_path), *flag)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    [line] = result.stderr.splitlines()
    assert f"argument {flag[0]}" in line


def test_not_a_dataset_folder(tmp_path, capsys):
    assert main(["--dataset", str(tmp_path), "--output", str(tmp_path), "--simulate"]) == 1
    assert "no data.jsonl and questions.jsonl here or under omni/" in capsys.readouterr().err


@pytest.mark.parametrize("case", ["not_a_directory", "read_only", "concurrent"])
def test_an_output_that_cannot_be_used_is_refused_in_one_line_before_anything_starts(sample_root, tmp_path, capsys,
                                                                                  case):
    output = tmp_path / "out"
    if case == "not_a_directory":
        output.write_text("a file")
    if case == "read_only":
        output = "/proc/self/mobilemem-out"  # a read-only filesystem (root ignores permission bits)
    if case == "concurrent":  # another process is starting a run into the same directory
        claim = output / "mobilemem" / "qwen3.8-max" / ".claim"
        claim.parent.mkdir(parents=True)
        claim.write_text("4242")
    assert main(["--dataset", str(sample_root), "--output", str(output), "--simulate"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("mobilemem: refused to start: ") and "Traceback" not in err
    assert {"not_a_directory": "is not a directory", "read_only": "cannot create the run directory",
            "concurrent": "another run (pid 4242)"}[case] in err


@pytest.mark.parametrize("args", [("--dataset",), ("--dataset", "x", "--output", "y", "--users", "a"),
                                  ("--bogus",), ("report",), ("compare", "only-one"), ("plan",),
                                  ("rejudge", "x"), ("summarize",)])
def test_a_usage_error_is_one_line_and_exit_1(args):
    result = _run(*args)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith("mobilemem: flows/mobilemem.py") and line.endswith("(see --help)")


def test_an_embedded_server_that_does_not_start_is_one_line(sample_root, tmp_path):
    import os

    env = {**os.environ, "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "0",
           "PREFECT_HOME": str(tmp_path / "prefect")}
    env.pop("PREFECT_API_URL", None)
    result = subprocess.run([sys.executable, "flows/mobilemem.py", "--dataset", str(sample_root), "--output",
                             str(tmp_path / "out"), "--simulate"], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith("mobilemem: the run could not start: Prefect's embedded API server did not start "
                           "within 0 s") and "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS" in line
    assert not (tmp_path / "out" / "mobilemem" / "qwen3.8-max").exists()
