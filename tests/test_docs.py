"""Every documentation reference in the code resolves inside a clone of the repository.

Docstrings and comments of every Python file may cite ``docs/...`` pages (and the algorithm
pages by their bare name, ``paa.md``); each cited file must exist. Nothing may cite a file that
lives outside the repository (the design note or the paper specs of the folder beside it,
:data:`OUTSIDE`). The links between the docs pages resolve too. docs/architecture.md lists every
package and every module of ``annotator/`` and ``learners/``, and no module that is gone. No
code file cites the work tracker ("issue N"): that history is docs/history.md's.
"""

from __future__ import annotations

import ast
import io
import re
import subprocess
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SKIP_DIRS = {".venv", ".git", "node_modules", "__pycache__", ".pytest_cache", ".ruff_cache",
             ".cache"}  # .cache: the Label Studio virtualenv of its tests (harness/label_studio.py)
DOCS_REF = re.compile(r"(?<![\w/.])docs/[\w./-]*[\w/]")
BARE_MD = re.compile(r"(?<![\w/.-])([\w-]+\.md)\b")
OUTSIDE = re.compile(r"DESIGN\.md|\.\./shared|shared/specs")
MD_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def python_files() -> list[Path]:
    return sorted(p for p in ROOT.rglob("*.py") if not SKIP_DIRS & set(p.relative_to(ROOT).parts))


def prose(path: Path) -> list[tuple[int, str]]:
    """``(line, text)`` of every docstring and comment of a Python file."""
    source = path.read_text(encoding="utf-8")
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                out.extend((node.body[0].lineno + k, text) for k, text in enumerate(doc.splitlines()))
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            out.append((tok.start[0], tok.string))
    return out


def markdown_names() -> set[str]:
    return {p.name for p in ROOT.rglob("*.md") if not SKIP_DIRS & set(p.relative_to(ROOT).parts)}


