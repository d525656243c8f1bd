"""Preflight's image decoding on every core (DESIGN §3): `inspect_images`.

Threads do not scale here: Pillow releases the GIL while libjpeg decodes a block, but the rest
of a check (block hand-over, the JPEG marker walk, PNG's chunk checks) holds it (bench/README.md).
So the files are checked by worker processes, one per core (`DECODE_WORKERS`, at most 16), each
a fresh Python running this module's `serve`, fed one path at a time over a pipe. Not
multiprocessing's pools: their spawn and forkserver children first import the parent's
`__main__`, which for the runner is the flow module (Prefect and ReMe, seconds and hundreds of
MB). A worker runs `inspect_image` itself, with Pillow's bomb limit handed over, so a result and
its message are those of a check in this process. A worker that dies on a file (a decoder's
crash, memory) makes that file a problem and the next file goes to a new worker. Files of less
than `POOL_MIN_BYTES` in all are checked in this process, one at a time: starting the workers
would cost more.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path

from PIL import Image

import mobilemem
from mobilemem.images import ImageInfo, ImageProblem, inspect_image, printable

log = logging.getLogger(__name__)
DECODE_WORKERS = min(16, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
POOL_MIN_BYTES = 16_000_000  # about 20 photos; a worker's start is about 0.15 s of CPU
Checked = ImageInfo | ImageProblem
# this very package (the parent's, not another install), then the worker's loop
_WORKER = ("import sys; sys.argv[1] in sys.path or sys.path.insert(0, sys.argv[1]); "
           "from mobilemem.image_pool import serve; serve(sys.argv[2])")


def inspect_images(paths: Sequence[Path], workers: int | None = None) -> dict[Path, Checked]:
    """`inspect_image` of every path: the info, or the problem. `workers` processes (default: one
    per core, and none for files of less than `POOL_MIN_BYTES`); 0 or 1 checks them here."""
    if workers is None:
        workers = DECODE_WORKERS if _bytes_reach(paths, POOL_MIN_BYTES) else 1
    results: list[Checked | None] = [None] * len(paths)
    if workers > 1 and paths:
        _pool(paths, min(workers, len(paths)), results)
    for i, path in enumerate(paths):
        if results[i] is None:  # no pool, or no worker could start
            results[i] = _checked(path)
    return dict(zip(paths, results, strict=True))  # type: ignore[arg-type]


def _bytes_reach(paths: Sequence[Path], limit: int) -> bool:
    total = 0
    for path in paths:
        try:
            total += os.lstat(path).st_size
        except OSError:
            continue  # a problem, found by its check
        if total >= limit:
            return True
    return False


def _checked(path: Path) -> Checked:
    try:
        return inspect_image(path)
    except ImageProblem as exc:
        return exc


class _WorkerDied(Exception):
    pass


class _Worker:
    """One worker process (`serve`): a path in, its result out, one line each."""

    def __init__(self) -> None:
        self.stderr = tempfile.TemporaryFile()
        package_parent = str(Path(mobilemem.__file__).resolve().parents[1])
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _WORKER, package_parent, json.dumps(Image.MAX_IMAGE_PIXELS)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr)
        except BaseException:
            self.stderr.close()
            raise

    def check(self, path: Path) -> Checked:
        assert self.process.stdin is not None and self.process.stdout is not None
        try:
            self.process.stdin.write(json.dumps(str(path)).encode() + b"\n")  # the same cwd: the same messages
            self.process.stdin.flush()
            line = self.process.stdout.readline()
        except OSError:  # a broken pipe: the worker is gone
            line = b""
        if not line:
            raise _WorkerDied(self._death())
        reply = json.loads(line)
        return ImageInfo(**reply["info"]) if "info" in reply else ImageProblem(reply["problem"])

    def _death(self) -> str:
        status = self.process.wait()
        self.stderr.seek(0)
        last = next(reversed(self.stderr.read().decode(errors="replace").strip().splitlines()), "")
        return f"the image decoder process died checking it (exit status {status}){': ' if last else ''}" \
               f"{printable(last[-300:])}"

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()  # after its last reply it holds nothing worth a clean exit
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout, self.stderr):
            with contextlib.suppress(OSError):  # a path still buffered for a worker that is gone
                if stream is not None:
                    stream.close()


def _pool(paths: Sequence[Path], workers: int, results: list[Checked | None]) -> None:
    """Fill `results` by `workers` processes, one driving thread each; a result left None was not checked."""
    pending: Iterator[int] = iter(range(len(paths)))
    lock, stop = threading.Lock(), threading.Event()
    running: list[_Worker] = []

    def drive() -> None:
        worker = None
        try:
            while not stop.is_set():
                if worker is None:
                    worker = _Worker()
                    with lock:
                        running.append(worker)
                with lock:
                    i = next(pending, None)
                if i is None:
                    return
                try:
                    results[i] = worker.check(paths[i])
                except _WorkerDied as died:
                    results[i] = ImageProblem(str(died)) if not stop.is_set() else None
                    worker.close()
                    worker = None
        except OSError as exc:  # no worker could start: whatever is left is checked in this process
            log.warning("image checks: could not start a decoding process (%s); checking here", exc)
        finally:
            if worker is not None:
                worker.close()

    threads = [threading.Thread(target=drive, name=f"mobilemem-image-pool-{n}", daemon=True) for n in range(workers)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    except BaseException:  # Ctrl-C: no worker outlives the check
        stop.set()
        with lock:
            for worker in running:
                worker.process.kill()
        raise


def serve(max_image_pixels: str) -> None:
    """The worker: one JSON path per line in, one JSON result per line out, until stdin closes;
    `max_image_pixels` is the parent's bomb limit, as JSON."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C is the parent's to handle; it ends the workers
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # a stray print must not break the protocol
    Image.MAX_IMAGE_PIXELS = json.loads(max_image_pixels)
    Image.init()
    warnings.simplefilter("error", Image.DecompressionBombWarning)  # one thread: set once, as inspect_image does
    for line in sys.stdin:
        checked = _checked(Path(json.loads(line)))
        reply = ({"info": dataclasses.asdict(checked)} if isinstance(checked, ImageInfo)
                 else {"problem": str(checked)})
        replies.write(json.dumps(reply) + "\n")
        replies.flush()
