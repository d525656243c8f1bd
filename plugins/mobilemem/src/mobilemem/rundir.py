"""Paths of the run directory (DESIGN §5) and the only code that writes its JSON files.

Nothing else builds run-directory paths by concatenation: ask `RunDir`, `UserDir`, `QuestionDir`.
Every JSON file is written atomically (temporary file in the same folder, fsync, `os.replace`);
JSONL files are appended one whole line per `write()` under one process-wide lock.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

from mobilemem.records import DEFAULT_KIND, ErrorLine, RecordBase
from mobilemem.errors import ConfigError

R = TypeVar("R", bound=BaseModel)

_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]")
_append_lock = threading.Lock()
_UMASK = os.umask(0)
os.umask(_UMASK)
FILE_MODE = 0o666 & ~_UMASK  # what open() would give; mkstemp's 0600 would hide files from readers


def model_dir_name(model: str) -> str:
    """The run folder's name for a model: every character outside [A-Za-z0-9._-] becomes `_`."""
    name = _SAFE_NAME.sub("_", model)
    return "_" * len(name) if set(name) <= {"."} else name


@dataclass(frozen=True)
class QuestionDir:
    root: Path

    @property
    def job(self) -> Path:
        return self.root / "job.json"

    @property
    def answer_response(self) -> Path:
        return self.root / "answer-response.json"

    @property
    def judgment(self) -> Path:
        return self.root / "judgment.json"

    @property
    def metrics(self) -> Path:
        return self.root / "metrics.json"

    @property
    def attribution(self) -> Path:
        return self.root / "attribution.json"

    @property
    def error(self) -> Path:
        return self.root / "error.json"


@dataclass(frozen=True)
class UserDir:
    root: Path

    @property
    def workspace(self) -> Path:
        return self.root / "workspace"

    @property
    def sessions(self) -> Path:
        return self.root / "sessions"

    def session(self, session_id: str) -> Path:
        return self.sessions / f"{session_id}.json"

    @property
    def index_response(self) -> Path:
        return self.root / "index-response.json"

    @property
    def memory_usage(self) -> Path:
        return self.root / "memory_usage.json"

    @property
    def reuse(self) -> Path:
        return self.root / "reuse.json"

    def question(self, question_id: str) -> QuestionDir:
        return QuestionDir(self.root / "questions" / question_id)

    @property
    def host(self) -> Path:
        """Where a deployment run evaluated the user (`--workers`)."""
        return self.root / "host.json"

    @property
    def progress(self) -> Path:
        """A deployment run's progress and heartbeat (`--workers`)."""
        return self.root / "progress.json"


CLAIM_FILE = ".claim"  # the pid of the process starting the run, until run.json exists


