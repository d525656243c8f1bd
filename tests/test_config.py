import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from mobilemem.checkout import checkout_root
from mobilemem.config import config_files, default_config_text, defaults_file, load_config
from mobilemem.records import Config
from mobilemem.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]


def test_root_config_mirrors_the_shipped_defaults():
    assert yaml.safe_load((ROOT / "config.yaml").read_text()) == yaml.safe_load(default_config_text())


def test_defaults_are_the_design_values():
    config = load_config()
    assert (config.model, config.user_concurrency, config.query_concurrency, config.judge_concurrency) == (
        "qwen3.8-max", 4, 16, 16)
    c = config.candidate
    assert (c.temperature, c.stream, c.max_tokens, c.context_size, c.max_images) == (0.0, True, 65536, 1_000_000, 4096)
    assert (c.trigger_ratio, c.reserve_ratio, c.max_iters) == (0.8, 0.1, 30)
    assert (c.request_timeout_s, c.answer_timeout_s) == (600, 1800)
    assert c.extra_body == {"enable_thinking": True}
    j = config.judge
    assert (j.model, j.temperature, j.stream, j.max_tokens, j.rubric) == (
        "qwen3.8-max", 0.0, False, 4096, "mobilemem-omni-judge")
    assert j.extra_body == {"enable_thinking": False}


def test_file_deep_merges_and_flags_win(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("model: from-file\nuser_concurrency: 2\ncandidate:\n  max_iters: 5\n  temperature: 0\n")
    config = load_config(path, {"model": "from-flag", "user_concurrency": None})
    assert config.model == "from-flag"
    assert config.user_concurrency == 2  # an unset flag does not override the file
    assert config.candidate.max_iters == 5
    assert config.candidate.max_tokens == 65536  # untouched sibling kept by the deep merge


def test_extra_body_is_replaced_whole(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("candidate:\n  extra_body:\n    chat_template_kwargs: {enable_thinking: true}\n")
    assert load_config(path).candidate.extra_body == {"chat_template_kwargs": {"enable_thinking": True}}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("candidate:\n  temprature: 0.5\n", "candidate.temprature: unknown key"),
        ("user_concurrency: four\n", "user_concurrency: Input should be a valid integer"),
        ("user_concurrency: '4'\n", "user_concurrency: Input should be a valid integer"),
        ("candidate:\n  stream: 'yes'\n", "candidate.stream: Input should be a valid boolean"),
        ("query_concurrency: 0\n", "query_concurrency: Input should be greater than 0"),
        ("judge:\n  api_key: sk-123\n", "judge.api_key: unknown key (credentials"),
        ("- a\n- b\n", "the top level must be a mapping"),
        ("model: [unclosed\n", "not valid YAML"),
    ],
)
def test_bad_files_name_the_file_and_key(tmp_path, text, expected):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(path) in str(info.value)
    assert expected in str(info.value)


def test_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "nope.yaml")


def test_config_has_no_credential_fields():
    names = set(Config.model_fields) | set(Config.model_fields["candidate"].annotation.model_fields)
    names |= set(Config.model_fields["judge"].annotation.model_fields)
    assert not {n for n in names if any(w in n for w in ("key", "secret", "token_", "url", "password"))}


def test_from_the_checkout_its_root_config_yaml_is_the_defaults_file(tmp_path):
    file, origin = defaults_file()
    assert (Path(str(file)).resolve(), origin) == (ROOT / "config.yaml", "checkout")
    files = config_files(tmp_path / "c.yaml")
    assert (Path(files.defaults).resolve(), files.defaults_from, files.config) == (
        ROOT / "config.yaml", "checkout", str(tmp_path / "c.yaml"))
    assert config_files(None).config is None


def _fake_checkout(folder: Path, *, name: str = "mobilemem-bench", config: bool = True) -> Path:
    for package in ("tasks", "flows"):
        (folder / package).mkdir(parents=True)
        (folder / package / "__init__.py").write_text("")
    (folder / "pyproject.toml").write_text(f'[project]\nname = "{name}"\n')
    if config:
        text = (ROOT / "config.yaml").read_text()
        assert text.count("\nmodel: qwen3.8-max ") == 1
        (folder / "config.yaml").write_text(text.replace("\nmodel: qwen3.8-max ", "\nmodel: edited-here ", 1))
    return folder


_PROBE = ("import json; from mobilemem.config import config_files, load_config; "
          "print(json.dumps([load_config().model, config_files(None).model_dump(mode='json')]))")


def _defaults_seen_from(folder: Path) -> tuple[str, dict]:
    """What a process whose `tasks` and `flows` packages are the ones in `folder` takes as its defaults."""
    result = subprocess.run([sys.executable, "-c", _PROBE], cwd=folder, capture_output=True, text=True, timeout=60,
                            check=True)
    model, files = json.loads(result.stdout)
    return model, files


def test_editing_the_checkouts_config_yaml_changes_the_run(tmp_path):
    checkout = _fake_checkout(tmp_path / "checkout")
    model, files = _defaults_seen_from(checkout)
    assert model == "edited-here"
    assert files == {"defaults": str(checkout / "config.yaml"), "defaults_from": "checkout", "config": None}


@pytest.mark.parametrize("broken", ["not mobilemem-bench", "no config.yaml"])
def test_without_a_checkout_the_packaged_defaults_are_used(tmp_path, broken):
    folder = _fake_checkout(tmp_path / "elsewhere", name="other-project" if broken == "not mobilemem-bench"
                            else "mobilemem-bench", config=broken != "no config.yaml")
    model, files = _defaults_seen_from(folder)
    assert model == "qwen3.8-max" and files["defaults_from"] == "package"
    assert files["defaults"].endswith("mobilemem/defaults/config.yaml") and Path(files["defaults"]).is_file()


def test_checkout_root_needs_the_project_and_its_config(tmp_path):
    assert checkout_root(ROOT / "tasks") == ROOT
    assert checkout_root(_fake_checkout(tmp_path / "a") / "tasks") == tmp_path / "a"
    assert checkout_root(_fake_checkout(tmp_path / "b", name="x") / "tasks") is None
    broken = _fake_checkout(tmp_path / "c")
    (broken / "pyproject.toml").write_text("[project\n")
    assert checkout_root(broken / "tasks") is None
    assert checkout_root(tmp_path / "nothing" / "tasks") is None
