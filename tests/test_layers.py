"""Imports point one way (docs/architecture.md, "Layers"), checked on the source with ``ast``.

* ``learners/`` never imports Django or ``annotator``; only ``learners/evaluation/`` and the two
  tools that run its loops (the ``python -m learners.replay`` entry point and the contract
  battery ``learners.checks``) import ``learners.evaluation``; no learner module imports the
  battery.
* ``annotator/labelling`` is one Django app in packages. The domain packages (``projects``,
  ``engine``, ``ingest``, ``annotation``, ``teams``, ``reporting``) never import the ``web``,
  ``api`` or ``worker`` packages; ``worker`` never imports ``web`` or ``api``; page modules of
  ``web`` never import each other (shared: ``web.request``, ``web.forms``); management
  commands never import another command.
* The engine reaches the team features only through :data:`ENGINE_TEAMS_INTERFACE`.
* No module of the app imports itself back through others (no circle, imports inside
  functions included).
* Tests and benchmarks never import each other, and no test module imports another test module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
APP = "annotator.labelling"
DOMAIN = {f"{APP}.{p}" for p in ("projects", "engine", "ingest", "annotation", "teams", "reporting",
                                  "webhooks")}
EDGE = {f"{APP}.{p}" for p in ("web", "api", "worker")}
#: modules of ``web`` every page module may import
WEB_SHARED = {f"{APP}.web.{m}" for m in ("request", "forms")}
#: the one way the engine calls the team features: these functions and nothing else of ``teams``
ENGINE_TEAMS_INTERFACE = {
    f"{APP}.teams.overlap.draw",  # how many opinions a newly queried item asks for
    f"{APP}.teams.audit_sampling.sampled",  # whether an auto-decision is sampled for audit
    f"{APP}.teams.audit_sampling.open_audits",  # open the reviews of the sampled items
    f"{APP}.teams.consensus.settle",  # aggregate the items whose opinions are all in
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path) -> set[str]:
    """Absolute names of what ``path`` imports, at any depth of its code (``from .x import y``
    gives ``pkg.x`` and ``pkg.x.y``)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def sources(folder: str) -> list[Path]:
    return sorted(p for p in (ROOT / folder).rglob("*.py") if "migrations" not in p.parts)


def within(names: set[str], prefixes: set[str] | tuple[str, ...]) -> set[str]:
    return {n for n in names if any(n == p or n.startswith(p + ".") for p in prefixes)}


@pytest.mark.parametrize("path", sources("learners"), ids=lambda p: str(p.relative_to(ROOT)))
def test_learners_import_neither_django_nor_the_app(path):
    names = imports(path)
    assert not within(names, ("django", "annotator")), names
    if "evaluation" not in path.parts and path.name not in ("replay.py", "checks.py"):
        assert not within(names, ("learners.evaluation", "learners.checks")), names


APP_SOURCES = sources("annotator/labelling")


def package_of(name: str) -> str:
    """``annotator.labelling.engine.stream`` -> ``annotator.labelling.engine``."""
    return ".".join(name.split(".")[:3])


@pytest.mark.parametrize("path", APP_SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_app_layers_point_one_way(path):
    name, names = module_name(path), imports(path)
    package = package_of(name)
    if ".management.commands." in name:
        others = {n for n in within(names, (f"{APP}.management.commands",))
                  if n.count(".") >= 4 and n != name and not n.startswith(name + ".")}
        assert not others, f"{name} imports another command: {others}"
    if package in DOMAIN:
        above = within(names, EDGE)
        assert not above, f"domain module {name} imports {above}"
    if package == f"{APP}.worker":
        assert not within(names, EDGE - {package}), f"{name} imports a web or API module"
    if package == f"{APP}.web" and name not in WEB_SHARED:
        pages = {package_of(n) + "." + n.split(".")[3] for n in within(names, (f"{APP}.web",))
                 if n.count(".") >= 3}
        assert not pages - WEB_SHARED - {name}, f"{name} imports another page module"
    if package == f"{APP}.engine":
        teams = {n for n in within(names, (f"{APP}.teams",)) if n.count(".") >= 4}
        assert teams <= ENGINE_TEAMS_INTERFACE | {n.rpartition(".")[0] for n in ENGINE_TEAMS_INTERFACE}, \
            f"{name} uses {teams - ENGINE_TEAMS_INTERFACE} of the team features"


def test_the_engine_names_each_team_function_it_calls():
    """The interface is imported by name (``from ...overlap import draw``), so the check above
    sees every function the engine calls and the interface is not stale."""
    used = set()
    for path in sources("annotator/labelling/engine"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(f"{APP}.teams"):
                assert node.module != f"{APP}.teams", f"{path.name} imports a teams module whole"
                used.update(f"{node.module}.{a.name}" for a in node.names)
    assert used == ENGINE_TEAMS_INTERFACE


def test_no_import_circles_in_the_app():
    """The module graph of ``annotator`` (imports inside functions included) has no cycle."""
    graph: dict[str, set[str]] = {}
    known = {module_name(p) for p in sources("annotator")}
    for path in sources("annotator"):
        name = module_name(path)
        targets = set()
        for n in within(imports(path), ("annotator",)):
            while n and n not in known:  # ``pkg.module.function`` -> ``pkg.module``
                n = n.rpartition(".")[0]
            if n and n != name and not name.startswith(n + "."):  # a package's own __init__ aside
                targets.add(n)
        graph[name] = targets
    state: dict[str, int] = {}
    path_: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path_.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycle = [*path_[path_.index(nxt):], nxt]
                pytest.fail("import circle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        path_.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)


@pytest.mark.parametrize("path", sources("tests") + sources("benchmarks"),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_tests_and_benchmarks_import_neither_each_other_nor_other_tests(path):
    name, names = module_name(path), imports(path)
    other = "tests" if name.startswith("benchmarks") else "benchmarks"
    assert not within(names, (other,)), f"{name} imports {within(names, (other,))}"
    test_modules = {n for n in within(names, ("tests",))
                    if any(part.startswith("test_") for part in n.split(".")[1:])}
    assert not test_modules - {name}, f"{name} imports the test modules {test_modules}"


def test_the_import_reader_resolves_relative_imports():
    found = imports(ROOT / "annotator" / "labelling" / "management" / "commands" / "import_items.py")
    assert f"{APP}.worker.send" in found and f"{APP}.management.arguments" in found


def test_only_worker_send_sends_celery_tasks():
    """``.delay`` / ``.apply_async`` / ``send_task`` appear in ``worker/send.py`` only."""
    senders = {"delay", "apply_async", "send_task"}
    found = []
    for path in sources("annotator"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            func = node.func if isinstance(node, ast.Call) else None
            if isinstance(func, ast.Attribute) and func.attr in senders:
                found.append(module_name(path))
    assert found and set(found) == {f"{APP}.worker.send"}, found
