"""What a memory's manifest costs at a real user's size (issue 22).

    python bench/manifest.py [--images 1200] [--image-kb 1100] [--states 200] [--state-mb 10]
        [--sessions 200] [--dialog-kb 20] [--notes 400] [--note-kb 1] [--index-mb 8] [--scale 1]
        [--repeat 3] [--cold] [--cache DIR] [--clean]

A synthetic user's memory in the shape of ReMe's workspace (random bytes, sizes drawn around the
given means with a fixed seed): ``--images`` saved attachments under
``workspace/session/images/<session>/``, ``--states`` memory agents' states under
``workspace/mem_session/agentscope/``, one dialog per session under ``workspace/session/dialog/``,
``--notes`` notes under ``workspace/daily/``, ReMe's index state (4 files, ``--index-mb`` in all)
under ``workspace/metadata/``, ``sessions/*.json`` and ``index-response.json``. The defaults are
2,205 files, 3.3 GB. ``--scale`` multiplies every count and size (at least 1), for a smoke test. It is
generated once, cached under ``bench/.cache/manifest-<parameters>/`` as an earlier run (with a
minimal run.json), and ``--clean`` deletes it after measuring.

Timed ``--repeat`` times, files in the page cache (all read once first): ``memory_manifest.build``
(what ``tasks/index.py`` does when the memory completes) and ``reuse.copy_memory`` from that run
into a new one (what ``--reuse`` does: every file checked while copied; write-once files are hard
links). Also the size of memory_usage.json with and without its manifest. ``--cold``: the same
again, the page cache emptied before each timing (``/proc/sys/vm/drop_caches`` as root; where that
is refused, each file of the memory evicted with ``posix_fadvise(DONTNEED)``); the line
``cold_eviction`` says which. One ``name value unit`` line per figure, medians over the repeats
(min and max too for the wall times); MB = 10^6 bytes.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import astuple, dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from mobilemem import memory_manifest, reuse
from mobilemem.config import load_config
from mobilemem.records import IndexResponseFile, MemoryUsageFile, RunFile, SessionFile, Usage
from mobilemem.rundir import RunDir, UserDir, write_record

sys.path.insert(0, str(Path(__file__).resolve().parent))

from generated import ensure_cached  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
MB, KB = 1_000_000, 1_000
USER, SEED = 0, 7
METADATA = ("keyword_index/bm25_default.pkl", "file_store/file_chunks_default_v1.jsonl.zst",
            "file_graph/default.jsonl.zst", "file_catalog/digest.jsonl.zst")
DROP_CACHES = Path("/proc/sys/vm/drop_caches")
SPEC_OPTIONS = (  # MemorySpec's, in its order: counts, and mean sizes in the unit named
    ("--images", int, 1200, "saved images"), ("--image-kb", float, 1100, "mean image size, kB"),
    ("--states", int, 200, "memory agents' states"), ("--state-mb", float, 10, "mean agent state size, MB"),
    ("--sessions", int, 200, "session records and dialogs"), ("--dialog-kb", float, 20, "mean dialog size, kB"),
    ("--notes", int, 400, "notes under workspace/daily/"), ("--note-kb", float, 1, "mean note size, kB"),
    ("--index-mb", float, 8, "ReMe's index state, MB in all"))


@dataclass(frozen=True)
class MemorySpec:
    """Counts, and mean sizes in bytes."""

    images: int
    image_bytes: int
    states: int
    state_bytes: int
    sessions: int
    dialog_bytes: int
    notes: int
    note_bytes: int
    index_bytes: int

    def scaled(self, scale: float) -> MemorySpec:
        return MemorySpec(*(max(1, round(value * scale)) for value in astuple(self)))

    def key(self) -> str:
        return "manifest-" + "-".join(str(value) for value in astuple(self)) + f"-seed{SEED}"


def _write(rng: random.Random, path: Path, mean: int) -> None:
    """Random bytes, 0.75-1.25 times `mean` (random: no file system compresses or dedups them)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(rng.randbytes(max(1, round(mean * rng.uniform(0.75, 1.25)))))


