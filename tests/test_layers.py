"""Imports point one way (docs/architecture.md, "Layers"), checked on the source with ``ast``.

* ``learners/`` never imports Django or ``annotator``; only ``learners/evaluation/`` (and the
  ``python -m learners.replay`` entry point) import ``learners.evaluation``.
* In ``annotator/labelling``, the domain modules never import the task layer (``tasks``,
  ``enqueue``) or a view module; view modules never import each other; management commands
  never import another command.
* Tests and benchmarks never import each other, and no test module imports another test module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
APP = "annotator.labelling"
VIEWS = {f"{APP}.{m}" for m in ("views", "queue_views", "console_views", "dashboard_views",
                                "planner_views", "review_views", "api", "admin")}
TASK_LAYER = {f"{APP}.tasks", f"{APP}.enqueue"}
#: modules above the domain: they may import anything of the app
TOP = VIEWS | TASK_LAYER | {f"{APP}.urls"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path) -> set[str]:
    """Absolute names of the modules ``path`` imports (``from . import x`` gives ``pkg.x``)."""
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
    if "evaluation" not in path.parts and path.name != "replay.py":
        assert not within(names, ("learners.evaluation",)), names


@pytest.mark.parametrize("path", sources("annotator/labelling"), ids=lambda p: str(p.relative_to(ROOT)))
def test_app_layers_point_one_way(path):
    name, names = module_name(path), imports(path)
    if ".management.commands." in name:
        others = {n for n in within(names, (f"{APP}.management.commands",))
                  if n.count(".") >= 4 and n != name and not n.startswith(name + ".")}
        assert not others, f"{name} imports another command: {others}"
    elif name in VIEWS:
        assert not within(names, VIEWS - {name}), f"{name} imports another view module"
    elif name not in TOP and ".management" not in name:
        above = within(names, TASK_LAYER | VIEWS)
        assert not above, f"domain module {name} imports {above}"


@pytest.mark.parametrize("path", sources("tests") + sources("benchmarks"),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_tests_and_benchmarks_import_neither_each_other_nor_other_tests(path):
    name, names = module_name(path), imports(path)
    other = "tests" if name.startswith("benchmarks") else "benchmarks"
    assert not within(names, (other,)), f"{name} imports {within(names, (other,))}"
    test_modules = {n for n in within(names, ("tests",)) if n.split(".")[1].startswith("test_")}
    assert not test_modules - {name}, f"{name} imports the test modules {test_modules}"


def test_the_import_reader_resolves_relative_imports():
    found = imports(ROOT / "annotator" / "labelling" / "management" / "commands" / "import_items.py")
    assert f"{APP}.enqueue" in found and f"{APP}.management.arguments" in found


def test_only_enqueue_sends_celery_tasks():
    """``.delay`` / ``.apply_async`` / ``send_task`` appear in ``enqueue.py`` only."""
    senders = {"delay", "apply_async", "send_task"}
    found = []
    for path in sources("annotator"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            func = node.func if isinstance(node, ast.Call) else None
            if isinstance(func, ast.Attribute) and func.attr in senders:
                found.append(module_name(path))
    assert found and set(found) == {f"{APP}.enqueue"}, found
