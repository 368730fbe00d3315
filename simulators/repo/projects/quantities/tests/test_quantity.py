import pytest
from quantities import DimensionError, Quantity


def test_convert_length():
    assert Quantity(5, "km").to("m").value == pytest.approx(5000)
    assert Quantity(1, "mi").to("km").value == pytest.approx(1.609344)
    assert Quantity(12, "in").to("ft").value == pytest.approx(1)


def test_convert_speed():
    assert Quantity(36, "km").to("m").value / Quantity(1, "h").to("s").value == pytest.approx(10)


@pytest.mark.parametrize(
    ("value", "src", "dst", "expected"),
    [
        (100, "degC", "degF", 212),
        (-40, "degF", "degC", -40),
        (0, "degC", "K", 273.15),
        (300, "K", "degC", 26.85),
        (32, "degF", "K", 273.15),
    ],
)
def test_temperature_conversions(value, src, dst, expected):
    assert Quantity(value, src).to(dst).value == pytest.approx(expected)


def test_incompatible_conversion():
    with pytest.raises(DimensionError):
        Quantity(1, "m").to("s")


def test_addition_uses_left_unit():
    total = Quantity(1, "km") + Quantity(250, "m")
    assert total.unit.symbol == "km"
    assert total.value == pytest.approx(1.25)


def test_subtraction():
    assert (Quantity(2, "h") - Quantity(30, "min")).value == pytest.approx(1.5)


def test_adding_different_dimensions_fails():
    with pytest.raises(DimensionError):
        Quantity(1, "m") + Quantity(1, "s")


def test_multiplication_and_division_combine_units():
    work = Quantity(10, "N") * Quantity(2, "m")
    assert work.to("J").value == pytest.approx(20)
    speed = Quantity(100, "m") / Quantity(20, "s")
    assert speed.value == pytest.approx(5)
    assert speed.unit.symbol == "m/s"


def test_scalar_multiplication():
    assert (3 * Quantity(2, "kg")).value == 6
    assert (Quantity(2, "kg") * 3).value == 6
    assert (Quantity(6, "kg") / 3).value == 2


def test_power():
    area = Quantity(3, "m") ** 2
    assert area.value == 9
    assert area.unit.symbol == "m^2"
    assert area.si_value() == pytest.approx(9)


def test_equality_across_units():
    assert Quantity(1, "km") == Quantity(1000, "m")
    assert Quantity(1, "km") != Quantity(1001, "m")
    assert Quantity(1, "m") != Quantity(1, "s")


def test_ordering_across_units():
    assert Quantity(1, "mi") > Quantity(1, "km")
    assert Quantity(59, "min") < Quantity(1, "h")
    assert Quantity(60, "min") <= Quantity(1, "h")
    assert not Quantity(60, "min") < Quantity(1, "h")


def test_ordering_different_dimensions_fails():
    with pytest.raises(DimensionError):
        Quantity(1, "m") < Quantity(1, "s")  # noqa: B015


def test_negation_and_abs():
    q = -Quantity(3, "s")
    assert q.value == -3
    assert abs(q).value == 3


def test_equal_quantities_hash_equal():
    assert hash(Quantity(1, "km")) == hash(Quantity(1000, "m"))
