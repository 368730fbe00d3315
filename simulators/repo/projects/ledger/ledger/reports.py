"""Reports over the whole ledger."""

from __future__ import annotations

import sqlite3
from collections import defaultdict

from ledger.items import Item, list_items
from ledger.movements import stock_on_hand


def low_stock(db: sqlite3.Connection) -> list[tuple[Item, int]]:
    """Items whose stock is at or below their reorder level, with that stock, fewest first.

    Items with a reorder level of zero are never reported.
    """
    out = []
    for item in list_items(db):
        if item.reorder_level == 0:
            continue
        on_hand = stock_on_hand(db, item.sku)
        if on_hand <= item.reorder_level:
            out.append((item, on_hand))
    out.sort(key=lambda pair: (pair[1], pair[0].sku))
    return out


def monthly_movements(db: sqlite3.Connection, sku: str) -> dict[str, dict[str, int]]:
    """Units received, shipped and adjusted per month (``"2024-03"``), months in order."""
    rows = db.execute(
        "SELECT substr(day, 1, 7) AS month, kind, SUM(quantity) AS total "
        "FROM movements WHERE sku = ? GROUP BY month, kind ORDER BY month",
        (sku.strip().upper(),),
    ).fetchall()
    out: dict[str, dict[str, int]] = defaultdict(lambda: {"receive": 0, "ship": 0, "adjust": 0})
    for row in rows:
        out[row["month"]][row["kind"]] = row["total"]
    return dict(out)


def best_sellers(db: sqlite3.Connection, limit: int = 3) -> list[tuple[str, int]]:
    """The SKUs with the most units shipped, most first (ties by SKU), at most ``limit``."""
    rows = db.execute(
        "SELECT sku, SUM(quantity) AS shipped FROM movements WHERE kind = 'ship' "
        "GROUP BY sku ORDER BY shipped DESC, sku LIMIT ?",
        (limit,),
    ).fetchall()
    return [(row["sku"], row["shipped"]) for row in rows]


def stock_value_at_price(db: sqlite3.Connection) -> int:
    """Cents the stock on hand would fetch at list prices."""
    return sum(item.price_cents * stock_on_hand(db, item.sku) for item in list_items(db))
