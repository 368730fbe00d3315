import pytest
from confparse import ConfigSyntaxError, parse

TEXT = """
# global settings
name = demo

[server]
host = example.org
port: 8080  # inline comment
; another comment
greeting = hello
    world

[paths]
root = /srv/app
"""


def test_sections_in_order():
    assert parse(TEXT).sections() == ["server", "paths"]


def test_equals_and_colon_pairs():
    config = parse(TEXT)
    assert config.get("server", "host") == "example.org"
    assert config.get("server", "port") == "8080"


def test_inline_comment_needs_a_space():
    config = parse("[a]\nurl = http://x/#frag\ncolour = red # the colour\n")
    assert config.get("a", "url") == "http://x/#frag"
    assert config.get("a", "colour") == "red"


def test_continuation_lines():
    assert parse(TEXT).get("server", "greeting") == "hello\nworld"


def test_keys_are_case_insensitive():
    config = parse("[a]\nMaxSize = 3\n")
    assert config.get("a", "maxsize") == "3"
    assert config.get("a", "MAXSIZE") == "3"


def test_default_section_is_inherited():
    config = parse(TEXT)
    assert config.get("paths", "name") == "demo"
    assert config.keys("paths") == ["root", "name"]


def test_line_numbers_are_recorded():
    assert parse(TEXT).line_of("server", "port") == 7


def test_empty_value():
    assert parse("[a]\nkey =\n").get("a", "key") == ""


def test_duplicate_key_is_an_error():
    with pytest.raises(ConfigSyntaxError) as info:
        parse("[a]\nx = 1\nx = 2\n")
    assert info.value.line == 3


def test_duplicate_section_is_an_error():
    with pytest.raises(ConfigSyntaxError):
        parse("[a]\n[b]\n[a]\n")


def test_duplicates_allowed_on_request():
    assert parse("[a]\nx = 1\nx = 2\n", allow_duplicates=True).get("a", "x") == "2"


def test_garbage_line():
    with pytest.raises(ConfigSyntaxError) as info:
        parse("[a]\nthis is not a pair\n")
    assert info.value.line == 2
