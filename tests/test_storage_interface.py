"""The storage seam: the SQLite engine offers what `bot.storage.interfaces` promises, no more,
and only the engine knows it is SQLite."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

from bot.storage import interfaces, open_storage
from bot.storage.sqlite.storage import SqliteStorage, SqliteTransaction
from tests.conftest import make_paper

ROOT = Path(__file__).resolve().parents[1]
ENGINE = ROOT / "bot" / "storage" / "sqlite"
ENGINE_MODULES = [importlib.import_module(f"bot.storage.sqlite.{path.stem}")
                  for path in sorted(ENGINE.glob("*.py")) if path.stem != "__init__"]
DRIVERS = ("aiosqlite", "sqlite3")
ENGINE_PROPER = ("bot.storage.sqlite.db", "bot.storage.sqlite.storage")
WHOLE = (interfaces.Storage, interfaces.Transaction)  # return the engine's own classes


def protocols() -> list[type]:
    return [value for value in vars(interfaces).values()
            if inspect.isclass(value) and getattr(value, "_is_protocol", False)
            and value.__module__ == interfaces.__name__]


def sqlite_class(protocol: type) -> type:
    """The SQLite class that implements `protocol` (a repository shares its name)."""
    if protocol in WHOLE:
        return SqliteStorage if protocol is interfaces.Storage else SqliteTransaction
    for module in ENGINE_MODULES:
        found = getattr(module, protocol.__name__, None)
        if inspect.isclass(found):
            return found
    raise AssertionError(f"no SQLite class implements {protocol.__name__}")


def methods(cls: type) -> dict[str, inspect.Signature]:
    """The public methods of a class and of its bases (an engine's or the interface's own)."""
    found: dict[str, inspect.Signature] = {}
    for klass in reversed(cls.__mro__):
        if klass.__module__ not in ("builtins", "typing"):
            found.update({name: inspect.signature(member) for name, member in vars(klass).items()
                          if callable(member) and not name.startswith("_")})
    return found


def properties(cls: type) -> dict[str, str]:
    return {name: member.fget.__annotations__["return"] for name, member in vars(cls).items()
            if isinstance(member, property)}


@pytest.mark.parametrize("protocol", protocols(), ids=lambda p: p.__name__)
def test_the_sqlite_engine_has_every_method_the_interface_promises_and_no_other(
        protocol: type) -> None:
    engine = sqlite_class(protocol)
    promised, offered = methods(protocol), methods(engine)
    offered.pop("open", None)  # how an engine is opened is its own affair (`open_storage`)
    assert sorted(offered) == sorted(promised), "a method services may call is in the interface"
    for name, signature in promised.items():
        assert offered[name].parameters == signature.parameters, f"{engine.__name__}.{name}"
        if protocol not in WHOLE:
            assert offered[name].return_annotation == signature.return_annotation, name


async def test_storage_and_its_transactions_carry_the_promised_repositories(
        tmp_path: Path) -> None:
    store = await open_storage(tmp_path / "bot.sqlite3")
    try:
        for name, kind in properties(interfaces.Storage).items():
            assert isinstance(getattr(store, name), sqlite_class(getattr(interfaces, kind)))
        async with store.transaction() as tx:
            for name, kind in properties(interfaces.Transaction).items():
                assert isinstance(getattr(tx, name), sqlite_class(getattr(interfaces, kind)))
    finally:
        await store.close()


async def test_a_transaction_that_raises_stores_nothing(tmp_path: Path) -> None:
    store = await open_storage(tmp_path / "bot.sqlite3")
    try:
        with pytest.raises(RuntimeError):
            async with store.transaction() as tx:
                await tx.papers.upsert([make_paper(1)], 0.0)
                raise RuntimeError("the batch fails after its upsert")
        assert await store.papers.count() == 0
        async with store.transaction() as tx:
            [change] = await tx.papers.upsert([make_paper(1)], 0.0)
        assert change.status == "new" and await store.papers.count() == 1
    finally:
        await store.close()


def imported_modules(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def test_only_the_sqlite_engine_imports_sqlite() -> None:
    """The drivers only under bot/storage/sqlite/; its connection and storage classes only
    under bot/storage/ (which opens them): the rest of the bot holds a `Storage`."""
    offenders = []
    for path in sorted((ROOT / "bot").rglob("*.py")):
        barred = () if path.is_relative_to(ENGINE) else DRIVERS
        if not path.is_relative_to(ROOT / "bot" / "storage"):
            barred += ENGINE_PROPER
        offenders += [f"{path.relative_to(ROOT)} imports {module}"
                      for module in imported_modules(path) if module.startswith(barred)]
    assert offenders == []


async def test_a_sqlite_url_and_a_path_open_the_same_file(tmp_path: Path) -> None:
    path = tmp_path / "data" / "bot.sqlite3"
    store = await open_storage(f"sqlite:///{path}")
    try:
        await store.papers.upsert_many([make_paper(1)], 0.0)
    finally:
        await store.close()
    store = await open_storage(path, create=False)
    try:
        assert await store.papers.count() == 1
    finally:
        await store.close()
