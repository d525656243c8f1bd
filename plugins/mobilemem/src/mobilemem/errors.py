"""Exception hierarchy and the one place where an exception becomes an error record.

    MobilememError
     ├── ConfigError        bad configuration file, key, type or flag
     ├── DatasetError       preflight found problems (carries every one of them)
     │    └── ManifestMismatch   the dataset folder differs from its mobilemem-manifest.json (one line)
     ├── NotARunDirectory   a path that names no run directory (mobilemem.run_reader)
     ├── DamagedFile        a run-directory file that cannot be trusted (mobilemem.run_reader)
     ├── ReportError        a run directory that cannot be reported (mobilemem_judge.analysis)
     ├── CompareRefused     two runs that cannot be compared (mobilemem_judge.analysis)
     └── ServerNotStarted   Prefect's embedded API server did not start (the console)

Outside it: `images.ImageProblem` (one image reference or file that cannot be used) and
`transport.IncompleteCompletion` (an httpx protocol error, so the openai client treats it as one).

What can fail, and how an exception is counted, is `mobilemem.failure_kinds`.

`error_record(exc, stage=..., ...)` turns any exception into an `ErrorLine`: a sanitized reason
and the (file, line, function) of each stack frame, never frame locals. `sanitize` scrubs API keys,
Authorization headers, credentials in URLs and base64 payloads out of any text.

Frame files are never absolute: this repository's files are relative to the checkout's root
(`tasks/answer.py`, `plugins/mobilemem/src/mobilemem/reme/answer.py`), installed libraries relative
to site-packages (`openai/_base_client.py`, or `mobilemem/reme/answer.py` for an install without
the checkout), the standard library relative to its folder (`asyncio/tasks.py`), anything else
by its name. `caller_frames()` is the runner's part of the current stack only (this repository's
files, or mobilemem-bench's packages when installed): what the usage recorder keeps of the code
that made a failed request, whose exception a library may have turned into a value.
"""

from __future__ import annotations

import functools
import inspect
import re
import sysconfig
import threading
import traceback
import uuid
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from mobilemem.checkout import RUNNER_PACKAGES, repository_root

if TYPE_CHECKING:
    from mobilemem.records import ErrorLine, ErrorStage, StackFrame


class MobilememError(Exception):
    """Base class of every error this project raises on purpose."""


class ConfigError(MobilememError):
    """A configuration file, key, value or command-line flag is wrong."""


class DatasetError(MobilememError):
    """Preflight found problems; `problems` holds one line per problem."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        count = len(self.problems)
        header = f"the dataset cannot be evaluated: {count} problem{'s' if count != 1 else ''}"
        super().__init__("\n".join([header, *self.problems]))


class ManifestMismatch(DatasetError):
    """The dataset folder differs from its manifest of file hashes (`mobilemem.dataset_manifest`), or
    the manifest cannot be read or written: one line, naming the file."""

    def __init__(self, line: str) -> None:
        self.problems = [line]
        MobilememError.__init__(self, line)


REDACTED = "[redacted]"
MAX_REASON_CHARS = 2_000

_known_secrets: set[str] = set()
_secrets_lock = threading.Lock()

_SCRUBBERS: tuple[tuple[re.Pattern[str], str], ...] = (
    # data URIs and long base64 runs (image payloads)
    (re.compile(r"data:[\w.+/-]+;base64,[A-Za-z0-9+/=_-]*"), f"data:{REDACTED}"),
    (re.compile(r"[A-Za-z0-9+/]{200,}={0,2}"), REDACTED),
    # header-style and assignment-style credentials
    (re.compile(r"(?i)\b(authorization|proxy-authorization)(['\"]?\s*[:=]\s*['\"]?)[^'\",}\n]+"), rf"\1\2{REDACTED}"),
    (re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]+"), f"Bearer {REDACTED}"),
    (re.compile(r"(?i)\bbasic\s+[A-Za-z0-9+/=]{8,}"), f"Basic {REDACTED}"),
    (
        re.compile(r"(?i)\b(api[_-]?key|x-api-key|access[_-]?token|secret|password)(['\"]?\s*[:=]\s*['\"]?)[^'\"\s,}&]+"),
        rf"\1\2{REDACTED}",
    ),
    # user:password@ in URLs
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s:@]+(?::[^/\s@]*)?@"), rf"\1{REDACTED}@"),
    # well-known key shapes
    (re.compile(r"\bsk-[A-Za-z0-9_-]{8,}"), REDACTED),
)


def register_secret(value: str | None) -> None:
    """Remember a credential so that `sanitize` removes it verbatim wherever it shows up."""
    if value and len(value) >= 4:
        with _secrets_lock:
            _known_secrets.add(value)


def registered_secrets() -> list[str]:
    """Every credential `register_secret` was given, longest first (so a secret holding another is
    replaced whole)."""
    with _secrets_lock:
        return sorted(_known_secrets, key=len, reverse=True)


def sanitize(text: str) -> str:
    """Return `text` without credentials or base64 payloads, cut to a readable length."""
    for secret in registered_secrets():
        text = text.replace(secret, REDACTED)
    for pattern, replacement in _SCRUBBERS:
        text = pattern.sub(replacement, text)
    if len(text) > MAX_REASON_CHARS:
        text = text[:MAX_REASON_CHARS] + " [cut]"
    return text


def describe(exc: BaseException) -> str:
    """A sanitized one-line reason: the exception's class and message, with its causes."""
    parts = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        message = str(current).strip()
        parts.append(f"{type(current).__name__}: {message}" if message else type(current).__name__)
        current = current.__cause__ or (None if current.__suppress_context__ else current.__context__)
    return sanitize(" <- ".join(parts))


