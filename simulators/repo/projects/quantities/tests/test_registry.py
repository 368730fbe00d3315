import pytest
from quantities import REGISTRY, DimensionError, UnitError
from quantities.dimensions import LENGTH, MASS, TIME, Dimension


def test_base_units():
    assert REGISTRY.get("m").dimension == LENGTH
    assert REGISTRY.get("s").dimension == TIME


def test_aliases_share_the_unit():
    assert REGISTRY.get("metre") == REGISTRY.get("m")
    assert REGISTRY.get("feet") == REGISTRY.get("ft")


@pytest.mark.parametrize(
    ("name", "scale"),
    [("km", 1000.0), ("cm", 0.01), ("mm", 0.001), ("kg", 1.0), ("mg", 1e-6), ("ms", 1e-3)],
)
def test_prefixes(name, scale):
    assert REGISTRY.get(name).scale == pytest.approx(scale)


def test_prefix_only_on_prefixable_units():
    with pytest.raises(UnitError):
        REGISTRY.get("kft")


def test_unknown_unit():
    with pytest.raises(UnitError):
        REGISTRY.get("furlong")
    assert "furlong" not in REGISTRY
    assert "km" in REGISTRY


def test_derived_units_have_right_dimensions():
    assert REGISTRY.get("N").dimension == Dimension.of(M=1, L=1, T=-2)
    assert REGISTRY.get("kW").dimension == Dimension.of(M=1, L=2, T=-3)
    assert REGISTRY.get("L").dimension == LENGTH**3


def test_dimension_text():
    assert str(Dimension.of(M=1, L=1, T=-2)) == "L M T^-2"
    assert str(Dimension()) == "1"


def test_unit_arithmetic():
    speed = REGISTRY.get("km") / REGISTRY.get("h")
    assert speed.scale == pytest.approx(1000 / 3600)
    assert speed.dimension == LENGTH / TIME


def test_offset_units_do_not_multiply():
    with pytest.raises(DimensionError):
        REGISTRY.get("degC") * REGISTRY.get("m")


def test_mass_units():
    assert REGISTRY.get("lb").dimension == MASS
    assert REGISTRY.get("t").scale == 1000.0
