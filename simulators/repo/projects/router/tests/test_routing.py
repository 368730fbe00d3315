import pytest
from router import MethodNotAllowed, NotFound, ReverseError, RouteError, Router


def app():
    router = Router()
    router.add("/", lambda: "home", name="home")
    router.add("/users/<int:id>", lambda id: f"user {id}", name="user")
    router.add("/users/me", lambda: "me", name="me")
    router.add("/users/<name>", lambda name: f"named {name}", name="user_by_name")
    router.add("/users", lambda: "created", methods=["POST"], name="create_user")
    router.add("/files/<path:rest>", lambda rest: rest, methods=["GET", "DELETE"], name="file")
    return router


def test_match_calls_handler_with_params():
    assert app().match("GET", "/users/7")() == "user 7"


def test_static_route_beats_parameter():
    assert app().match("GET", "/users/me")() == "me"


def test_typed_parameter_beats_plain_one():
    router = app()
    assert router.match("GET", "/users/12")() == "user 12"
    assert router.match("GET", "/users/bob")() == "named bob"


def test_specificity_does_not_depend_on_order():
    router = Router()
    router.add("/users/<name>", lambda name: "named")
    router.add("/users/<int:id>", lambda id: "int")
    assert router.match("GET", "/users/5")() == "int"


def test_not_found():
    with pytest.raises(NotFound):
        app().match("GET", "/nothing/here")


def test_method_not_allowed_lists_allowed_methods():
    with pytest.raises(MethodNotAllowed) as info:
        app().match("PUT", "/files/a.txt")
    assert info.value.allowed == ["DELETE", "GET", "HEAD"]
    assert info.value.status == 405


def test_head_is_allowed_where_get_is():
    assert app().match("head", "/")() == "home"


def test_post_only_route():
    router = app()
    assert router.match("POST", "/users")() == "created"
    with pytest.raises(MethodNotAllowed):
        router.match("GET", "/users")


def test_paths_are_normalized_before_matching():
    router = app()
    assert router.match("GET", "//users/./7/")() == "user 7"
    assert router.match("GET", "/users/x/../7")() == "user 7"
    assert router.match("GET", "/users/7?tab=posts")() == "user 7"


def test_strict_slashes_keep_trailing_slash():
    router = Router(strict_slashes=True)
    router.add("/docs/", lambda: "docs")
    assert router.match("GET", "/docs/")() == "docs"
    with pytest.raises(NotFound):
        router.match("GET", "/docs")


def test_url_for():
    router = app()
    assert router.url_for("user", id=3) == "/users/3"
    assert router.url_for("file", rest="a/b.txt") == "/files/a/b.txt"
    assert router.url_for("home") == "/"


def test_url_for_puts_extra_params_in_query():
    assert app().url_for("user", id=3, tab="posts", page=2) == "/users/3?page=2&tab=posts"


@pytest.mark.parametrize(("name", "params"), [("nope", {}), ("user", {}), ("user", {"id": -4})])
def test_url_for_errors(name, params):
    with pytest.raises(ReverseError):
        app().url_for(name, **params)


def test_duplicate_names_are_refused():
    router = app()
    with pytest.raises(RouteError):
        router.add("/other", lambda: None, name="home")


def test_unknown_method_is_refused():
    with pytest.raises(RouteError):
        Router().add("/x", lambda: None, methods=["FETCH"])


def test_include_mounts_under_prefix():
    api = Router()
    api.add("/items/<int:id>", lambda id: f"item {id}", name="item")
    site = Router()
    site.include("/api/v1", api, name_prefix="api.")
    assert site.match("GET", "/api/v1/items/9")() == "item 9"
    assert site.url_for("api.item", id=9) == "/api/v1/items/9"


def test_decorator_registers_by_function_name():
    router = Router()

    @router.route("/ping")
    def ping():
        return "pong"

    assert router.match("GET", "/ping")() == "pong"
    assert router.url_for("ping") == "/ping"


def test_allowed_methods():
    assert app().allowed_methods("/files/x") == ["DELETE", "GET", "HEAD"]
    assert app().allowed_methods("/nothing/here") == []