Frame = tuple[str, int, str]  # (file, line, function)
_LIBRARY_DIRS = ("site-packages", "dist-packages")
_OWN_PACKAGES = frozenset({"mobilemem", "mobilemem_judge", *RUNNER_PACKAGES})
_STDLIB = Path(sysconfig.get_paths()["stdlib"])


@functools.lru_cache(maxsize=4096)
def code_location(filename: str) -> tuple[str, bool]:
    """(the file as errors.jsonl names it, whether it is this project's code) for a code filename."""
    path = Path(filename)
    library = [i for i, part in enumerate(path.parts) if part in _LIBRARY_DIRS]
    if library:  # checked first: a virtual environment may sit inside the checkout
        relative = path.parts[library[-1] + 1:]
        return "/".join(relative) or path.name, bool(relative) and relative[0] in _OWN_PACKAGES
    for root in _roots():
        if path.is_relative_to(root):
            return path.relative_to(root).as_posix(), True
    if path.is_relative_to(_STDLIB):
        return path.relative_to(_STDLIB).as_posix(), False
    return path.name, False


@functools.cache
def _roots() -> tuple[Path, ...]:
    """The checkout's root as found and with its links resolved (code files may name either)."""
    root = repository_root()
    return () if root is None else tuple(dict.fromkeys((root, root.resolve())))


def _frames(exc: BaseException) -> list[Frame]:
    return [(code_location(frame.filename)[0], frame.lineno or 0, frame.name)
            for frame in traceback.extract_tb(exc.__traceback__)]


def caller_frames(skip_file: str | None = None) -> list[Frame]:
    """The runner's frames of the current stack, outermost first (a traceback's order), without
    the frames of `skip_file`. Walks code objects only: no source lines, never a local."""
    found = []
    here = inspect.currentframe()
    frame = here.f_back if here is not None else None
    while frame is not None:
        code = frame.f_code
        if code.co_filename != skip_file:
            file, own = code_location(code.co_filename)
            if own:
                found.append((file, frame.f_lineno or 0, code.co_name))
        frame = frame.f_back
    return found[::-1]


def failure_record(
    *,
    stage: ErrorStage,
    error_type: str,
    reason: str,
    user_id: int | None = None,
    session_id: str | None = None,
    question_id: str | None = None,
    image_paths: Iterable[str] = (),
    frames: Iterable[StackFrame | Frame] = (),
) -> ErrorLine:
    """The errors.jsonl record of DESIGN §8 for a failure counted under `error_type` (its label: 'HTTP
    500', 'timeout', an exception's class; the reason is sanitized here); `frames` are where it
    happened: for a failed model request, the frames the usage recorder kept."""
    from mobilemem.records import ErrorLine, Failure, StackFrame

    return ErrorLine(
        id=uuid.uuid4().hex,
        time=datetime.now(UTC),
        stage=stage,
        user_id=user_id,
        session_id=session_id,
        question_id=question_id,
        image_paths=list(image_paths),
        failure=Failure.of_label(error_type, message=sanitize(reason), frames=[
            f if isinstance(f, StackFrame) else StackFrame(file=f[0], line=f[1], function=f[2]) for f in frames]),
    )


def error_record(exc: BaseException, *, stage: ErrorStage, **ids) -> ErrorLine:
    """Turn an exception into the errors.jsonl record of DESIGN §8 (no frame locals); it is counted
    under the exception's class, whatever its kind."""
    return failure_record(stage=stage, error_type=type(exc).__name__, reason=describe(exc), frames=_frames(exc),
                          **ids)
