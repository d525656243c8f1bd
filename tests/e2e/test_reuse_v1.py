"""`--reuse` of a run written before the failure sub-record (schema version 1, tests/data/records/v1):
its completed memory, its answers and its scored judgment are copied, its failed answer is asked
again and its failed judgment judged again."""

import shutil

import pytest

from conftest import ROOT
from e2e.runs import run_cli, summary
from mobilemem.records import ReuseFile
from mobilemem.rundir import read_record

pytestmark = pytest.mark.slow
V1 = ROOT / "tests" / "data" / "records" / "v1"


def test_a_v1_run_is_reused(sample_root, sim, tmp_path):
    earlier = tmp_path / "v1"
    shutil.copytree(V1, earlier)
    code, run = run_cli(pytest.MonkeyPatch(), sim, sample_root, tmp_path / "out", "--reuse", str(earlier))
    assert code == 0
    reused = read_record(run.user(0).reuse, ReuseFile)
    assert reused.memory is not None and reused.skipped == []
    assert set(reused.answers) == {"0_q_1", "0_q_3"}  # 0_q_2's answer failed (HTTP 401): asked again
    assert set(reused.judgments) == {"0_q_1"}  # 0_q_3's judgment failed (no label): judged again
    asked = {r.role for r in sim.requests}
    assert "ingest" in asked  # users 1 and 2 had no complete memory
    assert summary(run).scored == summary(run).expected
