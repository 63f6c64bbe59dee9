"""The chat edge calls services, never storage: no module under bot/chat imports bot.storage
or aiosqlite, not even for type checking, and no handler reaches a repository."""

from __future__ import annotations

import ast
from pathlib import Path

CHAT = Path(__file__).resolve().parents[1] / "bot" / "chat"
FORBIDDEN = ("bot.storage", "aiosqlite")


def _imports(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
    return found


def test_no_chat_module_imports_storage() -> None:
    broken = [
        f"{path.relative_to(CHAT.parent.parent)}:{line} imports {name}"
        for path in sorted(CHAT.rglob("*.py"))
        for line, name in _imports(ast.parse(path.read_text(), str(path)))
        if any(name == rule or name.startswith(rule + ".") for rule in FORBIDDEN)
    ]
    assert not broken, "\n".join(broken)


def test_no_handler_reaches_the_database() -> None:
    """`services.storage` and a context's store are the database itself: handlers ask a
    service instead."""
    reached = [
        f"{path.relative_to(CHAT.parent.parent)}:{node.lineno} reads .{node.attr}"
        for path in sorted(CHAT.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.Attribute) and node.attr in ("storage", "store")
    ]
    assert not reached, "\n".join(reached)