@dataclass(frozen=True)
class RunDir:
    root: Path

    @classmethod
    def for_output(cls, output: Path, model: str, candidate: str = DEFAULT_KIND) -> RunDir:
        """OUTPUT/mobilemem/<model>, or <model>-<candidate> for a baseline (DESIGN §10)."""
        suffix = "" if candidate == DEFAULT_KIND else f"-{candidate}"
        return cls(Path(output) / "mobilemem" / (model_dir_name(model) + suffix))

    @property
    def claim_file(self) -> Path:
        return self.root / CLAIM_FILE

    def claim(self) -> None:
        """Take the run folder for this process (an atomic mkdir), or refuse in one line, changing
        nothing: it exists (another run's, or another live process is starting in it), or it cannot
        be created. Claiming again from the claiming process is a no-op."""
        starting = {self.claim_file.name, self.prefect_server_log.name}  # what a run holds before run.json
        if self.claim_file.is_file() and self._claimed_by() == os.getpid() and {
                p.name for p in self.root.iterdir()} <= starting:
            return
        if self.root.exists() or self.root.is_symlink():
            raise ConfigError(self._taken())
        existing = next(p for p in self.root.parents if p.exists())
        if not existing.is_dir():
            raise ConfigError(f"cannot create the run directory {self.root}: {existing} is not a directory")
        try:
            self.root.parent.mkdir(parents=True, exist_ok=True)
            self.root.mkdir()
            self.claim_file.write_text(str(os.getpid()), encoding="ascii")
        except FileExistsError:
            raise ConfigError(self._taken()) from None
        except OSError as exc:
            raise ConfigError(f"cannot create the run directory {self.root}: {exc.strerror or exc}") from None

    def _claimed_by(self) -> int | None:
        try:
            return int(self.claim_file.read_text(encoding="ascii").strip())
        except (OSError, ValueError):
            return None

    def _taken(self) -> str:
        pid = self._claimed_by()
        if pid is not None:
            return f"{self.root} is being started by another run (pid {pid}): choose another --output"
        return f"{self.root} already exists: choose another --output or remove it"

    def release_claim(self) -> None:
        """Once run.json is written, the run directory is the run's own: the claim goes."""
        self.claim_file.unlink(missing_ok=True)

    def abandon(self) -> None:
        """A run that ended before its run.json was written: its claim goes, and so does its folder
        when nothing else is in it, so the same --output can be used again."""
        self.release_claim()
        self.prefect_server_log.unlink(missing_ok=True)
        try:
            self.root.rmdir()
        except OSError:  # something else is in it (or it is gone): left as it is
            pass

    @property
    def prefect_server_log(self) -> Path:
        """The output of Prefect's embedded server, when the run started one."""
        return self.root / "prefect-server.log"

    @property
    def run(self) -> Path:
        return self.root / "run.json"

    def is_run(self) -> bool:
        """Whether the folder holds a run: its run.json (read without trust by `run_reader.RunReader`)."""
        return self.run.is_file()

    @property
    def report(self) -> Path:
        return self.root / "report.html"

    @property
    def judge_settings(self) -> Path:
        return self.root / "judge-settings.json"

    @property
    def rejudge(self) -> Path:
        return self.root / "rejudge.json"

    @property
    def summary(self) -> Path:
        return self.root / "summary.json"

    @property
    def results(self) -> Path:
        return self.root / "results.jsonl"

    @property
    def log(self) -> Path:
        return self.root / "run.log"

    @property
    def errors(self) -> Path:
        return self.root / "errors.jsonl"

    @property
    def cleanup_errors(self) -> Path:
        return self.root / "cleanup-errors.jsonl"

    def user(self, user_id: int) -> UserDir:
        return UserDir(self.root / "users" / str(user_id))


def compare_files(folder: Path, name: str) -> tuple[Path, Path]:
    """The JSON and HTML files of a `compare` written into `folder` (a run directory or `--out`)."""
    return folder / f"compare-{name}.json", folder / f"compare-{name}.html"


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write `data` to `path` so that readers see either the old file or the whole new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), FILE_MODE)
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_record(path: Path, record: RecordBase) -> None:
    write_bytes_atomic(path, record.model_dump_json(indent=2).encode() + b"\n")


def read_record(path: Path, model: type[R]) -> R:
    return model.model_validate_json(path.read_bytes())


def append_line(path: Path, record: BaseModel) -> None:
    """Append one JSON line with a single `write()`; safe across threads of this process."""
    data = record.model_dump_json().encode() + b"\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    with _append_lock:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            size = os.fstat(fd).st_size
            try:
                if os.write(fd, data) != len(data):
                    raise OSError(errno.ENOSPC, "short write: no space left for the whole line")
            except OSError:
                os.ftruncate(fd, size)  # never leave half a line behind
                raise
        finally:
            os.close(fd)


def append_error(run: RunDir, line: ErrorLine) -> bool:
    """Record one error event; if even that cannot be written (a full disk), say so in the log and
    go on: failing to record a failure must not fail anything else."""
    try:
        append_line(run.cleanup_errors if line.stage == "cleanup" else run.errors, line)
    except (OSError, ValueError) as exc:  # ValueError: a field that cannot be encoded
        logging.getLogger(__name__).error("could not record error %s (%s: %s): %s", line.id, line.stage,
                                          line.failure.label, getattr(exc, "strerror", None) or exc)
        return False
    return True


def read_lines(path: Path, model: type[R]) -> list[R]:
    if not path.exists():
        return []
    return [model.model_validate_json(line) for line in path.read_bytes().splitlines() if line.strip()]
