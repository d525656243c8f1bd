"""Property (issue 22): any single-file corruption of an earlier run E (truncated at a random offset,
or one byte flipped) never makes a command that reads E raise, prints a traceback, or changes E;
and what the corruption reached is never counted as if it were intact."""

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from damage import copy_run, snapshot
from e2e.runs import summary
from flows.mobilemem import main
from mobilemem.records import AnswerResponseFile, JudgmentFile, MetricsFile
from mobilemem.rundir import RunDir

pytestmark = pytest.mark.slow
EXAMPLES = settings(max_examples=int(os.environ.get("MOBILEMEM_DAMAGE_EXAMPLES", "20")), deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
COMMAND_EXITS = {"summarize": {0, 1}, "report": {0, 1}, "compare": {0, 1}}
SCORED_RECORDS = {"answer-response.json": AnswerResponseFile, "judgment.json": JudgmentFile,
                  "metrics.json": MetricsFile}


def corruptions():
    """(a record of the runner or any file, index of the file, truncate or flip, a position as a
    fraction of the file): the workspace holds most files, so records are drawn half of the time."""
    return st.tuples(st.booleans(), st.integers(min_value=0), st.sampled_from(["truncate", "flip"]),
                     st.floats(min_value=0, max_value=1, exclude_max=True))


def corrupt(root: Path, choice: tuple[bool, int, str, float]) -> Path:
    records_only, index, how, where = choice
    files = sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink() and p.stat().st_size
                   and not (records_only and "workspace" in p.relative_to(root).parts))
    path = files[index % len(files)]
    data = bytearray(path.read_bytes())
    offset = int(where * len(data))
    if how == "truncate":
        del data[offset:]
    else:
        data[offset] ^= 0xFF
    path.write_bytes(bytes(data))
    return path


@pytest.fixture(scope="module")
def pristine(baseline_run, tmp_path_factory) -> RunDir:
    """A copy of the CLI's fault-free sample run, with its summary and report as the CLI wrote them."""
    code, run, _, _ = baseline_run
    assert code == 0
    return RunDir(copy_run(run.root, tmp_path_factory.mktemp("pristine") / "E"))


@EXAMPLES
@given(choice=corruptions())
def test_summarize_report_and_compare_survive_any_single_file_corruption(pristine, choice, capsys):
    with tempfile.TemporaryDirectory() as scratch:
        earlier = RunDir(copy_run(pristine.root, Path(scratch) / "E"))
        damaged = corrupt(earlier.root, choice)
        name = damaged.relative_to(earlier.root).as_posix()
        for command in ("summarize", "report"):
            code = main([command, str(earlier.root)])
            err = capsys.readouterr().err
            assert code in COMMAND_EXITS[command], (name, command, err)
            assert all(line.startswith("mobilemem: ") for line in err.splitlines()), (name, command, err)
        before = snapshot(earlier.root)  # summarize and report write into their run; compare does not
        code = main(["compare", str(pristine.root), str(earlier.root), "--out", scratch])
        err = capsys.readouterr().err
        assert snapshot(earlier.root) == before
        assert code in COMMAND_EXITS["compare"] and all(line.startswith("mobilemem: ") for line in err.splitlines())
        if name == "run.json" and code == 1:
            return
        record = SCORED_RECORDS.get(damaged.name)
        if record is not None and "/questions/" in name and not _still_valid(damaged, record):
            s = summary(earlier)  # summarize wrote it: the damaged question is named and not scored
            assert any(line.startswith(name + ": ") for line in s.damaged), (name, s.damaged)
            assert s.scored == summary(pristine).scored - 1
        shutil.rmtree(earlier.root)


def _still_valid(path: Path, model) -> bool:
    """A truncation of the final newline, say, leaves a record intact."""
    try:
        model.model_validate_json(path.read_bytes())
    except ValueError:
        return False
    return True
