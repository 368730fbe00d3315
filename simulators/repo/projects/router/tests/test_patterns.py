import uuid

import pytest
from router import RouteError
from router.patterns import compile_pattern


def test_static_pattern():
    pattern = compile_pattern("/about")
    assert pattern.match("/about") == {}
    assert pattern.match("/about/team") is None


def test_int_parameter_is_converted():
    assert compile_pattern("/users/<int:id>").match("/users/42") == {"id": 42}


def test_int_parameter_rejects_text():
    assert compile_pattern("/users/<int:id>").match("/users/abc") is None


def test_default_converter_is_one_segment():
    pattern = compile_pattern("/files/<name>")
    assert pattern.match("/files/a.txt") == {"name": "a.txt"}
    assert pattern.match("/files/a/b.txt") is None


def test_path_converter_spans_segments():
    assert compile_pattern("/files/<path:rest>").match("/files/a/b.txt") == {"rest": "a/b.txt"}


def test_uuid_and_float_converters():
    value = "12345678-1234-5678-1234-567812345678"
    assert compile_pattern("/o/<uuid:id>").match(f"/o/{value}") == {"id": uuid.UUID(value)}
    assert compile_pattern("/p/<float:x>").match("/p/2.5") == {"x": 2.5}
    assert compile_pattern("/p/<float:x>").match("/p/2") is None


def test_special_characters_in_static_parts_are_literal():
    assert compile_pattern("/a.b/<int:n>").match("/aXb/1") is None


@pytest.mark.parametrize("template", ["users", "/u/<bogus:x>", "/u/<a>/<a>"])
def test_bad_patterns(template):
    with pytest.raises(RouteError):
        compile_pattern(template)


def test_build():
    pattern = compile_pattern("/users/<int:id>/posts/<slug:post>")
    assert pattern.build({"id": 7, "post": "hello-world"}) == "/users/7/posts/hello-world"


def test_build_rejects_bad_values():
    with pytest.raises(ValueError):
        compile_pattern("/users/<int:id>").build({"id": -1})
    with pytest.raises(ValueError):
        compile_pattern("/t/<slug:s>").build({"s": "no spaces"})


def test_specificity_prefers_static_then_typed():
    static = compile_pattern("/users/me").specificity()
    typed = compile_pattern("/users/<int:id>").specificity()
    loose = compile_pattern("/users/<name>").specificity()
    assert static > typed > loose
