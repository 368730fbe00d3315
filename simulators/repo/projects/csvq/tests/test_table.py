import pytest
from csvq import QueryError, load_csv
from csvq.table import infer


@pytest.mark.parametrize(
    ("text", "value"),
    [("12", 12), ("1.5", 1.5), ("", None), (" x ", "x"), ("TRUE", True), ("false", False)],
)
def test_infer(text, value):
    assert infer(text) == value


def test_load_csv_types_and_header():
    table = load_csv("a,b\n1,x\n2.5,\n")
    assert table.columns == ["a", "b"]
    assert table.rows == [[1, "x"], [2.5, None]]


def test_short_rows_are_padded():
    assert load_csv("a,b,c\n1\n").rows == [[1, None, None]]


def test_long_rows_are_refused():
    with pytest.raises(QueryError):
        load_csv("a,b\n1,2,3\n")


def test_duplicate_columns_are_refused():
    with pytest.raises(QueryError):
        load_csv("a,A\n1,2\n")


def test_column_lookup_ignores_case():
    table = load_csv("Name,Age\nAda,36\n")
    assert table.column("name") == ["Ada"]


def test_to_csv_round_trip():
    text = "a,b\n1,x\n,true\n"
    assert load_csv(text).to_csv() == text


def test_empty_csv():
    with pytest.raises(QueryError):
        load_csv("")
