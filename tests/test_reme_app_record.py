"""run.json's ReMe application configuration (`mobilemem.reme.app_record`): the one ReMe validates
when a user's application is opened, with credentials excluded (`mobilemem.credential_scrub`), the
workspace a placeholder, its sha256, and the default steps the plugin leaves out."""

import hashlib
import json

from reme.application import Application

from mobilemem.config import load_config
from mobilemem.credential_scrub import EXCLUDED, exclude_credentials
from mobilemem.errors import register_secret
from mobilemem.reme import app as reme_app
from mobilemem.reme.app_record import OMISSION_REASONS, WORKSPACE, recorded_app_config

FAKE_KEY = "sk-PLANTED-reme-config-7f3a9c1e5b"


def test_the_scrub_excludes_credentials_and_keeps_everything_else(monkeypatch):
    monkeypatch.setenv("SERVICE_ACCESS_TOKEN", "env-token-0123456789")
    monkeypatch.setenv("SHORT_TOKEN", "1")  # too short to be taken for a secret: every "1" would go
    register_secret("registered-secret-abcdef")
    config = {
        "api_key": "", "X-Api-Key": "abc", "apiKey": None, "credential": {"api_key": "k", "base_url": "https://h/v1"},
        "auth": {"password": "p", "refresh_token": {"nested": "gone"}}, "max_tokens": 65536,
        "keyword_index": "default", "tokenizer": "regex", "tag": "1 of 1",
        "base_url": "https://user:pa55@api.example.test:8443/v1?api-key=qq&model=m#frag",
        "notes": ["copied env-token-0123456789 here", "and registered-secret-abcdef", "see http://u@h/x"],
    }
    assert exclude_credentials(config) == {
        "api_key": EXCLUDED, "X-Api-Key": EXCLUDED, "apiKey": EXCLUDED,
        "credential": {"api_key": EXCLUDED, "base_url": "https://h/v1"},
        "auth": {"password": EXCLUDED, "refresh_token": EXCLUDED}, "max_tokens": 65536,
        "keyword_index": "default", "tokenizer": "regex", "tag": "1 of 1",
        "base_url": f"https://{EXCLUDED}@api.example.test:8443/v1?api-key={EXCLUDED}&model=m#frag",
        "notes": [f"copied {EXCLUDED} here", f"and {EXCLUDED}", f"see http://{EXCLUDED}@h/x"],
    }


def test_the_record_is_the_configuration_reme_opens_a_user_with(tmp_path, monkeypatch):
    monkeypatch.setenv("LLM_API_KEY", FAKE_KEY)
    monkeypatch.setenv("LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("LLM_MODEL_NAME", FAKE_KEY)  # the key copied into a field that is no credential
    preset = load_config().candidate
    record = recorded_app_config(preset)
    app = Application(**reme_app.app_config(tmp_path / "users" / "3" / "workspace", preset))
    opened = json.loads(json.dumps(app.context.app_config.model_dump(mode="json")).replace(
        str((tmp_path / "users" / "3" / "workspace").resolve()), WORKSPACE))
    for llm in opened["components"]["as_llm"].values():
        assert llm["credential"]["api_key"] == FAKE_KEY and llm["model"] in (FAKE_KEY, "qwen3.7-max")
        llm["credential"]["api_key"] = EXCLUDED
        llm["model"] = llm["model"].replace(FAKE_KEY, EXCLUDED)
    assert record.config == opened
    assert record.config["workspace_dir"] == WORKSPACE and record.config["plugins"] == ["mobilemem"]
    assert record.config["components"]["as_llm"]["default"]["model"] == EXCLUDED
    assert "as_embedding" not in record.config["components"]  # BM25 only
    assert FAKE_KEY not in record.model_dump_json()
    canonical = json.dumps(record.config, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert record.sha256 == hashlib.sha256(canonical.encode()).hexdigest()


def test_the_same_for_every_user_and_changed_by_the_preset():
    preset = load_config().candidate
    first, again = recorded_app_config(preset), recorded_app_config(preset)
    assert first == again
    other = recorded_app_config(preset.model_copy(update={"max_iters": 7}))
    assert other.sha256 != first.sha256
    assert other.config["components"]["agent_wrapper"]["bench"]["react_config"]["max_iters"] == 7


def test_the_default_steps_left_out_are_remes_auto_tag_step_with_its_reason():
    """ReMe's default auto_memory job is auto_memory_step then auto_tag_step; the plugin's runs only
    the first. Every other job the run shares with ReMe's defaults runs the default's steps."""
    [omitted] = recorded_app_config(load_config().candidate).omitted_steps
    assert (omitted.job, omitted.step) == ("auto_memory", "auto_tag_step")
    assert omitted.reason == OMISSION_REASONS["auto_tag_step"] and "no tag index" in omitted.reason


def test_each_as_llm_component_is_recorded_as_replaced_by_the_runs_model():
    """ReMe's preset names its own models in `as_llm`; open_user_app puts the run's model in their place."""
    record = recorded_app_config(load_config().candidate)
    names = set(record.config["components"]["as_llm"])
    assert names >= {"default", "bench", "compressor"}
    assert set(record.replaced_at_open) == {f"components.as_llm.{name}" for name in names}
    assert all("config.model" in why for why in record.replaced_at_open.values())
