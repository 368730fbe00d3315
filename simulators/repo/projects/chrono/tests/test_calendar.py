import datetime as dt

import pytest
from chrono import (
    add_business_days,
    add_months,
    business_days_between,
    days_in_month,
    is_leap_year,
    iso_week,
)


@pytest.mark.parametrize(
    ("year", "leap"), [(2024, True), (2023, False), (1900, False), (2000, True), (2100, False)]
)
def test_leap_years(year, leap):
    assert is_leap_year(year) is leap


def test_days_in_month():
    assert days_in_month(2024, 2) == 29
    assert days_in_month(2023, 2) == 28
    assert days_in_month(2023, 4) == 30
    assert days_in_month(2023, 12) == 31


def test_days_in_month_rejects_month_13():
    with pytest.raises(ValueError):
        days_in_month(2023, 13)


def test_add_months_clamps_to_month_end():
    assert add_months(dt.date(2024, 1, 31), 1) == dt.date(2024, 2, 29)
    assert add_months(dt.date(2023, 1, 31), 1) == dt.date(2023, 2, 28)


def test_add_months_across_years():
    assert add_months(dt.date(2023, 11, 15), 3) == dt.date(2024, 2, 15)
    assert add_months(dt.date(2024, 1, 15), -1) == dt.date(2023, 12, 15)


def test_iso_week():
    assert iso_week(dt.date(2024, 3, 15)) == (2024, 11)
    assert iso_week(dt.date(2021, 1, 1)) == (2020, 53)


def test_add_business_days_skips_weekend():
    friday = dt.date(2024, 3, 15)
    assert add_business_days(friday, 1) == dt.date(2024, 3, 18)


def test_add_business_days_backwards():
    monday = dt.date(2024, 3, 18)
    assert add_business_days(monday, -1) == dt.date(2024, 3, 15)


def test_add_business_days_zero_is_same_day():
    saturday = dt.date(2024, 3, 16)
    assert add_business_days(saturday, 0) == saturday


def test_add_business_days_skips_holidays():
    holidays = [dt.date(2024, 12, 25), dt.date(2024, 12, 26)]
    assert add_business_days(dt.date(2024, 12, 24), 1, holidays) == dt.date(2024, 12, 27)


def test_business_days_between_full_weeks():
    assert business_days_between(dt.date(2024, 3, 4), dt.date(2024, 3, 18)) == 10


def test_business_days_between_is_half_open():
    monday = dt.date(2024, 3, 4)
    assert business_days_between(monday, monday) == 0
    assert business_days_between(monday, monday + dt.timedelta(days=1)) == 1


def test_business_days_between_reversed_is_negative():
    assert business_days_between(dt.date(2024, 3, 18), dt.date(2024, 3, 4)) == -10
