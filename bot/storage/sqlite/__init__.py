"""The SQLite engine: aiosqlite in WAL mode; the only code that knows SQLite."""
