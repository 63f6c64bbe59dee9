"""The tests' PostgreSQL server: real, on 127.0.0.1, a fresh database per test."""

from __future__ import annotations

import asyncpg

from tests.postgres_server import PostgresServer


async def test_each_test_gets_an_empty_database_of_its_own(postgres_server: PostgresServer
                                                           ) -> None:
    first, second = postgres_server.new_database(), postgres_server.new_database()
    assert first != second
    conn = await asyncpg.connect(first)
    try:
        await conn.execute("CREATE TABLE t (x integer)")
        assert await conn.fetchval("SELECT current_setting('listen_addresses')") == "127.0.0.1"
    finally:
        await conn.close()
    conn = await asyncpg.connect(second)
    try:
        assert await conn.fetchval("SELECT to_regclass('t')") is None
    finally:
        await conn.close()
    postgres_server.drop_database(first)
    postgres_server.drop_database(second)
