import datetime as dt

from ledger import Ledger

D = [dt.date(2024, 3, d) for d in range(1, 10)]


def layered():
    ledger = Ledger()
    ledger.add_item("AB-100", "Blue widget", 250)
    ledger.receive("AB-100", 10, 100, D[0])
    ledger.receive("AB-100", 5, 130, D[1])
    return ledger


def test_fifo_value_before_sales():
    assert layered().fifo_value("AB-100") == 10 * 100 + 5 * 130


def test_fifo_consumes_oldest_first():
    ledger = layered()
    ledger.ship("AB-100", 12, D[2])
    assert ledger.fifo_value("AB-100") == 3 * 130


def test_cost_of_goods_sold_spans_layers():
    ledger = layered()
    ledger.ship("AB-100", 12, D[2])
    assert ledger.cost_of_goods_sold("AB-100") == 10 * 100 + 2 * 130


def test_losses_are_not_cost_of_goods_sold():
    ledger = layered()
    ledger.adjust("AB-100", -3, D[2])
    ledger.ship("AB-100", 2, D[3])
    assert ledger.cost_of_goods_sold("AB-100") == 2 * 100
    assert ledger.fifo_value("AB-100") == 5 * 100 + 5 * 130


def test_found_units_take_the_last_receipt_cost():
    ledger = layered()
    ledger.adjust("AB-100", 2, D[2])
    assert ledger.fifo_value("AB-100") == 10 * 100 + 7 * 130


def test_average_cost_rounds_half_up():
    ledger = Ledger()
    ledger.add_item("AB-100", "Blue widget", 250)
    ledger.receive("AB-100", 1, 100, D[0])
    ledger.receive("AB-100", 1, 101, D[1])
    assert ledger.average_cost("AB-100") == 101


def test_average_cost_is_weighted():
    assert layered().average_cost("AB-100") == 110


def test_average_cost_without_receipts_is_zero():
    ledger = Ledger()
    ledger.add_item("AB-100", "Blue widget", 250)
    assert ledger.average_cost("AB-100") == 0
