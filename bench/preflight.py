"""What a run's preflight costs at the real dataset's scale, cold and with the verified-image cache.

    python bench/preflight.py [--repeat 3] [bench/fullsize.py's dataset options: --sessions 200
        --turns 48 --images 6 --size 2048 --noise 24 --questions 20 --cache DIR]

On ``bench/fullsize.py``'s full-size user's dataset (generated once, cached under ``bench/.cache/``):
``lifecycle.run_setup.preflight`` of a simulated run (configuration, dataset records, image index,
every image checked, the run directory claimed; Prefect is imported before the first timing),
timed ``--repeat`` times, interleaved:
- ``cold``: an empty image cache (a new ``MOBILEMEM_CACHE_DIR``), every image decoded on
  ``DECODE_WORKERS`` processes;
- ``cold_one_worker``: the same with one worker (the same code, checking in this process);
- ``cold_threads``: the same with the decoding as it was before the processes, ``DECODE_WORKERS``
  threads in this process (Pillow releases the GIL while it decodes a block);
- ``warm``: the cache the last cold run filled, the dataset unchanged.
The files are read once before the first timing, so every figure is of warm page-cache reads: a
first preflight after a reboot also waits for the disk. Wall and CPU seconds (this process and its
finished children). One ``name value unit`` line per figure, medians over the repeats.
"""

from __future__ import annotations

import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fullsize  # noqa: E402
from lifecycle import run_setup  # noqa: E402
from mobilemem import image_cache, image_pool, images  # noqa: E402
from mobilemem.records import RunRequest  # noqa: E402
from PIL import Image  # noqa: E402

MB = 1_000_000


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _timed(step: Callable[[], object]) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), _cpu()
    step()
    return time.perf_counter() - wall, _cpu() - cpu


def _threaded(paths: Sequence[Path]) -> dict[Path, image_pool.Checked]:
    """The decoding before the processes: `DECODE_WORKERS` threads, the bomb warning an error around them."""
    def checked(path: Path) -> image_pool.Checked:
        try:
            return images._inspect(path)
        except images.ImageProblem as exc:
            return exc

    Image.init()
    with images._bomb_warnings_as_errors(), ThreadPoolExecutor(image_pool.DECODE_WORKERS) as pool:
        return dict(zip(paths, pool.map(checked, paths), strict=True))


class _Preflights:
    """Preflights of one dataset, each to a run directory of its own, with a chosen image cache."""

    def __init__(self, root: Path, work: Path) -> None:
        self.root, self.work, self.count = root, work, 0

    def run(self, cache: Path, workers: int, threads: bool = False) -> int:
        """One preflight; the number of images it checked."""
        self.count += 1
        request = RunRequest(dataset=self.root, output=self.work / f"out{self.count}", simulate=True)
        decode = _threaded if threads else image_pool.inspect_images
        with mock.patch.dict(os.environ, {"MOBILEMEM_CACHE_DIR": str(cache)}), \
                mock.patch.object(image_pool, "DECODE_WORKERS", workers), \
                mock.patch.object(image_cache, "inspect_images", decode):
            plan = run_setup.preflight(request)
        plan.run.release_claim()
        return len(plan.dataset.image_sha256)

    def fresh_cache(self) -> Path:
        return Path(tempfile.mkdtemp(prefix="cache-", dir=self.work))


def measure(root: Path, repeat: int, work: Path) -> list[tuple[str, float | int, str]]:
    preflights, workers = _Preflights(root, work), image_pool.DECODE_WORKERS
    count = preflights.run(preflights.fresh_cache(), 1)  # reads every file once: warm page cache
    total = sum(p.stat().st_size for p in (root / "image").rglob("*") if p.is_file()) / MB
    timings: dict[str, list[tuple[float, float]]] = {"cold": [], "cold_one_worker": [], "cold_threads": [],
                                                     "warm": []}
    for _ in range(repeat):
        cache = preflights.fresh_cache()
        timings["cold"].append(_timed(lambda: preflights.run(cache, workers)))
        timings["warm"].append(_timed(lambda: preflights.run(cache, workers)))
        timings["cold_one_worker"].append(_timed(lambda: preflights.run(preflights.fresh_cache(), 1)))
        timings["cold_threads"].append(_timed(lambda: preflights.run(preflights.fresh_cache(), workers, True)))
    figures: list[tuple[str, float | int, str]] = [
        ("images", count, "files"), ("image_bytes", total, "MB"),
        ("decode_workers", image_pool.DECODE_WORKERS, "processes"), ("cpus", os.cpu_count() or 0, "cpus")]
    for name, runs in timings.items():
        figures += [(f"{name}_wall", statistics.median(w for w, _ in runs), "s"),
                    (f"{name}_cpu", statistics.median(c for _, c in runs), "s")]
    walls = {name: statistics.median(w for w, _ in runs) for name, runs in timings.items()}
    return [*figures, ("cold_speedup", walls["cold_one_worker"] / walls["cold"], "x"),
            ("threads_speedup", walls["cold_one_worker"] / walls["cold_threads"], "x")]


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
