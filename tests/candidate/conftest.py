"""The sample dataset ingested once per test session by the real candidate against the simulator."""

from dataclasses import dataclass
from pathlib import Path

import pytest
import pytest_asyncio

from mobilemem import usage
from mobilemem.candidate.index import IndexResponse, MemoryIndex
from mobilemem.candidate.ingest import IngestResponse, ingest_session
from mobilemem.candidate.tools import UserMemory
from mobilemem.candidate.workspace import Workspace
from mobilemem.config import Config, load_config
from mobilemem.dataset import Dataset, load_dataset
from mobilemem.models import Endpoint, build_chat_model, close_chat_model
from mobilemem.records import ObservedRequest
from mobilemem.simulator import LoggedRequest


@dataclass
class Ingested:
    dataset: Dataset
    workspaces: dict[int, Workspace]
    responses: dict[str, IngestResponse]
    observed: dict[str, list[ObservedRequest]]
    indexes: dict[int, IndexResponse]
    requests: list[LoggedRequest]  # the simulator's log of the whole ingest

    def memory(self, user_id: int) -> UserMemory:
        return UserMemory.load(self.workspaces[user_id])


@pytest.fixture(scope="session")
def config() -> Config:
    return load_config()


@pytest_asyncio.fixture(scope="session")
async def candidate_model(simulator, config):
    model = build_chat_model(Endpoint.simulated("candidate", config, simulator.base_url), config.candidate)
    yield model
    await close_chat_model(model)


@pytest_asyncio.fixture(scope="session")
async def ingested(sample_root, simulator, candidate_model, config, tmp_path_factory) -> Ingested:
    simulator.reset()
    dataset = load_dataset(sample_root)
    root: Path = tmp_path_factory.mktemp("workspaces")
    result = Ingested(dataset, {}, {}, {}, {}, [])
    for user in dataset.users:
        ws = Workspace(root / str(user.user_id) / "workspace").create()
        result.workspaces[user.user_id] = ws
        for session in user.sessions:
            with usage.scope() as scope:
                result.responses[session.session_id] = await ingest_session(
                    session, dataset.root, ws, candidate_model, config.candidate)
            result.observed[session.session_id] = scope.requests
        _, result.indexes[user.user_id] = MemoryIndex.build(ws)
    result.requests = simulator.requests
    simulator.reset()
    return result
