"""The Prefect UI itself, rendered in headless Chromium, after the shared run where every stage fails
once (`faulty_run`): each failed step is a red Failed task run in its user's subflow, a user's progress
table and the parent's all-users table have the right cells, and the progress lines are in the
parent flow run's Logs tab. The API only says where to look (flow-run and artifact ids) and when the
failed states have landed; every assertion reads the rendered page.

The session's test server (prefect_test_harness) serves the API only: it turns the UI off. So a
real `prefect server start` with a PREFECT_HOME of its own serves the UI, with its API URL set to the
test server the run reported to. Screenshots go to pytest's tmp dir, and are copied to
MOBILEMEM_SCREENSHOTS_DIR when that is set (deployments/README.md shows two of them)."""

import asyncio
import itertools
import os
import re
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from uuid import UUID

import httpx
import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import (
    ArtifactFilter,
    ArtifactFilterKey,
    FlowRunFilter,
    FlowRunFilterId,
    FlowRunFilterParentFlowRunId,
)

from browser import CHROMIUM_ARGS, chromium_path, keep_screenshot
from e2e.runs import stop_process
from mobilemem.records import RunFile
from mobilemem.rundir import read_record
from lifecycle.dashboard import RunIdentity

pytestmark = pytest.mark.slow
VIEWPORT = {"width": 1440, "height": 1150}
WAIT_MS = 60_000  # the UI renders slowly on a loaded 2-core machine; a passing wait costs nothing


# Each user subflow's task runs as the UI sums them up (its CSS capitalizes the state names)
TASK_RUN_COUNTS = {"user-1": "(3 History Gap, 1 Failed, 1 Completed)", "user-2": "(3 Index Gap, 1 Failed, 4 Completed)",
                   "user-0": "(2 Failed, 8 Completed)"}
LANDING_S = 180  # how long the task-run states may take to reach the server on a loaded machine


def _counts(summary: str) -> dict[str, int]:
    """'(3 History Gap, 1 Failed)' -> {'history gap': 3, 'failed': 1}"""
    return {name.lower(): int(n) for n, name in re.findall(r"(\d+) ([A-Za-z ]+?)(?:,|\))", summary)}


def _any_order(summary: str) -> re.Pattern:
    """The UI's summary in any order of its states (it keeps no fixed order: CI showed "(8 Completed, 2 Failed)")."""
    parts = summary.strip("()").split(", ")
    orders = ("|".join(re.escape(", ".join(order)) for order in itertools.permutations(parts)))
    return re.compile(rf"^\(({orders})\)$", re.IGNORECASE)


@dataclass(frozen=True)
class Where:
    """Where the UI shows the run: flow-run ids by name, table-artifact ids by name."""
    parent: UUID
    flow_runs: dict[str, UUID]
    tables: dict[str, UUID]
    failed: dict[str, set[str]]  # user subflow -> the task runs that must show as Failed


@pytest.fixture(scope="module")
def where(faulty_run) -> Where:
    _, run, _, answer_q, judge_q = faulty_run
    manifest = read_record(run.run, RunFile)
    parent, identity = UUID(manifest.flow_run_id), RunIdentity.of(manifest)
    failed = {"user-0": {f"answer-{answer_q.question_id}", f"judge-{judge_q.question_id}"},
              "user-1": {"ingest-1_2"}, "user-2": {"index-user-2"}}

    async def read() -> Where:
        async with get_client() as client:
            subflows = await client.read_flow_runs(flow_run_filter=FlowRunFilter(
                parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[parent])))
            runs = FlowRunFilter(id=FlowRunFilterId(any_=[parent, *(f.id for f in subflows)]))
            names = {f.id: f.name for f in subflows}
            deadline = asyncio.get_running_loop().time() + LANDING_S
            # task-run states reach the server as events: wait until every one the page sums up has landed
            while True:
                landed: dict[str, dict[str, int]] = {name: {} for name in TASK_RUN_COUNTS}
                for t in await client.read_task_runs(flow_run_filter=runs):
                    user = names.get(t.flow_run_id)
                    state = t.state.name.lower() if t.state else "no state"
                    if user in landed:  # a run not final yet counts under its state: the page would show it
                        landed[user][state] = landed[user].get(state, 0) + 1
                if landed == {user: _counts(text) for user, text in TASK_RUN_COUNTS.items()}:
                    break
                if asyncio.get_running_loop().time() > deadline:
                    pytest.fail(f"the task-run states did not land within {LANDING_S} s: {landed}")
                await asyncio.sleep(0.5)
            keys = {name: identity.key(name) for name in ("user-1", "users")}
            artifacts = await client.read_artifacts(artifact_filter=ArtifactFilter(
                key=ArtifactFilterKey(any_=list(keys.values()))))
        by_key = {a.key: a.id for a in artifacts}
        return Where(parent, {f.name: f.id for f in subflows}, {n: by_key[k] for n, k in keys.items()}, failed)

    return asyncio.run(read())


