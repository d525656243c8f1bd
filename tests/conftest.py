"""Shared fixtures: the generated sample dataset (extracted exactly as users extract it) and the
local OpenAI-compatible simulator (one server per test session, reset around every test).

The suite never touches the user's Prefect home: before anything imports Prefect (whose settings
are read at import), `PREFECT_HOME` points into pytest's temporary directory, and at the end of the
session `~/.prefect` must be exactly as it was (otherwise the session fails)."""

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from mobilemem.simulator import Simulator, start_simulator

ROOT = Path(__file__).resolve().parents[1]
USER_PREFECT_HOME = Path.home() / ".prefect"
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(ROOT / "deployments"))  # guide_server, the deployment guide's helper

from generate_sample import MARKER, generate  # noqa: E402

__all__ = ["MARKER", "ROOT"]

# Property tests: a fixed, derandomized budget in CI (reproducible, bounded time), a smaller random
# one while developing.
settings.register_profile("ci", max_examples=60, derandomize=True, print_blob=True, deadline=None)
settings.register_profile("dev", max_examples=40, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") == "true" else "dev")


def prefect_home_snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """(size, mtime) of every file under `folder`; empty when it does not exist."""
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()} if folder.is_dir() else {}


@pytest.hookimpl(trylast=True)  # after pytest's own configure, which creates the temp-path factory
def pytest_configure(config: pytest.Config) -> None:
    if "prefect" in sys.modules:
        raise pytest.UsageError("Prefect was imported before the suite could give it its own PREFECT_HOME")
    # the factory behind the `tmp_path_factory` fixture (which reads this same attribute)
    home = config._tmp_path_factory.mktemp("prefect-home", numbered=False)
    os.environ["PREFECT_HOME"] = str(home)
    config.stash[_USER_HOME_BEFORE] = prefect_home_snapshot(USER_PREFECT_HOME)


_USER_HOME_BEFORE = pytest.StashKey[dict]()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    before = session.config.stash.get(_USER_HOME_BEFORE, None)
    if before is not None and prefect_home_snapshot(USER_PREFECT_HOME) != before:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        print(f"\nthe test session changed the user's Prefect home {USER_PREFECT_HOME}", file=sys.stderr)


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
