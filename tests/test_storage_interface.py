"""The storage seam: each engine (SQLite, PostgreSQL) offers what `bot.storage.interfaces`
promises, no more, and only the engines know which database they are."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

from bot.storage import interfaces, open_storage
from bot.storage.postgres.storage import PostgresStorage, PostgresTransaction
from bot.storage.sqlite.storage import SqliteStorage, SqliteTransaction
from tests.conftest import make_paper

ROOT = Path(__file__).resolve().parents[1]
ENGINE = ROOT / "bot" / "storage" / "sqlite"
POSTGRES = ROOT / "bot" / "storage" / "postgres"
DRIVERS = ("aiosqlite", "sqlite3")
POSTGRES_DRIVERS = ("asyncpg",)
ENGINE_PROPER = ("bot.storage.sqlite.db", "bot.storage.sqlite.storage",
                 "bot.storage.postgres.db", "bot.storage.postgres.storage")
WHOLE = (interfaces.Storage, interfaces.Transaction)  # return the engine's own classes
ENGINES = {
    "sqlite": (ENGINE, SqliteStorage, SqliteTransaction),
    "postgresql": (POSTGRES, PostgresStorage, PostgresTransaction),
}


def engine_modules(engine: str) -> list[object]:
    folder = ENGINES[engine][0]
    return [importlib.import_module(f"bot.storage.{folder.name}.{path.stem}")
            for path in sorted(folder.glob("*.py")) if path.stem != "__init__"]


def protocols() -> list[type]:
    return [value for value in vars(interfaces).values()
            if inspect.isclass(value) and getattr(value, "_is_protocol", False)
            and value.__module__ == interfaces.__name__]


def engine_class(engine: str, protocol: type) -> type:
    """The engine's class that implements `protocol` (a repository shares its name; the
    PostgreSQL engine's are in its `repositories`, SQLite's own where it needs no other)."""
    _, storage, transaction = ENGINES[engine]
    if protocol in WHOLE:
        return storage if protocol is interfaces.Storage else transaction
    for module in engine_modules(engine):
        found = getattr(module, protocol.__name__, None)
        if inspect.isclass(found):
            return found
    raise AssertionError(f"no {engine} class implements {protocol.__name__}")


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


@pytest.mark.parametrize("engine_name", ENGINES)
@pytest.mark.parametrize("protocol", protocols(), ids=lambda p: p.__name__)
def test_each_engine_has_every_method_the_interface_promises_and_no_other(
        protocol: type, engine_name: str) -> None:
    engine = engine_class(engine_name, protocol)
    promised, offered = methods(protocol), methods(engine)
    offered.pop("open", None)  # how an engine is opened is its own affair (`open_storage`)
    assert sorted(offered) == sorted(promised), "a method services may call is in the interface"
    for name, signature in promised.items():
        assert offered[name].parameters == signature.parameters, f"{engine.__name__}.{name}"
        if protocol not in WHOLE:
            assert offered[name].return_annotation == signature.return_annotation, name


def engine_of(database_url: str) -> str:
    return database_url.split(":", 1)[0]


async def test_storage_and_its_transactions_carry_the_promised_repositories(
        database_url: str) -> None:
    store = await open_storage(database_url)
    engine = engine_of(database_url)
    try:
        assert isinstance(store, ENGINES[engine][1])
        for name, kind in properties(interfaces.Storage).items():
            assert isinstance(getattr(store, name),
                              engine_class(engine, getattr(interfaces, kind)))
        async with store.transaction() as tx:
            for name, kind in properties(interfaces.Transaction).items():
                assert isinstance(getattr(tx, name),
                                  engine_class(engine, getattr(interfaces, kind)))
    finally:
        await store.close()


async def test_a_transaction_that_raises_stores_nothing(database_url: str) -> None:
    store = await open_storage(database_url)
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


def test_only_each_engine_imports_its_driver() -> None:
    """The drivers only under their engine's folder (SQLite's under bot/storage/sqlite/,
    asyncpg under bot/storage/postgres/); the engines' connection and storage classes only
    under bot/storage/ (which opens them): the rest of the bot holds a `Storage`."""
    offenders = []
    for path in sorted((ROOT / "bot").rglob("*.py")):
        barred = (() if path.is_relative_to(ENGINE) else DRIVERS) + (
            () if path.is_relative_to(POSTGRES) else POSTGRES_DRIVERS)
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
