import pytest
from csvq import QueryError, QuerySyntaxError, query
from data import PEOPLE


def rows(sql):
    return query(PEOPLE, sql).rows


def test_select_columns():
    assert rows("SELECT name, age FROM t LIMIT 2") == [["Ada", 36], ["Brian", 28]]


def test_select_star():
    result = query(PEOPLE, "SELECT * FROM t LIMIT 1")
    assert result.columns == ["name", "age", "city", "salary"]
    assert result.rows == [["Ada", 36, "London", 5200]]


def test_where_comparison():
    assert rows("SELECT name FROM t WHERE age > 40") == [["Chloe"], ["Farah"]]


def test_where_boundary_is_inclusive_for_ge():
    assert rows("SELECT name FROM t WHERE age >= 45") == [["Chloe"], ["Farah"]]


def test_where_and_or():
    sql = "SELECT name FROM t WHERE city = 'Paris' AND age < 30 OR name = 'Ada'"
    assert rows(sql) == [["Ada"], ["Brian"], ["Eve"]]


def test_where_not_equal():
    assert len(rows("SELECT name FROM t WHERE city <> 'London'")) == 4
    assert len(rows("SELECT name FROM t WHERE city != 'London'")) == 4


def test_like():
    assert rows("SELECT name FROM t WHERE name LIKE '%a%'") == [["Ada"], ["Brian"], ["Farah"]]
    assert rows("SELECT name FROM t WHERE name LIKE '_ve'") == [["Eve"]]


def test_not_like():
    assert rows("SELECT name FROM t WHERE name NOT LIKE '%a%'") == [["Chloe"], ["Dmitri"], ["Eve"]]


def test_in_list():
    assert rows("SELECT name FROM t WHERE city IN ('Berlin', 'Rome')") == [["Dmitri"], ["Farah"]]
    assert len(rows("SELECT name FROM t WHERE city NOT IN ('Berlin')")) == 4


def test_is_null():
    assert rows("SELECT name FROM t WHERE salary IS NULL") == [["Dmitri"]]
    assert len(rows("SELECT name FROM t WHERE salary IS NOT NULL")) == 5


def test_null_comparisons_filter_out():
    assert ["Dmitri"] not in rows("SELECT name FROM t WHERE salary < 100000")


def test_arithmetic_and_alias():
    result = query(PEOPLE, "SELECT name, salary * 12 AS yearly FROM t WHERE name = 'Ada'")
    assert result.columns == ["name", "yearly"]
    assert result.rows == [["Ada", 62400]]


def test_operator_precedence():
    assert rows("SELECT 2 + 3 * 4 AS x FROM t LIMIT 1") == [[14]]
    assert rows("SELECT (2 + 3) * 4 AS x FROM t LIMIT 1") == [[20]]


def test_integer_division_and_null_on_zero():
    assert rows("SELECT 7 / 2 AS a, 7.0 / 2 AS b, 1 / 0 AS c FROM t LIMIT 1") == [[3, 3.5, None]]


def test_string_concatenation():
    assert rows("SELECT name + '!' AS x FROM t LIMIT 1") == [["Ada!"]]


def test_scalar_functions():
    sql = "SELECT UPPER(name), LENGTH(city), SUBSTR(city, 2, 3) FROM t LIMIT 1"
    assert rows(sql) == [["ADA", 6, "ond"]]


def test_coalesce_and_round():
    sql = "SELECT COALESCE(salary, 0) AS s, ROUND(age / 7.0, 1) AS r FROM t WHERE name = 'Dmitri'"
    assert rows(sql) == [[0, 4.4]]


def test_order_by_desc_then_asc():
    sql = "SELECT name FROM t ORDER BY age DESC, name LIMIT 3"
    assert rows(sql) == [["Farah"], ["Chloe"], ["Ada"]]


def test_order_by_ties_keep_name_order():
    assert rows("SELECT name FROM t WHERE age = 28 ORDER BY name DESC") == [["Eve"], ["Brian"]]


def test_nulls_sort_first_ascending():
    assert rows("SELECT name FROM t ORDER BY salary LIMIT 1") == [["Dmitri"]]


def test_limit_offset():
    assert rows("SELECT name FROM t LIMIT 2 OFFSET 3") == [["Dmitri"], ["Eve"]]


def test_distinct():
    assert rows("SELECT DISTINCT city FROM t ORDER BY city") == [["Berlin"], ["London"], ["Paris"]]


def test_unknown_column():
    with pytest.raises(QueryError):
        rows("SELECT height FROM t")


def test_unknown_function():
    with pytest.raises(QueryError):
        rows("SELECT FROB(name) FROM t")


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT FROM t",
        "SELECT name t",
        "SELECT name FROM t WHERE",
        "SELECT name FROM t LIMIT x",
        "SELECT name FROM t ORDER name",
        "SELECT name FROM t WHERE name NOT = 1",
    ],
)
def test_syntax_errors(sql):
    with pytest.raises(QuerySyntaxError):
        rows(sql)
