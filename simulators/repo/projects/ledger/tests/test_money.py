import pytest
from ledger import ValidationError, format_money, parse_money
from ledger.money import split_evenly


@pytest.mark.parametrize(
    ("text", "cents"),
    [("12.50", 1250), ("12.5", 1250), ("$3", 300), ("1,234.05", 123405), ("-0.99", -99)],
)
def test_parse_money(text, cents):
    assert parse_money(text) == cents


@pytest.mark.parametrize("text", ["12.345", "abc", "1,23", ""])
def test_parse_money_rejects(text):
    with pytest.raises(ValidationError):
        parse_money(text)


def test_format_money():
    assert format_money(1234567) == "12,345.67"
    assert format_money(5) == "0.05"
    assert format_money(-1250, symbol="$") == "-$12.50"


def test_split_evenly_hands_out_extra_cents_first():
    assert split_evenly(100, 3) == [34, 33, 33]
    assert sum(split_evenly(1001, 7)) == 1001


def test_split_evenly_rejects_zero_parts():
    with pytest.raises(ValidationError):
        split_evenly(100, 0)