def test_the_docs_index_and_the_algorithm_pages_exist():
    for page in ("README.md", "architecture.md", "algorithms/README.md", "algorithms/common.md",
                 "algorithms/paa.md", "algorithms/soal.md", "algorithms/dada.md", "algorithms/oasis.md",
                 "algorithms/kmc.md"):
        assert (ROOT / "docs" / page).is_file(), page
    assert "docs/README.md" in (ROOT / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("path", python_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_docstrings_and_comments_cite_only_files_of_the_repository(path):
    names = markdown_names()
    problems = []
    for line, text in prose(path):
        for bad in OUTSIDE.findall(text):
            problems.append(f"line {line}: cites {bad!r}, which is outside the repository")
        for ref in DOCS_REF.findall(text):
            if not (ROOT / ref).exists():
                problems.append(f"line {line}: {ref} does not exist")
        for name in BARE_MD.findall(text):
            if name not in names:
                problems.append(f"line {line}: {name} is no file of the repository")
    assert not problems, "\n".join(problems)


def test_every_deviation_tag_names_its_docs_page():
    """A ``DEVIATION:`` comment says where the deviation is listed (docs/algorithms/<family>.md, or
    docs/budget.md for budget mode's)."""
    tags, untold = 0, []
    for path in python_files():
        if path.name == "test_docs.py":
            continue
        for line, text in prose(path):
            if "DEVIATION" in text:
                tags += 1
                window = " ".join(t for n, t in prose(path) if line <= n <= line + 2)
                if "docs/algorithms/" not in window and "docs/budget.md" not in window:
                    untold.append(f"{path.relative_to(ROOT)}:{line}")
    assert tags and not untold, untold


REPO_PATH = re.compile(r"`((?:learners|annotator|tests|benchmarks|harness|docs|templates|static)/[\w/.-]*)`")


def test_paths_named_in_the_docs_exist():
    """A file or folder the docs name in backticks (``learners/kernels.py``) is in the tree."""
    missing = [f"{page.relative_to(ROOT)}: {path}" for page in sorted((ROOT / "docs").rglob("*.md"))
               for path in REPO_PATH.findall(page.read_text(encoding="utf-8"))
               if "..." not in path and not (ROOT / path).exists()]
    assert not missing, missing


def test_links_between_docs_pages_resolve():
    broken = []
    for page in sorted((ROOT / "docs").rglob("*.md")):
        for target in MD_LINK.findall(page.read_text(encoding="utf-8")):
            if "://" not in target and not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert not broken, broken


#: the folders whose every module the architecture page's tables list
CODE_ROOTS = ("annotator", "learners")
HEADING = re.compile(r"^### `([\w/]+/)`\s*$")
CELL_NAME = re.compile(r"`([\w/.]+\.py)`")


def documented_modules() -> dict[str, list[str]]:
    """``{module path: [table rows naming it]}`` from the tables of docs/architecture.md's
    "Modules" section: each ``### `folder/``` heading's table names modules relative to it, in
    backticks in its first cell (several per row allowed)."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("\n## Modules\n", 1)[1].split("\n## ", 1)[0]
    found: dict[str, list[str]] = {}
    folder = None
    for line in section.splitlines():
        heading = HEADING.match(line)
        if heading:
            folder = heading.group(1)
        elif folder and line.startswith("|") and not line.startswith(("| module", "|---")):
            for name in CELL_NAME.findall(line.split("|")[1]):
                found.setdefault(folder + name, []).append(line)
    return found


def code_modules() -> set[str]:
    """Every module of :data:`CODE_ROOTS` but the migrations and the ``__init__.py`` files that
    hold nothing but a docstring."""
    out = set()
    for root in CODE_ROOTS:
        for path in (ROOT / root).rglob("*.py"):
            rel = path.relative_to(ROOT)
            if SKIP_DIRS & set(rel.parts) or "migrations" in rel.parts:
                continue
            if path.name == "__init__.py":
                body = ast.parse(path.read_text(encoding="utf-8")).body
                if all(isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant) for n in body):
                    continue
            out.add(rel.as_posix())
    return out


def test_the_architecture_page_lists_every_module_and_no_other():
    documented, modules = documented_modules(), code_modules()
    missing = sorted(modules - set(documented))
    stale = sorted(set(documented) - modules)
    assert not missing, f"docs/architecture.md, Modules: add a row for each of {missing}"
    assert not stale, f"docs/architecture.md, Modules: these rows name no module: {stale}"


def test_the_architecture_page_has_one_line_per_package():
    """Every package (a folder with ``__init__.py``) of :data:`CODE_ROOTS` has its line under
    "Packages"."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("\n## Packages\n", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"^\* `([\w/]+)/`", section, re.MULTILINE))
    packages = {p.parent.relative_to(ROOT).as_posix() for root in CODE_ROOTS
                for p in (ROOT / root).rglob("__init__.py") if not SKIP_DIRS & set(p.relative_to(ROOT).parts)}
    packages -= {"annotator/labelling/management/commands"}  # Django's folder, the line of management/
    assert packages <= listed, f"docs/architecture.md, Packages: add a line for {sorted(packages - listed)}"


#: a citation of the work tracker: "issue 18", "Issue 19 item 4", "issue-19", "issues 14"
TRACKER = re.compile(r"\bissues?[ -]?#?[0-9]+", re.IGNORECASE)
#: tracked files that are not code: prose pages, where history belongs (docs/history.md), and images
NOT_CODE = (".md", ".svg", ".png")


def code_files() -> list[Path]:
    """Every tracked file of the repository but the prose and the images (``git ls-files``; the
    walk of :func:`python_files` plus templates/, static/ and the requirements outside a clone)."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
        paths = [ROOT / name for name in listed.decode("utf-8").split("\0") if name]
    except (OSError, subprocess.CalledProcessError):
        paths = python_files() + [p for folder in ("templates", "static") for p in (ROOT / folder).rglob("*")]
        paths += [*ROOT.glob("requirements*.txt"), ROOT / "Makefile"]
    return sorted(p for p in paths if p.is_file() and not p.name.endswith(NOT_CODE))


def test_code_never_cites_the_work_tracker():
    """A docstring or comment says what the code does; why it came to be goes to docs/history.md
    or the commit log, never "issue N" of a tracker that is not in the repository."""
    found = [f"{path.relative_to(ROOT)}:{n}: {match.group(0)}"
             for path in code_files() if path.name != "test_docs.py"
             for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
             for match in TRACKER.finditer(line)]
    assert not found, "\n".join(found)


def test_the_checker_finds_what_it_must():
    """The patterns catch an outside citation and a missing page, and pass a good one."""
    assert OUTSIDE.search("see ``../shared/specs/paa.md``") and OUTSIDE.search("DESIGN.md section 2")
    assert DOCS_REF.findall("(docs/architecture.md, Metrics)") == ["docs/architecture.md"]
    assert not (ROOT / DOCS_REF.findall("see docs/nowhere.md.")[0]).exists()
    assert BARE_MD.findall("paa.md section 6 and docs/kmc.md") == ["paa.md"]
    cited = ("(issue 18)", "Issue 19 item 4", "the issue-19 panels", "issues 14 and 15", "issue #7")
    assert all(TRACKER.search(text) for text in cited)
    assert not any(TRACKER.search(text) for text in ("issue the same SQL", "issueRequest:K", "tissue 3"))
    documented, modules = documented_modules(), code_modules()
    app = "annotator/labelling/"
    assert {"learners/kmc_fit.py", "learners/kmc.py", app + "ingest/__init__.py"} <= set(documented)
    assert app + "ingest/__init__.py" in modules and "learners/features/image.py" in modules
    assert not {app + "engine/__init__.py", app + "migrations/0001_initial.py"} & modules
    files = code_files()
    assert any(p.name == "htmx.min.js" for p in files) and not any(p.suffix == ".md" for p in files)
