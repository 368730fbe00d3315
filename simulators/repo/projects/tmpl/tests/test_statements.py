import pytest
from tmpl import TemplateSyntaxError, render


def test_if_else():
    source = "{% if n > 1 %}many{% else %}one{% endif %}"
    assert render(source, n=3) == "many"
    assert render(source, n=1) == "one"


def test_elif_chain_takes_first_true_branch():
    source = "{% if n < 0 %}neg{% elif n == 0 %}zero{% elif n < 10 %}small{% else %}big{% endif %}"
    assert [render(source, n=n) for n in (-1, 0, 5, 50)] == ["neg", "zero", "small", "big"]


def test_boolean_operators():
    source = "{% if a and not b or c %}yes{% else %}no{% endif %}"
    assert render(source, a=True, b=False, c=False) == "yes"
    assert render(source, a=True, b=True, c=False) == "no"
    assert render(source, a=False, b=True, c=True) == "yes"


def test_in_operator():
    assert render("{% if 'b' in letters %}found{% endif %}", letters=["a", "b"]) == "found"


def test_comparisons_with_undefined_are_false():
    assert render("{% if missing > 3 %}yes{% else %}no{% endif %}") == "no"


def test_for_loop():
    assert render("{% for x in xs %}{{ x }};{% endfor %}", xs=[1, 2, 3]) == "1;2;3;"


def test_for_loop_variable():
    source = "{% for x in xs %}{{ loop.index }}/{{ loop.length }}{% if not loop.last %},{% endif %}{% endfor %}"
    assert render(source, xs="abc") == "1/3,2/3,3/3"


def test_loop_first_and_revindex():
    source = "{% for x in xs %}{% if loop.first %}^{% endif %}{{ loop.revindex }}{% endfor %}"
    assert render(source, xs=[7, 8, 9]) == "^321"


def test_for_else_on_empty():
    source = "{% for x in xs %}{{ x }}{% else %}nothing{% endfor %}"
    assert render(source, xs=[]) == "nothing"
    assert render(source) == "nothing"


def test_for_over_mapping_gives_pairs():
    source = "{% for pair in d %}{{ pair[0] }}={{ pair[1] }} {% endfor %}"
    assert render(source, d={"a": 1, "b": 2}) == "a=1 b=2 "


def test_nested_loops_see_outer_variable():
    source = "{% for a in xs %}{% for b in ys %}{{ a }}{{ b }} {% endfor %}{% endfor %}"
    assert render(source, xs=[1, 2], ys="xy") == "1x 1y 2x 2y "


def test_loop_variable_does_not_leak():
    assert render("{% for x in xs %}{% endfor %}[{{ x }}]", xs=[1]) == "[]"


@pytest.mark.parametrize(
    "source",
    [
        "{% if x %}unclosed",
        "{% for x in xs %}unclosed",
        "{{ unclosed",
        "{% frobnicate %}",
        "{% for x xs %}{% endfor %}",
        "{{ }}",
        "{{ a b }}",
    ],
)
def test_syntax_errors(source):
    with pytest.raises(TemplateSyntaxError):
        render(source, x=1, xs=[])


def test_syntax_error_reports_line():
    with pytest.raises(TemplateSyntaxError) as info:
        render("line one\nline two {% bogus %}")
    assert info.value.line == 2
