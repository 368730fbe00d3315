import pytest
from ledger import Ledger, UnknownItem, ValidationError


def make_ledger():
    ledger = Ledger()
    ledger.add_item("ab-100", "Blue widget", 250, reorder_level=5)
    ledger.add_item("CD-2000", "Red gadget", 1999)
    return ledger


def test_sku_is_normalized():
    ledger = make_ledger()
    assert ledger.item(" ab-100 ").sku == "AB-100"


def test_item_fields_round_trip():
    item = make_ledger().item("CD-2000")
    assert (item.name, item.price_cents, item.reorder_level) == ("Red gadget", 1999, 0)


def test_duplicate_sku_is_refused():
    ledger = make_ledger()
    with pytest.raises(ValidationError):
        ledger.add_item("AB-100", "Another", 100)


@pytest.mark.parametrize("sku", ["A-100", "ABCDE-100", "AB100", "AB-12", "AB-1234567"])
def test_bad_skus_are_refused(sku):
    with pytest.raises(ValidationError):
        Ledger().add_item(sku, "Thing", 100)


def test_blank_name_is_refused():
    with pytest.raises(ValidationError):
        Ledger().add_item("AB-100", "   ", 100)


def test_negative_price_is_refused():
    with pytest.raises(ValidationError):
        Ledger().add_item("AB-100", "Thing", -1)


def test_unknown_item():
    with pytest.raises(UnknownItem):
        make_ledger().item("ZZ-999")


def test_list_items_sorted_and_filtered():
    ledger = make_ledger()
    ledger.add_item("AA-300", "Green widget", 100)
    assert [i.sku for i in ledger.items()] == ["AA-300", "AB-100", "CD-2000"]
    assert [i.sku for i in ledger.items("WIDGET")] == ["AA-300", "AB-100"]


def test_set_price():
    ledger = make_ledger()
    ledger.set_price("AB-100", 300)
    assert ledger.item("AB-100").price_cents == 300
