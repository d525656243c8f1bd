"""The candidate registry (DESIGN §10): the built-ins are entry points like any plug-in, and a name that
is not installed, is registered twice, does not load or is not a plug-in is refused in one line."""

import subprocess
import sys

import pytest

from conftest import ROOT
from mobilemem import candidates
from mobilemem.candidate import CandidatePlugin
from mobilemem.errors import ConfigError
from mobilemem.prompts import frozen_hashes
from plugin_dists import install

BUILT_IN = ("bm25-rag", "no-memory", "reme-image")


def test_the_built_ins_are_registered_as_plug_ins():
    assert set(BUILT_IN) <= set(candidates.installed())
    for kind in BUILT_IN:
        assert isinstance(candidates.plugin(kind), CandidatePlugin)
        assert candidates.plugin_package(kind) is None  # mobilemem's own: its version is plugin_version
        assert candidates.prompt_hashes(kind) == frozen_hashes(kind)
    assert [candidates.remembers(kind) for kind in BUILT_IN] == [True, False, True]


def test_listing_and_loading_a_built_in_loads_neither_reme_nor_agentscope():
    code = ("import sys; from mobilemem import candidates; candidates.plugin('reme-image'); "
            "print(' '.join(m for m in sys.modules if m.split('.')[0] in {'reme', 'agentscope', 'prefect'}))")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == ""


def test_an_unknown_name_is_refused_in_one_line_listing_the_installed():
    with pytest.raises(ConfigError) as refused:
        candidates.plugin("no-such-memory")
    message = str(refused.value)
    assert "\n" not in message and "'no-such-memory' is not installed" in message
    assert all(kind in message for kind in BUILT_IN)


PROBE = '''
from mobilemem.candidate import CandidatePlugin

async def _open(opening):
    raise AssertionError("not opened in this test")

PLUGIN = CandidatePlugin(open=_open, prompts={"probe.txt": "Answer briefly."})
NOT_A_PLUGIN = object()
'''


def test_an_installed_plug_in_is_found_with_its_distribution(monkeypatch, tmp_path):
    install(monkeypatch, tmp_path, "mobilemem-probe", {"probe_candidate": PROBE},
            {"probe": "probe_candidate:PLUGIN"}, version="1.2.3")
    assert "probe" in candidates.installed()
    assert candidates.plugin_package("probe") == "mobilemem-probe==1.2.3"
    assert candidates.entry_point("probe").value == "probe_candidate:PLUGIN"
    assert set(candidates.prompt_hashes("probe")) == {"probe.txt"} and candidates.remembers("probe")


@pytest.mark.parametrize(("target", "expected"), [
    ("probe_candidate:NOT_A_PLUGIN", "is a object, not a mobilemem.candidate.CandidatePlugin"),
    ("probe_candidate:MISSING", "does not load"),
    ("missing_module:PLUGIN", "does not load"),
])
def test_a_broken_plug_in_is_refused_in_one_line(monkeypatch, tmp_path, target, expected):
    install(monkeypatch, tmp_path, "mobilemem-broken", {"probe_candidate": PROBE}, {"broken": target})
    with pytest.raises(ConfigError) as refused:
        candidates.plugin("broken")
    assert expected in str(refused.value) and "\n" not in str(refused.value) and target in str(refused.value)


def test_a_name_registered_by_two_distributions_is_refused(monkeypatch, tmp_path):
    install(monkeypatch, tmp_path / "a", "mobilemem-one", {"probe_candidate": PROBE}, {"twice": "probe_candidate:PLUGIN"})
    install(monkeypatch, tmp_path / "b", "mobilemem-two", {"probe_other": PROBE}, {"twice": "probe_other:PLUGIN"})
    with pytest.raises(ConfigError) as refused:
        candidates.plugin("twice")
    assert "registered more than once" in str(refused.value)
    assert "mobilemem-one==0.1.0" in str(refused.value) and "mobilemem-two==0.1.0" in str(refused.value)


@pytest.mark.parametrize("command", [[], ["plan"]])
def test_the_command_line_refuses_an_unknown_candidate_before_anything_is_written(sample_root, tmp_path, command):
    args = [*command, "--dataset", str(sample_root), "--output", str(tmp_path / "out"), "--simulate",
            "--candidate", "no-such-memory"]
    result = subprocess.run([sys.executable, "flows/mobilemem.py", *args], cwd=ROOT, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    [line] = result.stderr.splitlines()
    assert "candidate 'no-such-memory' is not installed (installed: " in line and "reme-image" in line
    assert not (tmp_path / "out").exists()


def test_help_names_the_installed_candidates():
    result = subprocess.run([sys.executable, "flows/mobilemem.py", "--help"], cwd=ROOT, capture_output=True,
                            text=True, timeout=120)
    assert all(kind in " ".join(result.stdout.split()) for kind in BUILT_IN)
