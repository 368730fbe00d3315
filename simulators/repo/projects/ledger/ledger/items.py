"""Items: what the ledger stocks, keyed by SKU."""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass

from ledger.errors import UnknownItem, ValidationError

_SKU = re.compile(r"^[A-Z]{2,4}-\d{3,6}$")


@dataclass(frozen=True)
class Item:
    sku: str
    name: str
    price_cents: int
    reorder_level: int = 0


def normalize_sku(sku: str) -> str:
    """Upper-case and strip a SKU, then check its form (``AB-123`` to ``ABCD-123456``)."""
    sku = sku.strip().upper()
    if not _SKU.match(sku):
        raise ValidationError(f"bad SKU {sku!r}: expected letters, a dash and digits")
    return sku


def add_item(
    db: sqlite3.Connection, sku: str, name: str, price_cents: int, reorder_level: int = 0
) -> Item:
    """Create an item. Names are stripped and must not be empty; prices are not negative."""
    sku = normalize_sku(sku)
    name = name.strip()
    if not name:
        raise ValidationError("an item needs a name")
    if price_cents < 0:
        raise ValidationError("price must not be negative")
    if reorder_level < 0:
        raise ValidationError("reorder level must not be negative")
    try:
        db.execute(
            "INSERT INTO items (sku, name, price_cents, reorder_level) VALUES (?, ?, ?, ?)",
            (sku, name, price_cents, reorder_level),
        )
    except sqlite3.IntegrityError as exc:
        raise ValidationError(f"SKU {sku} already exists") from exc
    return Item(sku, name, price_cents, reorder_level)


def get_item(db: sqlite3.Connection, sku: str) -> Item:
    row = db.execute("SELECT * FROM items WHERE sku = ?", (normalize_sku(sku),)).fetchone()
    if row is None:
        raise UnknownItem(sku)
    return Item(row["sku"], row["name"], row["price_cents"], row["reorder_level"])


def list_items(db: sqlite3.Connection, name_contains: str = "") -> list[Item]:
    """Every item, by SKU; optionally only those whose name contains the text (any case)."""
    rows = db.execute(
        "SELECT * FROM items WHERE lower(name) LIKE ? ORDER BY sku",
        (f"%{name_contains.lower()}%",),
    ).fetchall()
    return [Item(r["sku"], r["name"], r["price_cents"], r["reorder_level"]) for r in rows]


def set_price(db: sqlite3.Connection, sku: str, price_cents: int) -> Item:
    if price_cents < 0:
        raise ValidationError("price must not be negative")
    item = get_item(db, sku)
    db.execute("UPDATE items SET price_cents = ? WHERE sku = ?", (price_cents, item.sku))
    return Item(item.sku, item.name, price_cents, item.reorder_level)
