"""Shared fixtures: the generated sample dataset (extracted exactly as users extract it) and the
local OpenAI-compatible simulator (one server per test session, reset around every test).

The suite never touches the user's Prefect home: before anything imports Prefect (whose settings
are read at import), `PREFECT_HOME` points into pytest's temporary directory, and so does `HOME`
(a folder of its own), so nothing the suite runs can reach the user's `~/.prefect`. At the end of the
session that folder must hold no `.prefect`: one there was written by something in the suite that
ignored `PREFECT_HOME` (the session then fails). Whatever else writes the user's `~/.prefect`
meanwhile (a run of the README's first command, say) is none of the suite's business."""

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
sys.path.insert(0, str(ROOT / "deployments"))  # guide_server, the deployment guide's helper

from generate_sample import MARKER, generate  # noqa: E402

__all__ = ["MARKER", "ROOT"]

# Property tests: a fixed, derandomized budget in CI (reproducible, bounded time), a smaller random
# one while developing.
settings.register_profile("ci", max_examples=60, derandomize=True, print_blob=True, deadline=None)
settings.register_profile("dev", max_examples=40, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") == "true" else "dev")


@pytest.hookimpl(trylast=True)  # after pytest's own configure, which creates the temp-path factory
def pytest_configure(config: pytest.Config) -> None:
    if "prefect" in sys.modules:
        raise pytest.UsageError("Prefect was imported before the suite could give it its own PREFECT_HOME")
    # the factory behind the `tmp_path_factory` fixture (which reads this same attribute)
    factory = config._tmp_path_factory
    os.environ["PREFECT_HOME"] = str(factory.mktemp("prefect-home", numbered=False))
    home = factory.mktemp("home", numbered=False)
    os.environ["HOME"] = str(home)
    os.environ["MOBILEMEM_CACHE_DIR"] = str(factory.mktemp("cache", numbered=False))  # the image cache
    config.stash[_SUITE_HOME] = home


_SUITE_HOME = pytest.StashKey[Path]()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    home = session.config.stash.get(_SUITE_HOME, None)
    if home is not None and (home / ".prefect").exists():
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        print(f"\nsomething in the test session ignored PREFECT_HOME and wrote {home / '.prefect'}", file=sys.stderr)


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
