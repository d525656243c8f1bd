"""lifecycle.limits without a server: the endpoint limit's name (never a credential in it), and the
preflight refusal of an endpoint limit on the embedded server."""

import pytest
from pydantic import SecretStr

from mobilemem.config import load_config
from mobilemem.endpoints import Endpoint
from mobilemem.errors import ConfigError
from mobilemem.records import RunRequest
from lifecycle import run_plan
from lifecycle.limits import endpoint_limit_name

CONFIG = load_config()
KEY = "sk-live-0123456789abcdef"


def _endpoint(url: str, role: str = "candidate", key: str = KEY) -> Endpoint:
    return Endpoint(role=role, model="m", base_url=url, api_key=SecretStr(key))


def test_equal_base_urls_share_one_limit_whatever_the_role_or_key():
    names = {endpoint_limit_name(_endpoint(url, role, key), CONFIG)
             for url in ("https://api.example.com/v1", "https://API.example.com/v1/", " https://api.example.com/v1")
             for role in ("candidate", "judge") for key in (KEY, "another-key")}
    assert len(names) == 1
    [name] = names
    assert name.startswith("mobilemem-endpoint-") and KEY not in name and "example" not in name


def test_other_base_urls_get_other_limits():
    first = endpoint_limit_name(_endpoint("https://api.example.com/v1"), CONFIG)
    assert first != endpoint_limit_name(_endpoint("https://api.example.com/v2"), CONFIG)
    assert first != endpoint_limit_name(_endpoint("http://127.0.0.1:8000/v1"), CONFIG)


def test_a_named_endpoint_limit_is_one_for_both_roles():
    config = CONFIG.model_copy(update={"endpoint_limit": 3, "endpoint_name": "shared-qwen"})
    names = {endpoint_limit_name(_endpoint(url, role), config)
             for url, role in (("https://a.example/v1", "candidate"), ("https://b.example/v1", "judge"))}
    assert names == {"mobilemem-endpoint-shared-qwen"}


def test_an_endpoint_limit_on_the_embedded_server_is_refused_in_one_line(sample_root, tmp_path, monkeypatch):
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    request = RunRequest(dataset=sample_root, output=tmp_path / "out", simulate=True, endpoint_limit=2)
    with pytest.raises(ConfigError) as refused:
        run_plan.preflight(request)
    assert "\n" not in str(refused.value) and "PREFECT_API_URL" in str(refused.value)
    assert not (tmp_path / "out").exists()  # refused before the run directory is claimed
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:4200/api")
    assert run_plan.preflight(request).config.endpoint_limit == 2
