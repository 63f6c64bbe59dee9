"""The house rules of `bot/`, read from the source with `ast` (docs/architecture.md draws them):
layers import only downwards, the edges never reach storage or each other, only storage knows
SQLite, and no module imports itself round a circle."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "bot"

# Lowest first. A module may import its own layer and those below it, never one above.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("bot", "bot.core"),
    ("bot.config",),
    ("bot.storage",),
    ("bot.arxiv",),
    ("bot.sources", "bot.query", "bot.ranking", "bot.guides", "bot.importer", "bot.library",
     "bot.delivery", "bot.zotero"),
    ("bot.services",),
    ("bot.chat", "bot.jobs", "bot.web", "bot.cli"),  # the edges
    ("bot.runtime",),
    ("bot.__main__",),
)
EDGES = ("bot.chat", "bot.jobs", "bot.web", "bot.cli", "bot.__main__")
# The process's entry prints storage's own errors as their one line (they name no engine).
ENTRY_MAY_IMPORT = {"bot.__main__": ("bot.storage.errors",)}
# Below the edges only delivery (which sends) talks to Telegram at run time.
TELEGRAM_BELOW_EDGES = ("bot.delivery",)
MAX_TOP_LEVEL_MODULES = 5
# Imported where first needed, never as a module is imported (bot/ranking/__init__.py): every
# `python -m bot` would pay for them, and most start-ups rank nothing.
IMPORTED_WHEN_NEEDED = ("scipy", "sklearn")
# An operator's `health`, `backup` and `migrate` (a monitor may run `health` every minute) import
# the bot's entry and `cli.py`: never Telegram's library, the matcher's numpy nor the ranker's
# scipy (`__main__` imports PTB, inside functions, only for the commands that use it).
OPERATOR_COMMANDS = ("bot.__main__", "bot.cli")
NOT_FOR_OPERATOR_COMMANDS = ("telegram", "numpy", "scipy", "sklearn")


@dataclass(frozen=True, slots=True)
class Import:
    importer: str  # the module that imports
    imported: str  # the module (or package) it imports
    line: int
    type_only: bool  # inside `if TYPE_CHECKING:`
    deferred: bool = False  # inside a function: runs when it is called, not with the module

    def __str__(self) -> str:
        kind = " (type only)" if self.type_only else ""
        return f"{self.importer}:{self.line} imports {self.imported}{kind}"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _type_checking_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def _function_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


@cache
def imports() -> tuple[Import, ...]:
    """Every import statement in bot/, anywhere in a module (functions too)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        type_only = _type_checking_lines(tree)
        deferred = _function_lines(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                # `from bot.x import y` may name a submodule y: count it as bot.x.y if it is one.
                targets = [_submodule_or_package(node.module, alias.name)
                           for alias in node.names]
            else:
                continue
            for target in targets:
                found.append(Import(name, target, node.lineno, node.lineno in type_only,
                                    node.lineno in deferred))
    return tuple(found)


def _submodule_or_package(module: str, name: str) -> str:
    candidate = ROOT.joinpath(*module.split("."), name)
    if candidate.with_suffix(".py").is_file() or (candidate / "__init__.py").is_file():
        return f"{module}.{name}"
    return module


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def layer_of(module: str) -> int:
    best, depth = -1, -1
    for index, packages in enumerate(LAYERS):
        for package in packages:
            if within(module, package) and package.count(".") > depth:
                best, depth = index, package.count(".")
    assert best >= 0, f"{module} is in no layer: add it to LAYERS (and docs/architecture.md)"
    return best


def internal(imports_: tuple[Import, ...]) -> Iterator[Import]:
    return (i for i in imports_ if within(i.imported, "bot"))


def test_every_module_of_bot_is_in_a_layer() -> None:
    for path in PACKAGE.rglob("*.py"):
        layer_of(module_name(path))


def test_no_module_imports_a_higher_layer() -> None:
    upward = [str(i) for i in internal(imports())
              if layer_of(i.imported) > layer_of(i.importer)]
    assert upward == [], "lower layers must not import higher ones:\n" + "\n".join(upward)


def test_edges_import_neither_storage_nor_each_other() -> None:
    wrong = []
    for found in internal(imports()):
        edge = next((e for e in EDGES if within(found.importer, e)), None)
        if edge is None:
            continue
        allowed = ENTRY_MAY_IMPORT.get(found.importer, ())
        if within(found.imported, "bot.storage") and found.imported not in allowed:
            wrong.append(f"{found}: edges call services, never storage")
        other = next((e for e in EDGES if within(found.imported, e)), None)
        if other is not None and other != edge and found.importer != "bot.__main__":
            wrong.append(f"{found}: edges do not import each other")
    assert wrong == [], "\n".join(wrong)


def test_only_storage_knows_sqlite() -> None:
    wrong = [str(i) for i in imports()
             if i.imported.split(".")[0] in ("aiosqlite", "sqlite3", "asyncpg")
             and not within(i.importer, "bot.storage")]
    assert wrong == [], "\n".join(wrong)


def test_telegram_is_imported_only_by_the_edges_and_delivery() -> None:
    below = [str(i) for i in imports()
             if i.imported.split(".")[0] == "telegram" and not i.type_only
             and layer_of(i.importer) < layer_of("bot.chat")
             and not any(within(i.importer, p) for p in TELEGRAM_BELOW_EDGES)]
    assert below == [], "\n".join(below)


def test_scipy_and_scikit_learn_are_imported_only_where_first_needed() -> None:
    eager = [str(i) for i in imports()
             if i.imported.split(".")[0] in IMPORTED_WHEN_NEEDED
             and not i.type_only and not i.deferred]
    assert eager == [], "import these inside the function that needs them:\n" + "\n".join(eager)


def imported_with(start: str) -> set[str]:
    """Every module importing `start` runs: its imports outside functions and TYPE_CHECKING,
    theirs in turn, and the packages that hold them (their `__init__`)."""
    modules = {module_name(p) for p in PACKAGE.rglob("*.py")}
    eager: dict[str, set[str]] = {}
    for found in imports():
        if not found.type_only and not found.deferred:
            eager.setdefault(found.importer, set()).add(found.imported)
    reached: set[str] = set()
    todo = [start]
    while todo:
        module = todo.pop()
        if module in reached:
            continue
        reached.add(module)
        parts = module.split(".")
        todo.extend(".".join(parts[:n]) for n in range(1, len(parts)) if ".".join(parts[:n])
                    in modules)
        todo.extend(eager.get(module, ()))
    return reached


def test_operator_commands_import_neither_numpy_nor_scipy() -> None:
    wrong = sorted(f"{start} → {module}" for start in OPERATOR_COMMANDS
                   for module in imported_with(start)
                   if module.split(".")[0] in NOT_FOR_OPERATOR_COMMANDS)
    assert wrong == [], "\n".join(wrong)


def test_no_import_circle() -> None:
    graph: dict[str, set[str]] = {}
    modules = {module_name(p) for p in PACKAGE.rglob("*.py")}
    for found in internal(imports()):
        # An import of a package runs its __init__; a module imports what it names.
        target = found.imported if found.imported in modules else None
        if target is not None and target != found.importer:
            graph.setdefault(found.importer, set()).add(target)
    circles = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:
                circles.append(" → ".join([*path[path.index(target):], target]))
            elif target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert circles == [], "import circles:\n" + "\n".join(circles)


def test_the_top_of_bot_holds_at_most_five_modules() -> None:
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL_MODULES, top


def test_the_rules_catch_a_violation(tmp_path: Path) -> None:
    """The checks above can fail: an edge importing storage and a room importing an edge are
    found in a module written for this test."""
    source = ("from bot.storage import Storage\nfrom bot.chat.context import BotContext\n"
              "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import telegram\n")
    tree = ast.parse(source)
    assert _type_checking_lines(tree) == {5}
    deferred = ast.parse("import numpy\ndef f():\n    from scipy import sparse\n    return 1\n")
    assert _function_lines(deferred) == {3, 4}
    edge = Import("bot.chat.handlers.x", "bot.storage", 1, False)
    upward = Import("bot.query.x", "bot.chat.context", 2, False)
    assert layer_of(upward.imported) > layer_of(upward.importer)
    assert within(edge.imported, "bot.storage") and within(edge.importer, "bot.chat")
