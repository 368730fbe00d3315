import pytest
from confparse import ConfigError, InterpolationError, parse
from confparse.types import to_bool, to_int, to_list, to_size

CONF = """
base = /srv
[app]
data = ${base}/data
logs = ${data}/logs
price = $$5
debug = yes
workers = 0x10
ratio = 0.75
hosts = a.example, b.example,, c.example
plugins =
    auth
    cache
cache = 1.5 GiB
[other]
where = ${app.logs}
"""


def test_interpolation_same_section_and_default():
    config = parse(CONF)
    assert config.get("app", "data") == "/srv/data"
    assert config.get("app", "logs") == "/srv/data/logs"


def test_interpolation_across_sections():
    assert parse(CONF).get("other", "where") == "/srv/data/logs"


def test_dollar_escape():
    assert parse(CONF).get("app", "price") == "$5"


def test_raw_keeps_references():
    assert parse(CONF).raw("app", "data") == "${base}/data"


def test_missing_reference():
    with pytest.raises(InterpolationError):
        parse("[a]\nx = ${nope}\n").get("a", "x")


def test_reference_cycle():
    with pytest.raises(InterpolationError):
        parse("[a]\nx = ${y}\ny = ${x}\n").get("a", "x")


def test_typed_getters():
    config = parse(CONF)
    assert config.get_bool("app", "debug") is True
    assert config.get_int("app", "workers") == 16
    assert config.get_float("app", "ratio") == 0.75
    assert config.get_list("app", "hosts") == ["a.example", "b.example", "c.example"]
    assert config.get_list("app", "plugins") == ["auth", "cache"]
    assert config.get_size("app", "cache") == 1610612736


def test_fallbacks():
    config = parse(CONF)
    assert config.get("app", "missing", "x") == "x"
    assert config.get_int("app", "missing", 3) == 3


def test_missing_key_and_section():
    config = parse(CONF)
    with pytest.raises(ConfigError):
        config.get("app", "missing")
    with pytest.raises(ConfigError):
        config.get("nowhere", "x")


def test_bad_typed_value():
    with pytest.raises(ConfigError):
        parse("[a]\nn = many\n").get_int("a", "n")


@pytest.mark.parametrize(("text", "value"), [("On", True), ("0", False), ("FALSE", False)])
def test_to_bool(text, value):
    assert to_bool(text) is value


def test_to_bool_rejects():
    with pytest.raises(ValueError):
        to_bool("maybe")


def test_to_int_bases_and_separators():
    assert to_int("1_000") == 1000
    assert to_int("0b101") == 5


def test_to_list_separator():
    assert to_list("a; b;c", sep=";") == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("text", "size"),
    [("512", 512), ("10KB", 10000), ("10 KiB", 10240), ("2mb", 2000000), ("1.5G", 1500000000)],
)
def test_to_size(text, size):
    assert to_size(text) == size


def test_to_size_rejects():
    with pytest.raises(ValueError):
        to_size("ten MB")
