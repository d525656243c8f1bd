"""report.html rendered in headless Chromium (Debian's package) from file://: no console error, no
request beyond the file itself (and the blob: URL the table library loads its own inlined code
from), the rendered scores equal summary.json's, the table pages, filters by column value and
searches, and a row opens the question's detail with the thumbnail of the image the agent read.
Screenshots go to pytest's tmp dir and to MOBILEMEM_SCREENSHOTS_DIR (README.md shows two)."""

from urllib.parse import urlparse

import pytest

from browser import CHROMIUM_ARGS, chromium_path, keep_screenshot
from e2e.runs import summary
from mobilemem.records import ResultLine
from mobilemem.rundir import read_lines
from mobilemem_judge.analysis import published

pytestmark = pytest.mark.slow
OFFLINE_SCHEMES = {"file", "blob", "data"}
VIEWPORT = {"width": 1360, "height": 900}


@pytest.fixture(scope="module")
def browser(faulty_run, baseline_run):
    """Headless Chromium. After the runs: Playwright's sync API keeps an event loop running in this
    thread, where asyncio.run then refuses to start."""
    executable = chromium_path()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(executable), args=CHROMIUM_ARGS, headless=True)
        yield launched
        launched.close()


def _open(browser, page_file):
    """(page, console errors, requested URLs) of a page opened from file://."""
    page = browser.new_page(viewport=VIEWPORT)
    page.set_default_timeout(30_000)
    problems, requested = [], []
    page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.on("request", lambda request: requested.append(request.url))
    page.goto(page_file.as_uri())
    return page, problems, requested


@pytest.fixture(scope="module")
def opened(browser, faulty_run):
    """(page, console errors, requested URLs, run) of the faulty run's report.html."""
    _, run, *_ = faulty_run
    page, problems, requested = _open(browser, run.root / "report.html")
    page.wait_for_selector("#questions table.dataTable tbody tr")
    yield page, problems, requested, run
    page.close()


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("report-screenshots")


def _rows(page) -> list[list[str]]:
    return [[cell.inner_text() for cell in row.locator("td").all()]
            for row in page.locator("#questions table.dataTable tbody tr").all()]


def test_opens_offline_without_console_errors(opened, folder):
    page, problems, requested, _ = opened
    page.wait_for_selector("#chart-language .main-svg")  # Plotly drew its charts
    assert problems == []
    assert {urlparse(url).scheme for url in requested} <= OFFLINE_SCHEMES, requested
    keep_screenshot(page.screenshot(), folder, "report-overview.png")


def test_rendered_scores_equal_summary_json(opened):
    page, _, _, run = opened
    done = summary(run)
    for group, score in {"overall:all": done.overall, **{f"language:{k}": v for k, v in done.by_language.items()},
                         **{f"difficulty:{k}": v for k, v in done.by_difficulty.items()}}.items():
        row = page.locator(f'tr[data-group="{group}"]')
        for metric in ("accuracy", "f1", "bleu1"):
            value = getattr(score, metric)
            assert row.locator(f"td.{metric}").inner_text() == ("n/a" if value is None else f"{value:.4f}")
    assert page.locator("#scored").inner_text() == str(done.scored)
    assert page.locator("#gap-count").inner_text() == str(sum(n for r in done.gaps.values() for n in r.values()))
    official = page.locator('#official tr[data-official="overall:all"]')  # the secondary figure, beside it
    assert official.locator("td.accuracy").inner_text() == f"{done.official.overall.accuracy:.4f}"
    assert official.locator("td.not-scored").inner_text() == str(done.official.overall.not_scored)
    assert page.locator("#candidate-name").inner_text() == "ReMe Image"
    published_rows = page.locator("#published tr[data-published]")  # a table of its own
    assert published_rows.count() == len(published.FIGURES) and published_rows.first.is_visible()
    assert page.locator("#published tr[data-group], #published tr[data-official]").count() == 0


def test_the_table_filters_by_status_and_searches(opened):
    page, _, _, run = opened
    results = read_lines(run.results, ResultLine)
    assert len(_rows(page)) == len(results)
    page.locator('#questions table.dataTable th[data-dt-column="3"] .dtcc-button_dropdown').click()
    page.locator('.dtcc-dropdown button[aria-label="answer"]').click()
    page.keyboard.press("Escape")
    filtered = _rows(page)
    assert {row[3] for row in filtered} == {"answer"}
    assert len(filtered) == sum(r.status == "answer" for r in results)
    page.locator('#questions table.dataTable th[data-dt-column="3"] .dtcc-button_dropdown').click()
    page.locator(".dtcc-dropdown .dtcc-list-selectNone").click()
    page.keyboard.press("Escape")
    assert len(_rows(page)) == len(results)
    wanted = next(r for r in results if r.status == "scored")
    page.locator("#questions .dt-search input").fill(wanted.question_id)
    assert [row[2] for row in _rows(page)] == [wanted.question_id]
    page.locator("#questions .dt-search input").fill("")


def test_a_row_opens_what_the_agent_did(opened, folder):
    page, problems, _, run = opened
    results = read_lines(run.results, ResultLine)
    index = next(i for i, r in enumerate(results) if r.status == "scored")
    page.locator("#questions table.dataTable tbody tr").nth(index).click()
    detail = page.locator("#detail")
    detail.wait_for(state="visible")
    assert results[index].question_id in detail.locator("h3").inner_text()
    assert "bm25_search" in detail.inner_text() and "read_image" in detail.inner_text()
    thumb = detail.locator("img.thumb").first
    assert thumb.evaluate("img => img.complete && img.naturalWidth > 0")
    assert problems == []
    keep_screenshot(detail.screenshot(), folder, "report-question.png")


def test_the_comparison_page_opens_offline_too(browser, baseline_run, faulty_run, tmp_path, capsys):
    from cli import main

    _, baseline, *_ = baseline_run
    _, faulty, *_ = faulty_run
    assert main(["compare", str(baseline.root), str(faulty.root), "--out", str(tmp_path)]) == 0
    [html] = tmp_path.glob("compare-*.html")
    page, problems, requested = _open(browser, html)
    page.wait_for_selector(".main-svg")
    assert problems == []
    assert {urlparse(url).scheme for url in requested} <= OFFLINE_SCHEMES, requested
    assert "Correct in A, wrong in B" in page.inner_text("body")
    page.close()
