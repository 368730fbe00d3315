import pytest
from tmpl import Environment, TemplateError, UndefinedError, render


def test_plain_text_is_unchanged():
    assert render("Hello, world!") == "Hello, world!"


def test_substitution():
    assert render("Hello, {{ name }}!", name="Ada") == "Hello, Ada!"


def test_attribute_and_key_lookup():
    data = {"user": {"name": "Ada", "langs": ["en", "fr"]}}
    assert render("{{ user.name }} {{ user.langs[1] }}", data) == "Ada fr"


def test_object_attribute_lookup():
    class Point:
        x = 3

    assert render("{{ p.x }}", p=Point()) == "3"


def test_private_attributes_are_hidden():
    class Secret:
        _token = "xyz"

    assert render("[{{ s._token }}]", s=Secret()) == "[]"


def test_undefined_renders_empty():
    assert render("[{{ missing }}][{{ missing.deeper }}]") == "[][]"


def test_strict_mode_raises_on_undefined():
    env = Environment(strict=True)
    with pytest.raises(UndefinedError):
        env.from_string("{{ missing }}").render()


def test_literals():
    assert render("{{ 42 }} {{ 1.5 }} {{ 'single' }} {{ \"double\" }}") == "42 1.5 single double"


def test_booleans_render_lower_case():
    assert render("{{ flag }} {{ true }}", flag=False) == "false true"


def test_autoescape():
    env = Environment(autoescape=True)
    assert env.from_string("{{ html }}").render(html="<b>&</b>") == "&lt;b&gt;&amp;&lt;/b&gt;"


def test_no_escaping_by_default():
    assert render("{{ html }}", html="<b>") == "<b>"


def test_comments_are_dropped():
    assert render("a{# note #}b") == "ab"


def test_whitespace_control():
    assert render("a  {{- x -}}  b", x="X") == "aXb"
    assert render("a\n{%- if true %}x{% endif -%}\nb") == "axb"


def test_unknown_filter():
    with pytest.raises(TemplateError):
        render("{{ x|frobnicate }}", x=1)


def test_set_assigns_in_scope():
    assert render("{% set greeting = 'hi' %}{{ greeting|upper }}") == "HI"
