"""Stock movements: receipts (with a unit cost), shipments and adjustments."""

from __future__ import annotations

import datetime as dt
import sqlite3
from dataclasses import dataclass

from ledger.errors import InsufficientStock, ValidationError
from ledger.items import get_item


@dataclass(frozen=True)
class Movement:
    id: int
    sku: str
    day: dt.date
    kind: str
    quantity: int
    unit_cost_cents: int | None


def _check_quantity(quantity: int) -> None:
    if not isinstance(quantity, int) or quantity <= 0:
        raise ValidationError(f"quantity must be a positive whole number, got {quantity!r}")


def stock_on_hand(db: sqlite3.Connection, sku: str, as_of: dt.date | None = None) -> int:
    """Units on hand: receipts minus shipments plus adjustments (up to ``as_of``, inclusive)."""
    item = get_item(db, sku)
    query = "SELECT kind, quantity FROM movements WHERE sku = ?"
    args: list[object] = [item.sku]
    if as_of is not None:
        query += " AND day <= ?"
        args.append(as_of.isoformat())
    total = 0
    for row in db.execute(query, args):
        if row["kind"] == "ship":
            total -= row["quantity"]
        else:
            total += row["quantity"]
    return total


def receive(
    db: sqlite3.Connection, sku: str, quantity: int, unit_cost_cents: int, day: dt.date
) -> Movement:
    """Record ``quantity`` units arriving at ``unit_cost_cents`` each."""
    _check_quantity(quantity)
    if unit_cost_cents < 0:
        raise ValidationError("unit cost must not be negative")
    item = get_item(db, sku)
    cur = db.execute(
        "INSERT INTO movements (sku, day, kind, quantity, unit_cost_cents) "
        "VALUES (?, ?, 'receive', ?, ?)",
        (item.sku, day.isoformat(), quantity, unit_cost_cents),
    )
    return Movement(int(cur.lastrowid or 0), item.sku, day, "receive", quantity, unit_cost_cents)


def ship(db: sqlite3.Connection, sku: str, quantity: int, day: dt.date) -> Movement:
    """Record ``quantity`` units leaving; refuses to ship more than is on hand that day."""
    _check_quantity(quantity)
    item = get_item(db, sku)
    available = stock_on_hand(db, item.sku, as_of=day)
    if quantity > available:
        raise InsufficientStock(item.sku, quantity, available)
    cur = db.execute(
        "INSERT INTO movements (sku, day, kind, quantity) VALUES (?, ?, 'ship', ?)",
        (item.sku, day.isoformat(), quantity),
    )
    return Movement(int(cur.lastrowid or 0), item.sku, day, "ship", quantity, None)


def adjust(db: sqlite3.Connection, sku: str, delta: int, day: dt.date) -> Movement:
    """A stock count correction: ``delta`` units found (positive) or lost (negative)."""
    if delta == 0:
        raise ValidationError("an adjustment must change the stock")
    item = get_item(db, sku)
    if delta < 0 and -delta > stock_on_hand(db, item.sku, as_of=day):
        raise InsufficientStock(item.sku, -delta, stock_on_hand(db, item.sku, as_of=day))
    cur = db.execute(
        "INSERT INTO movements (sku, day, kind, quantity) VALUES (?, ?, 'adjust', ?)",
        (item.sku, day.isoformat(), delta),
    )
    return Movement(int(cur.lastrowid or 0), item.sku, day, "adjust", delta, None)


def history(db: sqlite3.Connection, sku: str) -> list[Movement]:
    """Every movement of an item, oldest first (by day, then by entry order)."""
    item = get_item(db, sku)
    rows = db.execute(
        "SELECT * FROM movements WHERE sku = ? ORDER BY day, id", (item.sku,)
    ).fetchall()
    return [
        Movement(
            r["id"],
            r["sku"],
            dt.date.fromisoformat(r["day"]),
            r["kind"],
            r["quantity"],
            r["unit_cost_cents"],
        )
        for r in rows
    ]