@pytest.fixture(scope="module")
def prefect_ui(tmp_path_factory) -> Iterator[str]:
    """The base URL of a Prefect UI that reads the session test server's API."""
    from prefect.settings import PREFECT_API_URL

    folder = tmp_path_factory.mktemp("prefect-ui")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "PREFECT_HOME": str(folder / "home"), "PREFECT_UI_API_URL": PREFECT_API_URL.value(),
           "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
           # the UI never reads this server's own database: none is made
           "PREFECT_API_DATABASE_MIGRATE_ON_START": "false", "PREFECT_API_BLOCKS_REGISTER_ON_START": "false"}
    log = (folder / "server.log").open("w")
    server = subprocess.Popen([sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1",
                               "--port", str(port), "--no-services", "--ui"],
                              env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_serving(server, f"{url}/ui-settings", folder / "server.log")
        yield url
    finally:
        stop_process(server, grace_s=10)
        log.close()


def _wait_until_serving(server: subprocess.Popen, url: str, log: Path, timeout_s: float = 60) -> None:
    with httpx.Client(timeout=2) as client:
        for _ in range(int(timeout_s / 0.25)):
            if server.poll() is not None:
                pytest.fail(f"prefect server start exited {server.returncode}: {log.read_text()[-2000:]}")
            try:
                if client.get(url).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            try:  # a quarter-second pause that ends early if the server exits
                server.wait(timeout=0.25)
            except subprocess.TimeoutExpired:
                pass
    pytest.fail(f"the Prefect UI at {url} did not answer within {timeout_s}s: {log.read_text()[-2000:]}")


@pytest.fixture(scope="module")
def browser(where, prefect_ui, tmp_path_factory):
    """Headless Chromium. After `where`: Playwright's sync API keeps an event loop running in this
    thread, where asyncio.run then refuses to start."""
    executable = chromium_path()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            tmp_path_factory.mktemp("chromium-profile"), executable_path=str(executable), args=CHROMIUM_ARGS,
            headless=True, viewport=VIEWPORT)
        context.set_default_timeout(WAIT_MS)
        # the UI links fonts and news from the internet: this machine has none, so fail those at once
        context.route(re.compile(r"^(?!https?://127\.0\.0\.1[:/])"), lambda route: route.abort())
        yield context
        context.close()


@pytest.fixture
def page(browser):
    opened = browser.new_page()
    opened.set_default_timeout(WAIT_MS)
    yield opened
    opened.close()


@pytest.fixture(scope="module")
def shoot(tmp_path_factory) -> Callable:
    """shoot(page, name, clip_to=None): a small PNG of the page's main pane, or of its top part down
    to the element `clip_to`, in pytest's tmp dir and in MOBILEMEM_SCREENSHOTS_DIR."""
    folder = tmp_path_factory.mktemp("screenshots")

    def take(page, name: str, clip_to=None) -> Path:
        main = page.locator("main").bounding_box()
        bottom = clip_to.bounding_box() if clip_to is not None else main
        clip = {"x": main["x"], "y": main["y"], "width": main["width"],
                "height": min(main["height"], bottom["y"] + bottom["height"] + 24 - main["y"])}
        beyond_view = clip["y"] + clip["height"] > page.viewport_size["height"]
        return keep_screenshot(page.screenshot(clip=clip, full_page=beyond_view), folder, name)

    return take


def _task_run_card(page, name: str):
    return page.locator("[data-slot=card]").filter(has=page.get_by_text(name, exact=True))


def _is_red(card) -> bool:
    r, g, b = map(int, re.findall(r"\d+", card.evaluate("e => getComputedStyle(e).borderLeftColor"))[:3])
    return r > 180 and g < 110 and b < 110


@pytest.mark.parametrize(("user", "counts", "completed", "gap"), [
    ("user-1", TASK_RUN_COUNTS["user-1"], "ingest-1_1", "History gap"),
    ("user-2", TASK_RUN_COUNTS["user-2"], "ingest-2_1", "Index gap"),
    ("user-0", TASK_RUN_COUNTS["user-0"], "index-user-0", None),
])
def test_each_failed_step_is_a_red_failed_task_run_in_its_users_subflow(page, prefect_ui, where, shoot,
                                                                        user, counts, completed, gap):
    page.goto(f"{prefect_ui}/v2/runs/flow-run/{where.flow_runs[user]}?tab=TaskRuns")
    # the DOM says "History gap"; CSS capitalizes the summary
    try:
        page.get_by_text(_any_order(counts)).wait_for()
    except Exception:  # say what the page shows instead
        pytest.fail(f"{user}: no {counts!r} on the page, which reads: {page.locator('main').inner_text()[:1500]!r}")
    for name in where.failed[user]:
        card = _task_run_card(page, name)
        card.get_by_text("Failed", exact=True).wait_for()
        assert _is_red(card), f"{name} is not drawn red"
        assert card.get_by_text(user, exact=True).count() == 1  # its breadcrumb: flow > subflow > task run
    fine = _task_run_card(page, completed)
    fine.get_by_text("Completed", exact=True).wait_for()
    assert not _is_red(fine)
    if gap:
        skipped = _task_run_card(page, f"skip-{user[-1]}_q_1")
        skipped.get_by_text(gap, exact=True).wait_for()
    shoot(page, "dashboard-failed-steps.png" if user == "user-1" else f"dashboard-{user}-task-runs.png")


