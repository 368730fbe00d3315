import datetime as dt

import pytest
from ledger import InsufficientStock, Ledger, ValidationError

D1, D2, D3 = dt.date(2024, 3, 1), dt.date(2024, 3, 5), dt.date(2024, 4, 2)


def stocked():
    ledger = Ledger()
    ledger.add_item("AB-100", "Blue widget", 250, reorder_level=5)
    ledger.receive("AB-100", 10, 100, D1)
    return ledger


def test_receive_and_ship_change_stock():
    ledger = stocked()
    ledger.ship("AB-100", 4, D2)
    assert ledger.on_hand("AB-100") == 6


def test_stock_as_of_a_day_includes_that_day():
    ledger = stocked()
    ledger.ship("AB-100", 4, D2)
    assert ledger.on_hand("AB-100", as_of=D1) == 10
    assert ledger.on_hand("AB-100", as_of=D2) == 6


def test_cannot_ship_more_than_on_hand():
    ledger = stocked()
    with pytest.raises(InsufficientStock) as info:
        ledger.ship("AB-100", 11, D2)
    assert info.value.available == 10


def test_can_ship_everything_on_hand():
    ledger = stocked()
    ledger.ship("AB-100", 10, D2)
    assert ledger.on_hand("AB-100") == 0


def test_cannot_ship_before_stock_arrives():
    ledger = stocked()
    with pytest.raises(InsufficientStock):
        ledger.ship("AB-100", 1, dt.date(2024, 2, 28))


@pytest.mark.parametrize("quantity", [0, -3])
def test_quantities_must_be_positive(quantity):
    with pytest.raises(ValidationError):
        stocked().receive("AB-100", quantity, 100, D1)


def test_adjustments_add_and_remove():
    ledger = stocked()
    ledger.adjust("AB-100", 2, D2)
    ledger.adjust("AB-100", -5, D3)
    assert ledger.on_hand("AB-100") == 7


def test_adjustment_cannot_go_below_zero():
    with pytest.raises(InsufficientStock):
        stocked().adjust("AB-100", -11, D2)


def test_zero_adjustment_is_refused():
    with pytest.raises(ValidationError):
        stocked().adjust("AB-100", 0, D2)


def test_history_is_ordered_by_day_then_entry():
    ledger = stocked()
    ledger.ship("AB-100", 1, D3)
    ledger.receive("AB-100", 5, 120, D2)
    kinds = [(m.day, m.kind) for m in ledger.history("AB-100")]
    assert kinds == [(D1, "receive"), (D2, "receive"), (D3, "ship")]


def test_failed_shipment_leaves_no_trace():
    ledger = stocked()
    with pytest.raises(InsufficientStock):
        ledger.ship("AB-100", 50, D2)
    assert len(ledger.history("AB-100")) == 1
