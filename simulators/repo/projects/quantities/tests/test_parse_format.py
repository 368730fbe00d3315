import pytest
from quantities import Quantity, UnitError, format_quantity, parse_quantity, parse_unit
from quantities.dimensions import Dimension
from quantities.formatting import format_number


def test_parse_simple_quantity():
    q = parse_quantity("3 km")
    assert (q.value, q.unit.symbol) == (3.0, "km")


def test_parse_compound_unit():
    q = parse_quantity("9.81 m/s^2")
    assert q.dimension == Dimension.of(L=1, T=-2)
    assert q.si_value() == pytest.approx(9.81)


def test_parse_power_with_double_star():
    assert parse_unit("m**3").dimension == Dimension.of(L=3)


def test_parse_product_with_star_and_dot():
    assert parse_unit("kg*m/s^2").dimension == parse_unit("N").dimension
    assert parse_unit("N.m").dimension == parse_unit("J").dimension


def test_everything_after_slash_divides():
    unit = parse_unit("J/kg/K")
    assert unit.dimension == Dimension.of(L=2, T=-2, K=-1)


def test_parse_negative_and_scientific():
    assert parse_quantity("-40 degF").to("degC").value == pytest.approx(-40)
    assert parse_quantity("1.5e3 m").value == 1500


def test_parse_dimensionless():
    q = parse_quantity("12")
    assert q.dimension.dimensionless and q.value == 12


def test_parse_negative_power():
    assert parse_unit("s^-1").dimension == parse_unit("Hz").dimension


@pytest.mark.parametrize("text", ["km", "3 furlongs", "3 m^x", ""])
def test_parse_errors(text):
    with pytest.raises(UnitError):
        parse_quantity(text)


@pytest.mark.parametrize(
    ("value", "digits", "text"),
    [
        (3.14159, 3, "3.14"),
        (2.5, 4, "2.5"),
        (1234567.0, 4, "1235000"),
        (0.00012345, 3, "0.000123"),
        (1e20, 3, "1e20"),
        (0.0, 3, "0"),
        (100.0, 2, "100"),
    ],
)
def test_format_number(value, digits, text):
    assert format_number(value, digits) == text


def test_format_quantity():
    assert format_quantity(Quantity(3.5, "km")) == "3.5 km"
    assert format_quantity(Quantity(3.5, "km"), unit="m") == "3500 m"
    assert format_quantity(Quantity(12, "1")) == "12"
    assert format_quantity(Quantity(12.5, "%")) == "12.5%"


def test_format_number_rejects_zero_digits():
    with pytest.raises(ValueError):
        format_number(1.0, 0)
