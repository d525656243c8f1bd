"""What a run's preflight costs at the real dataset's scale, cold and with the verified-image cache.

    python bench/preflight.py [--repeat 3] [bench/fullsize.py's dataset options: --sessions 200
        --turns 48 --images 6 --size 2048 --noise 24 --questions 20 --cache DIR]

On ``bench/fullsize.py``'s full-size user's dataset (generated once, cached under ``bench/.cache/``):
``lifecycle.run_plan.preflight`` of a simulated run (configuration, dataset records, image index,
every image checked, the run directory claimed; its modules imported before the first timing),
timed ``--repeat`` times, interleaved:
- ``cold``: an empty image cache (a new ``MOBILEMEM_CACHE_DIR``), every image decoded by
  ``DECODE_THREADS`` threads (one per core);
- ``cold_one_thread``: the same with one thread;
- ``warm``: the cache the last cold run filled, the dataset unchanged.
The files are read once before the first timing, so every figure is of warm page-cache reads: a
first preflight after a reboot also waits for the disk. Wall and CPU seconds (this process, all
threads), one ``name value unit`` line per figure: medians over the repeats, and the least wall
time (the run least disturbed by other work on a shared machine). ``cold_speedup`` is
``cold_one_thread`` / ``cold`` of the medians, ``cold_speedup_of_minima`` of the least times.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fullsize  # noqa: E402
from lifecycle import run_plan  # noqa: E402
from mobilemem import images  # noqa: E402
from mobilemem.records import RunRequest  # noqa: E402

MB = 1_000_000


def _timed(step: Callable[[], object]) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    step()
    return time.perf_counter() - wall, time.process_time() - cpu


class _Preflights:
    """Preflights of one dataset, each to a run directory of its own, with a chosen image cache."""

    def __init__(self, root: Path, work: Path) -> None:
        self.root, self.work, self.count = root, work, 0

    def run(self, cache: Path, threads: int) -> int:
        """One preflight; the number of images it checked."""
        self.count += 1
        request = RunRequest(dataset=self.root, output=self.work / f"out{self.count}", simulate=True)
        with mock.patch.dict(os.environ, {"MOBILEMEM_CACHE_DIR": str(cache)}), \
                mock.patch.object(images, "DECODE_THREADS", threads):
            plan = run_plan.preflight(request)
        plan.run.release_claim()
        return len(plan.dataset.image_sha256)

    def fresh_cache(self) -> Path:
        return Path(tempfile.mkdtemp(prefix="cache-", dir=self.work))


def measure(root: Path, repeat: int, work: Path) -> list[tuple[str, float | int, str]]:
    preflights, threads = _Preflights(root, work), images.DECODE_THREADS
    count = preflights.run(preflights.fresh_cache(), 1)  # reads every file once: warm page cache
    total = sum(p.stat().st_size for p in (root / "image").rglob("*") if p.is_file()) / MB
    timings: dict[str, list[tuple[float, float]]] = {"cold": [], "cold_one_thread": [], "warm": []}
    for _ in range(repeat):
        cache = preflights.fresh_cache()
        timings["cold"].append(_timed(lambda: preflights.run(cache, threads)))
        timings["warm"].append(_timed(lambda: preflights.run(cache, threads)))
        timings["cold_one_thread"].append(_timed(lambda: preflights.run(preflights.fresh_cache(), 1)))
    figures: list[tuple[str, float | int, str]] = [
        ("images", count, "files"), ("image_bytes", total, "MB"),
        ("decode_threads", threads, "threads"), ("cpus", os.cpu_count() or 0, "cpus")]
    for name, runs in timings.items():
        figures += [(f"{name}_wall", statistics.median(w for w, _ in runs), "s"),
                    (f"{name}_wall_min", min(w for w, _ in runs), "s"),
                    (f"{name}_cpu", statistics.median(c for _, c in runs), "s")]
    walls = {name: statistics.median(w for w, _ in runs) for name, runs in timings.items()}
    least = {name: min(w for w, _ in runs) for name, runs in timings.items()}
    return [*figures, ("cold_speedup", walls["cold_one_thread"] / walls["cold"], "x"),
            ("cold_speedup_of_minima", least["cold_one_thread"] / least["cold"], "x")]


def main(argv: Sequence[str] | None = None) -> int:
    """fullsize.py's dataset options (its other options are accepted and ignored) and --repeat."""
    root, repeat = fullsize.dataset_and_repeat(argv, "python bench/preflight.py", __doc__.splitlines()[0])
    with tempfile.TemporaryDirectory(prefix="mobilemem-preflight-") as work:
        figures = measure(root, repeat, Path(work))
    for name, value, unit in figures:
        print(f"{name} {value:.3f} {unit}" if isinstance(value, float) else f"{name} {value} {unit}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
