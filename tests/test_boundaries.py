"""The import rules of STYLE.md §1, checked on the source, and the judge's isolation at run time."""

import ast
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

PLUGINS = {
    "mobilemem": ROOT / "plugins" / "mobilemem" / "src" / "mobilemem",
    "mobilemem_judge": ROOT / "plugins" / "mobilemem-judge" / "src" / "mobilemem_judge",
    "mobilemem_long_context": ROOT / "examples" / "long-context" / "src" / "mobilemem_long_context",  # a plug-in
}


def _imports(package_dir: Path) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in package_dir.rglob("*.py"):
        names = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
        found[str(path.relative_to(ROOT))] = names
    return found


def _offenders(package: str, forbidden: tuple[str, ...]) -> list[str]:
    return [f"{file}: {name}" for file, names in _imports(PLUGINS[package]).items() for name in names
            if name.split(".")[0] in forbidden or any(name.startswith(f + ".") or name == f for f in forbidden)]


RUNNER = ("cli", "flows", "tasks", "lifecycle")  # the layers above the plugins (test_import_graph orders them)


def test_plugins_never_import_prefect_or_the_runner():
    for package in PLUGINS:
        assert _offenders(package, ("prefect", *RUNNER)) == []


def test_mobilemem_never_imports_the_judge():
    assert _offenders("mobilemem", ("mobilemem_judge",)) == []


def test_a_candidate_plug_in_sees_the_candidate_side_only():
    """The example plug-in reaches neither the judge nor ReMe's candidate: only the contract and its
    tools (what it is handed at run time is checked in tests/e2e/test_candidate_plugin.py)."""
    assert _offenders("mobilemem_long_context", ("mobilemem_judge", "mobilemem.reme", "mobilemem.baselines")) == []


def test_judge_never_imports_the_candidate():
    assert _offenders("mobilemem_judge", ("mobilemem.reme", "reme")) == []


def _loaded_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print(' '.join(sys.modules))"
    return set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split())


def test_importing_mobilemem_is_light():
    loaded = _loaded_after("import mobilemem")
    assert not {m for m in loaded if m.split(".")[0] in {"agentscope", "prefect", "openai", "reme"}}


def test_importing_the_judge_leaves_the_candidate_out():
    loaded = _loaded_after("import mobilemem_judge, mobilemem_judge.judge, mobilemem_judge.settings")
    assert "mobilemem_judge.judge" in loaded
    assert not {m for m in loaded if m.startswith("mobilemem.reme") or m.split(".")[0] == "reme"}


def test_the_plugin_copies_no_reme_step():
    """No memory-writing prompt and no keyword index of the project's own: both are ReMe's."""
    sources = [p for p in PLUGINS["mobilemem"].rglob("*") if p.is_file() and p.suffix in {".py", ".txt", ".yaml", ".md"}
               and "simulator" not in p.parts and "baselines" not in p.parts]  # the baselines are not ReMe
    offenders = [str(p.relative_to(ROOT)) for p in sources
                 if any(word in p.read_text(encoding="utf-8").lower() for word in ("import bm25s", "rank_bm25",
                                                                                    "auto_memory_system",
                                                                                    "record key information"))]
    assert offenders == []
    assert "mobilemem.reme" in {n for names in _imports(PLUGINS["mobilemem"]).values() for n in names}


def test_the_baselines_stay_apart_from_remes_candidate():
    """bm25s is the bm25-rag baseline's own index: ReMe Image's code never imports it, and the
    baselines never import ReMe (a baseline is not ReMe with parts missing)."""
    imports = _imports(PLUGINS["mobilemem"])
    reme = {n for f, names in imports.items() if "/reme/" in f for n in names}
    baselines = {n for f, names in imports.items() if "/baselines/" in f for n in names}
    assert "bm25s" not in reme and "bm25s" in baselines
    assert not {n for n in baselines if n == "reme" or n.startswith(("reme.", "mobilemem.reme"))}
