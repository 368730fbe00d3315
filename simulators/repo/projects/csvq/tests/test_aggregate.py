import pytest
from csvq import QueryError, query
from data import PEOPLE


def rows(sql):
    return query(PEOPLE, sql).rows


def test_count_star_and_count_column():
    assert rows("SELECT COUNT(*), COUNT(salary) FROM t") == [[6, 5]]


def test_sum_avg_min_max_skip_nulls():
    assert rows("SELECT SUM(salary), MIN(age), MAX(age) FROM t") == [[25300, 28, 52]]
    assert rows("SELECT AVG(salary) FROM t") == [[5060.0]]


def test_group_by_with_order():
    sql = "SELECT city, COUNT(*) AS n, MAX(age) AS oldest FROM t GROUP BY city ORDER BY city"
    assert rows(sql) == [["Berlin", 2, 52], ["London", 2, 45], ["Paris", 2, 28]]


def test_order_by_aggregate_alias():
    sql = "SELECT city, SUM(salary) AS total FROM t GROUP BY city ORDER BY total DESC"
    assert rows(sql) == [["London", 11300], ["Paris", 7000], ["Berlin", 7000]]


def test_group_by_filters_first():
    sql = "SELECT city, COUNT(*) AS n FROM t WHERE age < 40 GROUP BY city ORDER BY n DESC, city"
    assert rows(sql) == [["Paris", 2], ["Berlin", 1], ["London", 1]]


def test_aggregate_over_empty_input():
    assert rows("SELECT COUNT(*), SUM(age) FROM t WHERE age > 100") == [[0, None]]


def test_aggregate_of_expression():
    assert rows("SELECT SUM(age * 2) FROM t WHERE city = 'Paris'") == [[112]]


def test_sum_star_is_refused():
    with pytest.raises(QueryError):
        rows("SELECT SUM(*) FROM t")


def test_select_star_with_group_is_refused():
    with pytest.raises(QueryError):
        rows("SELECT * FROM t GROUP BY city")
