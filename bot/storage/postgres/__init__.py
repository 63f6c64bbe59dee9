"""The PostgreSQL engine: asyncpg, the SQLite engine's repositories where their SQL is the same."""
