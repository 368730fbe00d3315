import pytest
from confparse import Field, Schema, SchemaError, apply_env, dump, merge, parse
from confparse.layers import env_key

SCHEMA = Schema(
    {
        "server": {
            "host": Field("str"),
            "port": Field("int", 8080, minimum=1, maximum=65535),
            "mode": Field("str", "prod", choices=("dev", "prod")),
            "debug": Field("bool", False),
        }
    }
)


def test_schema_types_and_defaults():
    values = SCHEMA.validate(parse("[server]\nhost = x\ndebug = on\n"))
    assert values == {"server": {"host": "x", "port": 8080, "mode": "prod", "debug": True}}


def test_schema_reports_every_problem():
    with pytest.raises(SchemaError) as info:
        SCHEMA.validate(parse("[server]\nport = 70000\nmode = test\nextra = 1\n"))
    assert info.value.problems == [
        "[server] host: required",
        "[server] port: 70000 is above 65535",
        "[server] mode: 'test' not one of ['dev', 'prod']",
        "[server] extra: unknown key",
    ]


def test_schema_bounds_are_inclusive():
    values = SCHEMA.validate(parse("[server]\nhost = x\nport = 65535\n"))
    assert values["server"]["port"] == 65535


def test_schema_allows_unknown_on_request():
    schema = Schema({"s": {"a": Field("int", 1)}}, allow_unknown=True)
    assert schema.validate(parse("[s]\nb = 2\n")) == {"s": {"a": 1}}


def test_schema_missing_section_uses_defaults():
    schema = Schema({"s": {"a": Field("int", 1)}})
    assert schema.validate(parse("")) == {"s": {"a": 1}}


def test_schema_bad_value():
    with pytest.raises(SchemaError):
        SCHEMA.validate(parse("[server]\nhost = x\nport = eighty\n"))


def test_merge_last_layer_wins():
    merged = merge(parse("[a]\nx = 1\ny = 2\n"), parse("[a]\ny = 3\n[b]\nz = 4\n"))
    assert merged.get("a", "x") == "1"
    assert merged.get("a", "y") == "3"
    assert merged.get("b", "z") == "4"


def test_env_key():
    assert env_key("APP", "server", "max-connections") == "APP_SERVER_MAX_CONNECTIONS"


def test_apply_env_overrides_existing_keys_only():
    config = parse("[server]\nport = 80\n")
    used = apply_env(config, {"APP_SERVER_PORT": "9000", "APP_SERVER_NEW": "x"}, "APP")
    assert used == ["APP_SERVER_PORT"]
    assert config.get("server", "port") == "9000"
    assert not config.has_own("server", "new")


def test_dump_round_trips():
    text = "base = /srv\n\n[app]\ndata = ${base}/data\nlist = a\n    b\n\n[empty]\n"
    config = parse(text)
    assert dump(config) == text
    again = parse(dump(config))
    assert again.get("app", "data") == "/srv/data"
    assert again.get_list("app", "list") == ["a", "b"]


def test_copy_is_independent():
    config = parse("[a]\nx = 1\n")
    other = config.copy()
    other.set("a", "x", "2")
    assert config.get("a", "x") == "1"
