"""run.json says which configuration files a run read (the defaults file and the --config file), and
holds the typed request and effective configuration, which round-trip."""

from pathlib import Path

from conftest import ROOT
from mobilemem.records import RunFile, RunRequest
from lifecycle import run_plan, run_setup


def test_run_json_records_the_defaults_file_and_the_config_file(sample_root, tmp_path):
    config = tmp_path / "mine.yaml"
    config.write_text("candidate:\n  max_iters: 7\n")
    request = RunRequest(dataset=sample_root, output=tmp_path / "out", config=config, simulate=True)
    plan = run_plan.preflight(request)
    manifest = RunFile.model_validate_json(run_setup._manifest(plan).model_dump_json())
    assert (manifest.args, manifest.config) == (plan.request, plan.config)  # what a user's context is rebuilt from
    assert manifest.config_files is not None
    assert manifest.config_files.defaults_from == "checkout"
    assert Path(manifest.config_files.defaults).resolve() == ROOT / "config.yaml"
    assert manifest.config_files.config == str(config)
    assert manifest.config.candidate.max_iters == 7


def test_without_a_config_file_run_json_says_so(sample_root, tmp_path):
    plan = run_plan.preflight(RunRequest(dataset=sample_root, output=tmp_path / "out", simulate=True))
    manifest = run_setup._manifest(plan)
    assert manifest.config_files is not None and manifest.config_files.config is None
