"""The sample dataset ingested once per test session by the real ReMe (one application per user)
against the simulator, through the plugin's seam."""

import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import pytest_asyncio
from reme.application import Application

from mobilemem import usage
from mobilemem.config import load_config
from mobilemem.records import Config, ObservedRequest
from mobilemem.dataset import Dataset, load_dataset
from mobilemem.models import Endpoint, build_chat_model, close_chat_model
from mobilemem.reme import app as reme_app
from mobilemem.candidate import IngestResponse
from mobilemem.reme.ingest import ingest_session
from mobilemem.simulator import LoggedRequest


@dataclass
class Ingested:
    dataset: Dataset
    workspaces: dict[int, Path] = field(default_factory=dict)
    apps: dict[int, Application] = field(default_factory=dict)
    responses: dict[str, IngestResponse] = field(default_factory=dict)
    observed: dict[str, list[ObservedRequest]] = field(default_factory=dict)
    indexes: dict[int, reme_app.IndexResponse] = field(default_factory=dict)
    requests: list[LoggedRequest] = field(default_factory=list)  # the simulator's log of the whole ingest


@pytest.fixture(scope="session")
def config() -> Config:
    return load_config()


@pytest_asyncio.fixture(scope="session")
async def candidate_model(simulator, config):
    model = build_chat_model(Endpoint.simulated("candidate", config, simulator.base_url), config.candidate)
    yield model
    await close_chat_model(model)


@pytest_asyncio.fixture(scope="session")
async def ingested(sample_root, simulator, candidate_model, config, tmp_path_factory):
    simulator.reset()
    result = Ingested(load_dataset(sample_root))
    root: Path = tmp_path_factory.mktemp("workspaces")
    for user in result.dataset.users:
        workspace = root / str(user.user_id) / "workspace"
        app = await reme_app.open_user_app(workspace, candidate_model, config.candidate)
        result.workspaces[user.user_id], result.apps[user.user_id] = workspace, app
        for session in user.sessions:
            with usage.scope() as scope:
                result.responses[session.session_id] = await ingest_session(app, session, result.dataset.root)
            result.observed[session.session_id] = scope.requests
        result.indexes[user.user_id] = await reme_app.build_index(app)
    result.requests = simulator.requests
    simulator.reset()
    yield result
    for app in result.apps.values():
        await app.close()


@pytest_asyncio.fixture
async def copied_app(ingested, candidate_model, config, tmp_path):
    """User 0's ingested workspace copied, with its own ReMe application (a test may change it)."""
    opened: list[Application] = []

    async def open_copy(preset=None, model=None, prepare=None) -> tuple[Application, Path]:
        workspace = Path(shutil.copytree(ingested.workspaces[0], tmp_path / "0" / "workspace"))
        if prepare is not None:
            prepare(workspace)
        app = await reme_app.open_user_app(workspace, model or candidate_model, preset or config.candidate)
        opened.append(app)
        return app, workspace

    yield open_copy
    for app in opened:
        await app.close()
