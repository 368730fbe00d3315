import pytest
from tmpl import Environment, render


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("{{ 'ada'|upper }}", "ADA"),
        ("{{ 'ADA'|lower }}", "ada"),
        ("{{ 'hello big world'|title }}", "Hello Big World"),
        ("{{ '  x  '|trim }}", "x"),
        ("{{ items|length }}", "3"),
        ("{{ items|join(', ') }}", "1, 2, 3"),
        ("{{ items|first }}-{{ items|last }}", "1-3"),
        ("{{ items|sort(true)|join }}", "321"),
        ("{{ 'a-b-c'|replace('-', '+') }}", "a+b+c"),
        ("{{ 2.567|round(2) }}", "2.57"),
        ("{{ 2.5|round }}", "2"),
    ],
)
def test_builtin_filters(source, expected):
    assert render(source, items=[1, 2, 3]) == expected


def test_default_for_undefined():
    assert render("{{ missing|default('n/a') }}") == "n/a"


def test_default_keeps_false_values_unless_boolean():
    assert render("{{ v|default('x') }}", v="") == ""
    assert render("{{ v|default('x', true) }}", v="") == "x"


def test_truncate_at_word_boundary():
    assert render("{{ t|truncate(14) }}", t="The quick brown fox") == "The quick..."


def test_truncate_short_text_unchanged():
    assert render("{{ t|truncate(20) }}", t="short") == "short"


def test_truncate_long_word_is_cut_inside():
    assert render("{{ t|truncate(8) }}", t="abcdefghijkl") == "abcde..."


def test_pluralize():
    source = "{{ n }} item{{ n|pluralize }}"
    assert render(source, n=1) == "1 item"
    assert render(source, n=2) == "2 items"
    assert render("{{ n|pluralize('y', 'ies') }}", n=3) == "ies"


def test_batch():
    assert render("{% for row in xs|batch(2) %}[{{ row|join }}]{% endfor %}", xs=range(5)) == (
        "[01][23][4]"
    )


def test_filter_chain():
    assert render("{{ name|trim|upper|truncate(5) }}", name="  sebastian ") == "SE..."


def test_custom_filter():
    env = Environment(filters={"double": lambda v: v * 2})
    assert env.from_string("{{ 21|double }}").render() == "42"
