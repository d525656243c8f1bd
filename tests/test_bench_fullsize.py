"""bench/fullsize.py: its pure helpers, the generator options it needs, and one tiny end-to-end run."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from conftest import ROOT
from mobilemem.rundir import RunDir
from mobilemem.simulator.vision import read_fact

sys.path.insert(0, str(ROOT / "bench"))

import procstats  # noqa: E402
from fullsize import (  # noqa: E402
    Figure,
    ingest_interval,
    interval_peaks,
    make_queries,
    percentile,
    user_interval,
)
from generate_sample import generate  # noqa: E402  (conftest puts examples/ on sys.path)


def test_percentile_matches_numpy_linear() -> None:
    rng = np.random.default_rng(3)
    for n in (1, 2, 7, 100, 1001):
        values = list(rng.exponential(size=n))
        for q in (0, 50, 95, 99, 100):
            assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)))
    assert percentile([4.0, 1.0, 3.0, 2.0], 50) == 2.5
    with pytest.raises(ValueError):
        percentile([], 50)
    with pytest.raises(ValueError):
        percentile([1.0], 101)


def test_interval_peaks_takes_the_largest_sample_inside_each_interval() -> None:
    samples = [(0.0, 10), (0.2, 50), (0.4, 20), (1.0, 30), (1.2, 90), (1.4, 40), (3.0, 70)]
    intervals = {0: (0.0, 0.4), 1: (1.0, 1.4), 2: (2.0, 2.1), 3: (2.9, 3.0)}
    assert interval_peaks(samples, intervals) == {0: 50, 1: 90, 2: 40, 3: 70}  # 2: the sample nearest its midpoint
    assert interval_peaks([], {0: (0.0, 1.0)}) == {0: None}


def test_queries_are_deterministic_words_of_the_memory() -> None:
    words = ["kayaking", "lisbon", "harbour", "image", "id", "照"]
    first, again = make_queries(words, 50, 7), make_queries(words, 50, 7)
    assert first == again and first != make_queries(words, 50, 8)
    assert all(1 <= len(q.split()) <= 5 and set(q.split()) <= set(words) for q in first)
    with pytest.raises(ValueError):
        make_queries([], 1, 0)


def test_figure_status_against_an_upper_bound() -> None:
    assert Figure("a", 3.0, "s", 3.0).status == "met"
    assert Figure("a", 3.01, "s", 3.0).status == "MISSED"
    assert Figure("a", 1.0, "s").status == "-"
    assert Figure("a", 1.0, "s", 2.0).as_json() == {"value": 1.0, "unit": "s", "target": 2.0, "status": "met"}


def _timed(path: Path, start: float, end: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"started_at": datetime.fromtimestamp(start, UTC).isoformat(),
                                "finished_at": datetime.fromtimestamp(end, UTC).isoformat()}))


def test_user_interval_spans_first_session_to_last_judgment(tmp_path: Path) -> None:
    user = RunDir(tmp_path).user(0)
    _timed(user.session("0_2"), 105.0, 110.0)
    _timed(user.session("0_1"), 100.0, 104.0)
    assert ingest_interval(user) == (100.0, 110.0, 2)
    assert user_interval(user) == (100.0, 110.0)  # nothing judged yet
    _timed(user.question("0_q_1").judgment, 120.0, 121.5)
    _timed(user.question("0_q_2").judgment, 118.0, 119.0)
    _timed(user.question("0_q_3").answer_response, 130.0, 140.0)  # not a judgment
    assert user_interval(user) == (100.0, 121.5)


def test_procstats_reads_this_process() -> None:
    assert procstats.status_bytes(os.getpid(), "VmRSS") > 1_000_000
    assert procstats.status_bytes(os.getpid(), "NoSuchField") is None
    assert procstats.alive(os.getpid()) and os.getpid() in procstats.group_members(os.getpgrp())
    assert procstats.status_bytes(2**22 + 1, "VmRSS") is None and not procstats.alive(2**22 + 1)


def test_generator_reuses_pairs_with_a_trip_suffix_beyond_144_sessions(tmp_path: Path) -> None:
    generate(tmp_path / "out", users=2, sessions=150, turns=3, images=1, questions=1, image_size=(160, 120))
    for line in (tmp_path / "out" / "data.jsonl").read_text("utf-8").splitlines():
        names = [s["event_name"] for s in json.loads(line)["sessions"]]
        assert len(set(names)) == 150
        assert not any("trip)" in n or "（第" in n for n in names[:144])
        assert all(n.endswith(("(second trip)", "（第二次）")) or "（第二次）" in n for n in names[144:])


def test_generator_jpeg_with_noise_is_deterministic_and_readable(tmp_path: Path) -> None:
    options = {"users": 2, "sessions": 3, "images": 3, "image_size": (400, 400), "image_format": "jpeg", "noise": 24}
    generate(tmp_path / "a", **options)
    generate(tmp_path / "b", **options)
    assert (tmp_path / "a" / "image.zip").read_bytes() == (tmp_path / "b" / "image.zip").read_bytes()
    generate(tmp_path / "quiet", **{**options, "noise": 0})
    with zipfile.ZipFile(tmp_path / "a" / "image.zip") as archive:
        payload = {i.filename: archive.read(i) for i in archive.infolist()}
    with zipfile.ZipFile(tmp_path / "quiet" / "image.zip") as archive:
        quiet = {i.filename: archive.read(i) for i in archive.infolist()}
    assert payload.keys() == quiet.keys()
    ordinary = [n for n in payload if re.search(r"/\d+_event_\d+_\d+\.jpg$", n)]
    assert len(ordinary) >= len(payload) - 4 and all(payload[n].startswith(b"\xff\xd8\xff") for n in ordinary)
    assert all(len(payload[n]) > 3 * len(quiet[n]) for n in ordinary)  # the noise is in the pixels
    descriptions = {}
    for line in (tmp_path / "a" / "data.jsonl").read_text("utf-8").splitlines():
        for session in json.loads(line)["sessions"]:
            for ref in session["image_refs"]:
                digit, colour = re.search(r"digit (\d) on a (\w+) background", ref["description"]).groups()
                descriptions[ref["image_path"].rsplit("/", 1)[1]] = (colour, int(digit))
    for name, data in payload.items():
        if name.endswith(".jpg") and name.rsplit("/", 1)[1] in descriptions:
            assert read_fact(Image.open(io.BytesIO(data))) == descriptions[name.rsplit("/", 1)[1]], name


FIGURES = {"runner_peak_rss", "runner_cpu", "runner_wall", "prefect_server_peak_rss", "ingest_sessions_per_s",
           "ingest_image_mb_per_s", "index_build", "search_p50", "search_p95", "run_dir_size",
           "growth_user0_peak_rss", "growth_user1_peak_rss", "growth_last_minus_first"}


@pytest.mark.slow
def test_tiny_run_reports_every_figure_and_leaves_no_process(tmp_path: Path) -> None:
    report = tmp_path / "figures.json"
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "fullsize.py"), "--sessions", "3", "--turns", "8",
                           "--images", "2", "--size", "320", "--questions", "2", "--growth-users", "2",
                           "--growth-sessions", "2", "--cache", str(tmp_path / "cache"), "--json", str(report)],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(report.read_text())
    figures = data["figures"]
    assert FIGURES <= figures.keys(), sorted(FIGURES - figures.keys())
    assert all(isinstance(f["value"], int | float) and f["value"] == f["value"] for f in figures.values())
    assert figures["questions_scored"]["value"] == 2 and figures["technical_gaps"]["value"] == 0
    assert figures["search_p95"]["status"] in ("met", "MISSED") and figures["runner_peak_rss"]["value"] > 50
    for name in ("runner_peak_rss", "index_build", "search_p95"):
        assert f"{name} " in done.stdout
    assert set(data["pids"]) == {"simulator", "prefect_server", "runner_full", "runner_growth"}
    for pid in data["pids"].values():  # each started as the leader of its own process group
        assert not procstats.alive(pid) and not procstats.group_members(pid), pid
    assert "work directory kept" not in done.stdout
