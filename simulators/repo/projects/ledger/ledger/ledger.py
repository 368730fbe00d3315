"""``Ledger``: one object over a database, for callers who do not want to pass connections."""

from __future__ import annotations

import datetime as dt
import sqlite3

from ledger import items, movements, reports, valuation
from ledger.schema import connect


class Ledger:
    """An inventory ledger in one SQLite database (in memory by default)."""

    def __init__(self, path: str = ":memory:"):
        self.db: sqlite3.Connection = connect(path)

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # items
    def add_item(self, sku: str, name: str, price_cents: int, reorder_level: int = 0):
        with self.db:
            return items.add_item(self.db, sku, name, price_cents, reorder_level)

    def item(self, sku: str) -> items.Item:
        return items.get_item(self.db, sku)

    def items(self, name_contains: str = "") -> list[items.Item]:
        return items.list_items(self.db, name_contains)

    def set_price(self, sku: str, price_cents: int) -> items.Item:
        with self.db:
            return items.set_price(self.db, sku, price_cents)

    # movements
    def receive(self, sku: str, quantity: int, unit_cost_cents: int, day: dt.date):
        with self.db:
            return movements.receive(self.db, sku, quantity, unit_cost_cents, day)

    def ship(self, sku: str, quantity: int, day: dt.date):
        with self.db:
            return movements.ship(self.db, sku, quantity, day)

    def adjust(self, sku: str, delta: int, day: dt.date):
        with self.db:
            return movements.adjust(self.db, sku, delta, day)

    def on_hand(self, sku: str, as_of: dt.date | None = None) -> int:
        return movements.stock_on_hand(self.db, sku, as_of)

    def history(self, sku: str) -> list[movements.Movement]:
        return movements.history(self.db, sku)

    # valuation and reports
    def fifo_value(self, sku: str) -> int:
        return valuation.fifo_value(self.db, sku)

    def cost_of_goods_sold(self, sku: str) -> int:
        return valuation.cost_of_goods_sold(self.db, sku)

    def average_cost(self, sku: str) -> int:
        return valuation.average_cost(self.db, sku)

    def low_stock(self):
        return reports.low_stock(self.db)

    def monthly_movements(self, sku: str):
        return reports.monthly_movements(self.db, sku)

    def best_sellers(self, limit: int = 3):
        return reports.best_sellers(self.db, limit)

    def stock_value_at_price(self) -> int:
        return reports.stock_value_at_price(self.db)
