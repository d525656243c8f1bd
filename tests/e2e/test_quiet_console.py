"""The console of a whole run is the progress lines and the closing lines, nothing else: no library's
own log lines (bm25s, AgentScope, Prefect), no traceback."""

import re
import subprocess
import sys

import pytest

from conftest import ROOT

pytestmark = pytest.mark.slow
PROGRESS = re.compile(r"^\d\d:\d\d:\d\d user \d+: sessions \d+/\d+, index [a-z ]+, answered \d+/\d+, "
                      r"judged \d+/\d+, gaps \d+( - finished)?$")


@pytest.mark.parametrize("candidate", ["reme-image", "bm25-rag"])
def test_a_run_prints_progress_lines_only(sample_root, tmp_path, candidate):
    result = subprocess.run([sys.executable, "flows/mobilemem.py", "--dataset", str(sample_root), "--output",
                             str(tmp_path / "out"), "--simulate", "--candidate", candidate], cwd=ROOT,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    assert [line for line in result.stderr.splitlines() if not PROGRESS.match(line)] == []
    assert result.stdout.splitlines()[1].startswith("scored 9/9 questions")
