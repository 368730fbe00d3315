"""The database schema and connection set-up."""

from __future__ import annotations

import sqlite3

SCHEMA = """
CREATE TABLE IF NOT EXISTS items (
    sku TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    price_cents INTEGER NOT NULL CHECK (price_cents >= 0),
    reorder_level INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS movements (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    sku TEXT NOT NULL REFERENCES items(sku),
    day TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('receive', 'ship', 'adjust')),
    quantity INTEGER NOT NULL,
    unit_cost_cents INTEGER
);
CREATE INDEX IF NOT EXISTS movements_by_sku ON movements (sku, id);
"""


def connect(path: str = ":memory:") -> sqlite3.Connection:
    """Open (and if needed create) a ledger database with foreign keys enforced."""
    db = sqlite3.connect(path)
    db.row_factory = sqlite3.Row
    db.execute("PRAGMA foreign_keys = ON")
    db.executescript(SCHEMA)
    return db
