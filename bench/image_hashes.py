"""What preflight's image content hashes cost at the real dataset's scale (issue 22).

    python bench/image_hashes.py [--repeat 3] [bench/fullsize.py's dataset options: --sessions 200
        --turns 48 --images 6 --size 2048 --noise 24 --questions 20 --cache DIR]

On ``bench/fullsize.py``'s full-size user's dataset (generated once, cached under ``bench/.cache/``):
``load_dataset`` (preflight: every record checked, every image read once, decoded in full and
hashed, without the verified-image cache) timed ``--repeat`` times, interleaved with the same
preflight whose sha256 is a no-op and with sha256 alone over every image's bytes (one thread):
wall and CPU seconds (this process, all threads; CPU is less disturbed by other work on the
machine). The files are read once before the first timing, so every figure is of warm
page-cache reads: a first preflight after a reboot also waits for the disk. One
``name value unit`` line per figure, medians over the repeats; MB = 10^6 bytes.
"""

from __future__ import annotations

import hashlib
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

from mobilemem import images
from mobilemem.dataset import Dataset, load_dataset

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fullsize  # noqa: E402

MB = 1_000_000


class _NoHash:
    """sha256 replaced by nothing: preflight as it would be without the content hashes."""

    def __init__(self, data: bytes = b"") -> None:
        pass

    def hexdigest(self) -> str:
        return ""


def _timed(step: Callable[[], object]) -> tuple[float, float]:
    """(wall, CPU) seconds of `step`; CPU is this process's, all threads, less sensitive to a busy machine."""
    wall, cpu = time.perf_counter(), time.process_time()
    step()
    return time.perf_counter() - wall, time.process_time() - cpu


def _hash_all(paths: list[Path]) -> None:
    for path in paths:
        hashlib.sha256(path.read_bytes()).hexdigest()


def _preflight(root: Path) -> Dataset:
    return load_dataset(root, image_cache=False)


def _without_hashes(root: Path) -> Dataset:
    with mock.patch.object(images, "hashlib", SimpleNamespace(sha256=_NoHash)):  # images.py's name only
        return _preflight(root)


def measure(root: Path, repeat: int) -> list[tuple[str, float, str]]:
    dataset = _preflight(root)  # warms the page cache
    paths = sorted(dataset.root / p for p in dataset.image_sha256)
    total = sum(p.stat().st_size for p in paths) / MB
    kinds: dict[str, Callable[[], object]] = {
        "preflight_with_hashes": lambda: _preflight(root), "preflight_without_hashes": lambda: _without_hashes(root),
        "sha256_alone_one_thread": lambda: _hash_all(paths)}
    timings: dict[str, list[tuple[float, float]]] = {name: [] for name in kinds}
    for _ in range(repeat):  # interleaved, so that a busy spell of the machine falls on every kind
        for name, step in kinds.items():
            timings[name].append(_timed(step))
    figures = [("images", len(paths), "files"), ("image_bytes", total, "MB"),
               ("decode_threads", images.DECODE_THREADS, "threads"), ("cpus", os.cpu_count() or 0, "cpus")]
    for name, runs in timings.items():
        wall, cpu = statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs)
        figures += [(f"{name}_wall", wall, "s"), (f"{name}_cpu", cpu, "s"), (f"{name}_rate", total / wall, "MB/s")]
    with_cpu, without_cpu = (statistics.median(c for _, c in timings[n])
                             for n in ("preflight_with_hashes", "preflight_without_hashes"))
    return [*figures, ("hashing_share_of_cpu", (with_cpu - without_cpu) / with_cpu * 100, "%")]


def main(argv: Sequence[str] | None = None) -> int:
    """fullsize.py's dataset options (its other options are accepted and ignored) and --repeat."""
    root, repeat = fullsize.dataset_and_repeat(argv, "python bench/image_hashes.py", __doc__.splitlines()[0])
    for name, value, unit in measure(root, repeat):
        print(f"{name} {value:.3f} {unit}" if isinstance(value, float) else f"{name} {value} {unit}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
