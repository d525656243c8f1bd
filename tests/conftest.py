"""Shared fixtures: the generated sample dataset (extracted exactly as users extract it) and the
local OpenAI-compatible simulator (one server per test session, reset around every test)."""

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from mobilemem.simulator import Simulator, start_simulator

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))

from generate_sample import MARKER, generate  # noqa: E402

__all__ = ["MARKER", "ROOT"]

# Property tests: a fixed, derandomized budget in CI (reproducible, bounded time), a smaller random
# one while developing.
settings.register_profile("ci", max_examples=60, derandomize=True, print_blob=True, deadline=None)
settings.register_profile("dev", max_examples=40, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") == "true" else "dev")


@pytest.fixture(scope="session")
def sample_root(tmp_path_factory) -> Path:
    """The default sample (as committed), generated and extracted once per test session. Read-only."""
    out = tmp_path_factory.mktemp("sample") / "MobileMem-Omni"
    generate(out, extract=True)
    return out


@pytest.fixture
def sample_copy(sample_root, tmp_path) -> Path:
    """A private copy of the extracted sample that a test may break."""
    target = tmp_path / "MobileMem-Omni"
    shutil.copytree(sample_root, target, symlinks=True)
    return target


@pytest.fixture(scope="session")
def simulator() -> Iterator[Simulator]:
    with start_simulator() as running:
        yield running


@pytest.fixture
def sim(simulator: Simulator) -> Iterator[Simulator]:
    simulator.reset()
    yield simulator
    simulator.wait_idle()  # a request a test gave up on (timeout fault) may still be sleeping
    simulator.reset()


@pytest.fixture(scope="session")
def shared_reference() -> Path:
    """The project's shared protocol reference texts (beside the checkout, as in CI)."""
    folder = ROOT.parent / "shared" / "reference"
    if not folder.is_dir():
        pytest.skip(f"{folder} is not beside this checkout")
    return folder
