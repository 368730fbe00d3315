import datetime as dt

from ledger import Ledger

MAR, APR = dt.date(2024, 3, 4), dt.date(2024, 4, 9)


def shop():
    ledger = Ledger()
    ledger.add_item("AB-100", "Blue widget", 250, reorder_level=5)
    ledger.add_item("CD-200", "Red gadget", 1000, reorder_level=2)
    ledger.add_item("EF-300", "Plain thing", 50)
    ledger.receive("AB-100", 10, 100, MAR)
    ledger.receive("CD-200", 3, 600, MAR)
    ledger.receive("EF-300", 1, 10, MAR)
    return ledger


def test_low_stock_at_or_below_reorder_level():
    ledger = shop()
    ledger.ship("AB-100", 5, APR)
    ledger.ship("CD-200", 2, APR)
    assert [(item.sku, n) for item, n in ledger.low_stock()] == [("CD-200", 1), ("AB-100", 5)]


def test_low_stock_ignores_items_without_reorder_level():
    ledger = shop()
    ledger.ship("EF-300", 1, APR)
    assert ledger.low_stock() == []


def test_monthly_movements():
    ledger = shop()
    ledger.ship("AB-100", 3, MAR)
    ledger.ship("AB-100", 2, APR)
    ledger.adjust("AB-100", -1, APR)
    assert ledger.monthly_movements("ab-100") == {
        "2024-03": {"receive": 10, "ship": 3, "adjust": 0},
        "2024-04": {"receive": 0, "ship": 2, "adjust": -1},
    }


def test_best_sellers_most_shipped_first():
    ledger = shop()
    ledger.ship("AB-100", 4, APR)
    ledger.ship("CD-200", 3, APR)
    ledger.ship("EF-300", 1, APR)
    assert ledger.best_sellers(limit=2) == [("AB-100", 4), ("CD-200", 3)]


def test_best_sellers_break_ties_by_sku():
    ledger = shop()
    ledger.ship("CD-200", 2, APR)
    ledger.ship("AB-100", 2, APR)
    assert ledger.best_sellers() == [("AB-100", 2), ("CD-200", 2)]


def test_stock_value_at_price():
    assert shop().stock_value_at_price() == 10 * 250 + 3 * 1000 + 1 * 50
