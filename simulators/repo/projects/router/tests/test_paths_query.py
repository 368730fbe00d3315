import pytest
from router import build_query, normalize_path, parse_query
from router.paths import join_paths
from router.query import first_value


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("/", "/"),
        ("", "/"),
        ("/a//b", "/a/b"),
        ("/a/./b/", "/a/b"),
        ("/a/b/../c", "/a/c"),
        ("/../../a", "/a"),
        ("/caf%C3%A9", "/café"),
        ("/a?x=1#top", "/a"),
    ],
)
def test_normalize_path(raw, clean):
    assert normalize_path(raw) == clean


def test_normalize_keeps_trailing_slash_on_request():
    assert normalize_path("/a/b/", keep_trailing_slash=True) == "/a/b/"
    assert normalize_path("/", keep_trailing_slash=True) == "/"


def test_join_paths():
    assert join_paths("/api", "/users") == "/api/users"
    assert join_paths("/api/", "users") == "/api/users"
    assert join_paths("/", "/users") == "/users"


def test_parse_query_keeps_repeated_keys_in_order():
    assert parse_query("a=1&b=x&a=2") == {"a": ["1", "2"], "b": ["x"]}


def test_parse_query_decodes():
    assert parse_query("?q=caf%C3%A9+au+lait") == {"q": ["café au lait"]}


def test_parse_query_blank_values():
    assert parse_query("a=&b=1&c") == {"b": ["1"]}
    assert parse_query("a=&b=1&c", keep_blank=True) == {"a": [""], "b": ["1"], "c": [""]}


def test_first_value():
    query = parse_query("a=1&a=2")
    assert first_value(query, "a") == "1"
    assert first_value(query, "z", "none") == "none"


def test_build_query_sorts_and_encodes():
    assert build_query({"tag": ["x", "y"], "q": "a b&c"}) == "q=a%20b%26c&tag=x&tag=y"


def test_build_query_skips_none():
    assert build_query({"a": None, "b": 0}) == "b=0"


def test_round_trip():
    params = {"q": "hello world", "n": "5"}
    assert {k: v[0] for k, v in parse_query(build_query(params)).items()} == params
