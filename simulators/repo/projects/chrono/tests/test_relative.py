import datetime as dt

import pytest
from chrono import ParseError, parse_relative

BASE = dt.date(2024, 3, 13)  # a Wednesday


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("today", dt.date(2024, 3, 13)),
        ("Tomorrow", dt.date(2024, 3, 14)),
        ("yesterday", dt.date(2024, 3, 12)),
        ("in 3 days", dt.date(2024, 3, 16)),
        ("2 weeks ago", dt.date(2024, 2, 28)),
        ("a week ago", dt.date(2024, 3, 6)),
        ("in 1 month", dt.date(2024, 4, 13)),
        ("in 2 years", dt.date(2026, 3, 13)),
    ],
)
def test_relative_amounts(text, expected):
    assert parse_relative(text, BASE) == expected


def test_next_weekday_is_strictly_after():
    assert parse_relative("next friday", BASE) == dt.date(2024, 3, 15)
    assert parse_relative("next wednesday", BASE) == dt.date(2024, 3, 20)


def test_last_weekday_is_strictly_before():
    assert parse_relative("last monday", BASE) == dt.date(2024, 3, 11)
    assert parse_relative("last wednesday", BASE) == dt.date(2024, 3, 6)


def test_this_weekday_includes_today():
    assert parse_relative("this wednesday", BASE) == BASE


def test_end_of_month():
    assert parse_relative("end of month", dt.date(2024, 2, 10)) == dt.date(2024, 2, 29)


def test_month_steps_clamp():
    assert parse_relative("in 1 month", dt.date(2024, 1, 31)) == dt.date(2024, 2, 29)


def test_extra_spaces_are_ignored():
    assert parse_relative("  in   3   days ", BASE) == dt.date(2024, 3, 16)


@pytest.mark.parametrize("text", ["in 3 days ago", "next blursday", "someday"])
def test_rejects(text):
    with pytest.raises(ParseError):
        parse_relative(text, BASE)