def _table_rows(page) -> list[dict[str, str]]:
    table = page.locator("main table")
    table.locator("tbody tr").first.wait_for()
    header = table.locator("thead th").all_inner_texts()
    return [dict(zip(header, row.locator("td").all_inner_texts(), strict=True))
            for row in table.locator("tbody tr").all()]


def _row(user: int, ingested: str, failed: int, index: str, answered: str, judged: str, gaps: int) -> dict:
    return {"user": str(user), "sessions ingested": ingested, "sessions failed": str(failed), "index": index,
            "answered": answered, "judged": judged, "gaps": str(gaps), "status": "finished"}


USER_1_DONE = "user 1: sessions 1/4 (1 failed), index skipped, answered 0/3, judged 0/3, gaps 3 - finished"
USER_ROWS = [_row(0, "4/4", 0, "built", "2/3", "1/3", 2), _row(1, "1/4", 1, "skipped", "0/3", "0/3", 3),
             _row(2, "4/4", 0, "failed", "0/3", "0/3", 3)]


def test_a_users_progress_table_shows_its_counts_on_its_subflow(page, prefect_ui, where, shoot):
    page.goto(f"{prefect_ui}/v2/artifacts/artifact/{where.tables['user-1']}")
    rows = _table_rows(page)
    assert [{k: v for k, v in row.items() if k != "line"} for row in rows] == [USER_ROWS[1]]
    assert rows[0]["line"] == USER_1_DONE
    page.get_by_role("link", name="user-1", exact=True).wait_for()  # the artifact's flow run
    shoot(page, "dashboard-user-1-table.png", clip_to=page.locator("main table"))


def test_the_parent_run_has_the_all_users_table(page, prefect_ui, where, shoot):
    page.goto(f"{prefect_ui}/v2/artifacts/artifact/{where.tables['users']}")
    rows = _table_rows(page)
    assert [{k: v for k, v in row.items() if k != "line"} for row in rows] == USER_ROWS
    page.get_by_role("link", name=re.compile(r"^qwen3\.8-max-\d{8}-\d{4}$")).wait_for()
    shoot(page, "dashboard-progress.png", clip_to=page.locator("main table"))


# the Logs tab is a virtualized list: rows exist only while in view. These read the rendered rows, and
# tell when they cover the part of the list that is scrolled into view (after a scroll, a frame later).
ROWS = "e => [...e.querySelectorAll('li[data-index]')].map(li => [+li.dataset.index, li.innerText])"
COVERED = """e => {
    const view = e.getBoundingClientRect(), list = e.querySelector('ol').getBoundingClientRect();
    const rows = [...e.querySelectorAll('li[data-index]')].map(li => li.getBoundingClientRect());
    return rows.length > 0 && Math.min(...rows.map(r => r.top)) <= Math.max(view.top, list.top) + 1
        && Math.max(...rows.map(r => r.bottom)) >= Math.min(view.bottom, list.bottom) - 1;
}"""


def _rendered_log_lines(page) -> list[str]:
    """Every line of the Logs tab, scrolled through to its end."""
    log = page.get_by_role("log")
    log.locator("li[data-index]").first.wait_for()
    lines: dict[int, str] = {}
    for _ in range(100):
        page.wait_for_function(COVERED, arg=log.element_handle())
        lines.update(dict(log.evaluate(ROWS)))
        if log.evaluate("e => e.scrollTop + e.clientHeight >= e.scrollHeight - 1"):
            return [lines[i] for i in sorted(lines)]
        log.evaluate("e => e.scrollBy(0, e.clientHeight * 0.8)")
    pytest.fail("the Logs tab never scrolled to its end")


def test_the_progress_lines_are_in_the_parent_runs_logs_tab(page, prefect_ui, where, shoot):
    page.goto(f"{prefect_ui}/v2/runs/flow-run/{where.parent}?tab=Logs")
    lines = _rendered_log_lines(page)
    progress = [line.split("\n") for line in lines if "mobilemem.progress" in line]
    messages = {part for parts in progress for part in parts}
    assert USER_1_DONE in messages
    assert "user 0: sessions 4/4, index built, answered 2/3, judged 1/3, gaps 2 - finished" in messages
    assert "user 2: sessions 4/4, index failed, answered 0/3, judged 0/3, gaps 3 - finished" in messages
    assert any(line.startswith("Finished in state Completed") for line in lines[-1].split("\n"))
    shoot(page, "dashboard-logs.png")
