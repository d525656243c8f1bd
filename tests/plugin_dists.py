"""A candidate plug-in installed for one test the way pip installs one: a `*.dist-info` folder with its
`entry_points.txt` (group `mobilemem.candidates`) beside the plug-in's module, on `sys.path`, so that
`importlib.metadata` finds it exactly as it finds an installed distribution."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from mobilemem import candidates


def install(monkeypatch: pytest.MonkeyPatch, folder: Path, name: str, modules: dict[str, str],
            points: dict[str, str], version: str = "0.1.0") -> None:
    """`modules`: module name -> source; `points`: candidate name -> `module:object`."""
    folder.mkdir(parents=True, exist_ok=True)
    for module, source in modules.items():
        (folder / f"{module}.py").write_text(source, encoding="utf-8")
        sys.modules.pop(module, None)  # another test's module of the same name must not stand in for this one
    info = folder / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", encoding="utf-8")
    lines = "".join(f"{kind} = {target}\n" for kind, target in points.items())
    (info / "entry_points.txt").write_text(f"[{candidates.GROUP}]\n{lines}", encoding="utf-8")
    monkeypatch.syspath_prepend(str(folder))
    candidates.plugin.cache_clear()
    importlib.invalidate_caches()
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
