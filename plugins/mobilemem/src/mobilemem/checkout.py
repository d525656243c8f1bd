"""Whether this process runs from a mobilemem-bench checkout, and where the checkout's root is.

A checkout is the folder that holds the `tasks` package mobilemem-bench is running (the one that
`import tasks` finds, editable install or not), when that folder also holds a `pyproject.toml`
naming the `mobilemem-bench` distribution and the user-editable `config.yaml`. An install without
the checkout (every package in site-packages) has no root: code locations are then library-relative
and the defaults are the copy packaged in `mobilemem`. Nothing here imports `tasks` or `flows`.
"""

from __future__ import annotations

import functools
import importlib.util
import tomllib
from pathlib import Path

PROJECT = "mobilemem-bench"
RUNNER_PACKAGES = ("tasks", "flows")  # mobilemem-bench's own packages, at the checkout's root


def checkout_root(package_dir: Path) -> Path | None:
    """The checkout holding `package_dir` (mobilemem-bench's `tasks` or `flows` folder), if any."""
    root = package_dir.parent
    try:
        project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8")).get("project")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    if not isinstance(project, dict) or project.get("name") != PROJECT or not (root / "config.yaml").is_file():
        return None
    return root


@functools.cache
def repository_root() -> Path | None:
    """This process's checkout (found once): the root of the `tasks`/`flows` packages it runs."""
    for name in RUNNER_PACKAGES:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):  # ValueError: a module in sys.modules without a spec
            continue
        if spec is not None and spec.origin:
            root = checkout_root(Path(spec.origin).absolute().parent)
            if root is not None:
                return root
    return None
