"""The import graph of the application, walked on the source (STYLE.md §1): imports go one way,
`flows → tasks → lifecycle → mobilemem_judge → mobilemem` (`cli` on top once it exists), and inside
`mobilemem` the built-in candidates sit above the contract they keep (`builtin_candidates` → `reme`,
`baselines` → the rest), as does the registry that opens them (`candidates`). Every import counts, also one inside a function; one under `if TYPE_CHECKING:` is
type-only and cannot make a circle at run time.
"""

import ast
from collections.abc import Iterator
from pathlib import Path

from conftest import ROOT

PACKAGES = {
    "cli": ROOT / "cli",
    "flows": ROOT / "flows",
    "tasks": ROOT / "tasks",
    "lifecycle": ROOT / "lifecycle",
    "mobilemem_judge": ROOT / "plugins" / "mobilemem-judge" / "src" / "mobilemem_judge",
    "mobilemem": ROOT / "plugins" / "mobilemem" / "src" / "mobilemem",
}
# Higher imports lower, never the other way; a module's layer is that of its longest prefix here.
LAYERS = {"cli": 8, "flows": 7, "tasks": 6, "lifecycle": 5, "mobilemem_judge": 4, "mobilemem.candidates": 3, "mobilemem.builtin_candidates": 3,
          "mobilemem.reme": 2, "mobilemem.baselines": 2, "mobilemem.candidate_tools": 2, "mobilemem": 1}
# The simulator's one circle: usage_rules names policy's Completion for the type checker only.
TYPE_ONLY_CIRCLE = {"mobilemem.simulator.plain_qa", "mobilemem.simulator.policy", "mobilemem.simulator.usage_rules"}
MAX_LINES = 300


def _modules() -> dict[str, Path]:
    found = {}
    for package, folder in PACKAGES.items():
        for path in folder.rglob("*.py") if folder.is_dir() else ():
            parts = [package, *path.relative_to(folder).with_suffix("").parts]
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


MODULES = _modules()


def _resolve(name: str) -> str | None:
    """The application module that importing `name` runs (its longest known prefix)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _type_only(tree: ast.Module) -> set[int]:
    """Ids of the import nodes under an `if TYPE_CHECKING:`."""
    guarded = [node for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)]
    return {id(inner) for node in guarded for child in node.body for inner in ast.walk(child)}


def _imported(module: str, path: Path, node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    base = node.module or ""
    if node.level:  # relative: from the module's package, one level up per extra dot
        package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
    yield from (f"{base}.{alias.name}" for alias in node.names)  # a submodule, or a name of `base`


def _edges(include_type_only: bool) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skipped = set() if include_type_only else _type_only(tree)
        targets = {_resolve(name) for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                   and id(node) not in skipped for name in _imported(module, path, node)}
        edges[module] = {t for t in targets if t is not None and t != module}
    return edges


def _circles(edges: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def _layer(module: str) -> int:
    parts = module.split(".")
    return next(LAYERS[".".join(parts[:n])] for n in range(len(parts), 0, -1) if ".".join(parts[:n]) in LAYERS)


def test_the_graph_is_the_application():
    assert {"flows.mobilemem", "tasks.answer", "lifecycle.context", "mobilemem.candidate", "mobilemem.reme.app",
            "mobilemem_judge.judge"} <= set(MODULES)
    edges = _edges(include_type_only=True)
    assert "mobilemem.candidate" in edges["mobilemem.reme.ingest"]  # absolute import
    assert "mobilemem.simulator.policy" in edges["mobilemem.simulator.usage_rules"]  # relative, type-only
    assert "mobilemem.reme.candidate" in edges["mobilemem.builtin_candidates"]  # inside a function


def test_no_circle_but_the_simulators_type_only_one():
    assert _circles(_edges(include_type_only=True)) == [TYPE_ONLY_CIRCLE]
    assert _circles(_edges(include_type_only=False)) == []


def test_no_import_runs_back_up_a_layer():
    upward = sorted(f"{module} -> {target}" for module, targets in _edges(include_type_only=True).items()
                    for target in targets if _layer(target) > _layer(module))
    assert upward == []


def _lines() -> dict[str, int]:
    return {str(path.relative_to(ROOT)): len(path.read_text(encoding="utf-8").splitlines())
            for path in MODULES.values()}


def test_every_module_is_at_most_the_limit():
    assert {name: count for name, count in _lines().items() if count > MAX_LINES} == {}


# The commands that run no flow (and a run until its preflight has passed) load none of these
# (issue 24); `cli.run.evaluate` imports `cli.run_flow`, which does, inside the function.
FLOW_MACHINERY = ("prefect", "reme", "agentscope", "openai")
NO_FLOW_COMMANDS = ("cli", "cli.run", "cli.summarize", "cli.plan", "cli.rejudge", "cli.report", "cli.compare")


def _imported_on_load(module: str, path: Path) -> set[str]:
    """What importing the module imports: not what a function body does later, nor a type-only import."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    later = _type_only(tree) | {id(inner) for node in ast.walk(tree)
                                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) for inner in ast.walk(node)}
    return {name for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in later
            for name in _imported(module, path, node)}


def _packages_loaded_by(start: str) -> dict[str, str]:
    """Each outside package that importing `start` loads, with the chain of application modules that
    leads to it (importing `a.b` runs `a` first, so a package's `__init__` counts too)."""
    chains, found, todo = {start: start}, {}, [start]
    while todo:
        module = todo.pop()
        for name in _imported_on_load(module, MODULES[module]):
            target = _resolve(name)
            if target is None:
                found.setdefault(name.split(".")[0], f"{chains[module]} -> {name}")
                continue
            parts = target.split(".")
            for step in (".".join(parts[:n]) for n in range(1, len(parts) + 1)):
                if step in MODULES and step not in chains:
                    chains[step] = f"{chains[module]} -> {step}"
                    todo.append(step)
    return found


def test_the_commands_that_run_no_flow_load_no_flow_machinery():
    assert "prefect" in _packages_loaded_by("lifecycle.run_setup")  # the walk sees what opening a run loads
    loaded = {f"{module}: {package}": chain for module in NO_FLOW_COMMANDS
              for package, chain in _packages_loaded_by(module).items() if package in FLOW_MACHINERY}
    assert loaded == {}