def _workspace(spec: MemorySpec, workspace: Path, rng: random.Random) -> None:
    sessions = [f"{USER}_{n + 1}" for n in range(spec.sessions)]
    for n in range(spec.images):
        _write(rng, workspace / "session" / "images" / sessions[n % spec.sessions] / f"{n}.jpg", spec.image_bytes)
    for _ in range(spec.states):
        _write(rng, workspace / "mem_session" / "agentscope" / f"{uuid.UUID(int=rng.getrandbits(128))}.jsonl",
               spec.state_bytes)
    for session in sessions:
        _write(rng, workspace / "session" / "dialog" / f"{session}.jsonl", spec.dialog_bytes)
    first = date(2024, 3, 17)
    for n in range(spec.notes):  # a day's note, and a topic note of that day
        day = (first + timedelta(days=n // 2)).isoformat()
        _write(rng, workspace / "daily" / (f"{day}.md" if n % 2 == 0 else f"{day}/topic-{n}.md"), spec.note_bytes)
    for relative in METADATA:
        _write(rng, workspace / "metadata" / relative, spec.index_bytes // len(METADATA))


def _run_file(users: list[int]) -> RunFile:
    """The least run.json that RunReader.open accepts."""
    now = datetime.now(UTC)
    return RunFile(args={"dataset": "synthetic", "output": "synthetic"}, config=load_config(), package_versions={},
                   git_commit=None, git_dirty=None, dataset_path="synthetic",
                   dataset_revision=None, data_sha256="0" * 64, questions_sha256="0" * 64, prompt_sha256={},
                   started_at=now, finished_at=now, simulated=True, state="completed", users=users)


def generate(spec: MemorySpec, root: Path) -> None:
    run, now = RunDir(root), datetime.now(UTC)
    user = run.user(USER)
    _workspace(spec, user.workspace, random.Random(SEED))
    for n in range(spec.sessions):
        write_record(user.session(f"{USER}_{n + 1}"), SessionFile(
            started_at=now, finished_at=now, user_id=USER, session_id=f"{USER}_{n + 1}", success=True,
            usage=Usage(), requests=[]))
    write_record(user.index_response, IndexResponseFile(started_at=now, finished_at=now, user_id=USER, success=True))
    write_record(run.run, _run_file([USER]))


def ensure_memory(spec: MemorySpec, cache: Path) -> tuple[Path, float]:
    """The cached earlier run (generated first when missing) and the seconds generating took."""
    return ensure_cached(cache / spec.key(), lambda partial: generate(spec, partial), str(spec))


def evict(user: UserDir) -> str:
    """Empty the page cache of the memory's files; how it was done."""
    os.sync()
    try:
        DROP_CACHES.write_text("3\n")
        return "drop_caches"
    except OSError:  # not root, or a container's read-only /proc/sys
        for path in memory_manifest.memory_files(user):
            fd = os.open(path, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
        return "posix_fadvise"


def _timed(step: Callable[[], object]) -> tuple[float, float, object]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = step()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def _copy(memory: reuse.Memory, target: RunDir) -> int:
    """copy_memory into `target`; the files it hard-linked. RuntimeError when the check refused it."""
    if (reason := reuse.copy_memory(memory, target, USER)) is not None:
        raise RuntimeError(f"the intact memory was refused: {reason}")
    return sum(1 for p in target.user(USER).root.rglob("*") if p.is_file() and p.stat().st_nlink > 1)


def _summary(name: str, runs: list[tuple[float, float]], total_mb: float) -> list[tuple[str, float, str]]:
    walls = [wall for wall, _ in runs]
    wall = statistics.median(walls)
    return [(f"{name}_wall", wall, "s"), (f"{name}_wall_min", min(walls), "s"), (f"{name}_wall_max", max(walls), "s"),
            (f"{name}_cpu", statistics.median(cpu for _, cpu in runs), "s"), (f"{name}_rate", total_mb / wall, "MB/s")]


def _timings(root: Path, usage: MemoryUsageFile, repeat: int, cold: bool) -> tuple[list, str | None]:
    """(figures, the eviction used) of `repeat` builds and copies, interleaved."""
    user, total = RunDir(root).user(USER), sum(entry.size for entry in usage.manifest or ()) / MB
    memory = reuse.Memory(reuse.EarlierRun.open(root), usage)
    prefix, method, builds, copies, linked = "cold_" if cold else "", None, [], [], 0
    for n in range(repeat):
        if cold:
            method = evict(user)
        wall, cpu, _ = _timed(lambda: memory_manifest.build(user))
        builds.append((wall, cpu))
        target = RunDir(root.with_name(f".{root.name}.copy-{n}"))
        if cold:
            evict(user)
        try:
            wall, cpu, linked = _timed(lambda: _copy(memory, target))
            copies.append((wall, cpu))
        finally:
            shutil.rmtree(target.root, ignore_errors=True)
    figures = [*_summary(f"{prefix}build", builds, total), *_summary(f"{prefix}copy_memory", copies, total)]
    return [*figures, (f"{prefix}copy_memory_hard_links", linked, "files")], method


def measure(root: Path, repeat: int, cold: bool) -> list[tuple[str, object, str]]:
    user = RunDir(root).user(USER)
    manifest = memory_manifest.build(user)  # reads every file once: the page cache is warm
    usage = MemoryUsageFile(user_id=USER, sessions=len(list(user.sessions.glob("*.json"))), usage=Usage(),
                            manifest=manifest)
    write_record(user.memory_usage, usage)
    with_manifest = user.memory_usage.stat().st_size
    without = len(usage.model_copy(update={"manifest": None}).model_dump_json(indent=2)) + 1  # as write_record
    figures = [("memory_files", len(manifest), "files"), ("memory_bytes", sum(e.size for e in manifest) / MB, "MB"),
               ("memory_usage_json", with_manifest / MB, "MB"),
               ("manifest_share_of_it", (with_manifest - without) / MB, "MB"), ("cpus", os.cpu_count() or 0, "cpus")]
    warm, _ = _timings(root, usage, repeat, cold=False)
    figures += warm
    if cold:
        chilled, method = _timings(root, usage, repeat, cold=True)
        figures += [("cold_eviction", method, "method"), *chilled]
    return figures


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python bench/manifest.py", description=__doc__.splitlines()[0])
    add = parser.add_argument
    for flag, kind, default, what in SPEC_OPTIONS:
        add(flag, type=kind, default=default, help=f"{what} (default {default:g})")
    add("--scale", type=float, default=1.0, help="multiplies every count and size (default 1)")
    add("--repeat", type=int, default=3, help="timings of each kind (default 3)")
    add("--cold", action="store_true", help="also time with the page cache emptied before each timing")
    add("--cache", type=Path, default=ROOT / "bench" / ".cache", help="cache folder (default bench/.cache)")
    add("--clean", action="store_true", help="delete the generated memory after measuring")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    unit = {"kb": KB, "mb": MB}
    spec = MemorySpec(*(round(getattr(args, flag[2:].replace("-", "_")) * unit.get(flag.rsplit("-", 1)[-1], 1))
                        for flag, *_ in SPEC_OPTIONS))
    root, seconds = ensure_memory(spec.scaled(args.scale), args.cache)
    try:
        figures = [("generate", seconds, "s"), *measure(root, args.repeat, args.cold)]
    finally:
        if args.clean:
            shutil.rmtree(root, ignore_errors=True)
    for name, value, unit in figures:
        print(f"{name} {value:.3f} {unit}" if isinstance(value, float) else f"{name} {value} {unit}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
