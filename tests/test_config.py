from pathlib import Path

import pytest
import yaml

from mobilemem.config import Config, default_config_text, load_config
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
