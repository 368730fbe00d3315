import datetime as dt

import pytest
from chrono import Duration, ParseError, format_iso_duration, parse_iso_date, parse_iso_duration


def test_calendar_date_with_and_without_dashes():
    assert parse_iso_date("2024-03-15") == dt.date(2024, 3, 15)
    assert parse_iso_date("20240315") == dt.date(2024, 3, 15)


def test_ordinal_date():
    assert parse_iso_date("2024-075") == dt.date(2024, 3, 15)


def test_ordinal_date_last_day_of_leap_year():
    assert parse_iso_date("2024-366") == dt.date(2024, 12, 31)


def test_ordinal_day_366_in_common_year_is_rejected():
    with pytest.raises(ParseError):
        parse_iso_date("2023-366")


def test_week_date():
    assert parse_iso_date("2024-W11-5") == dt.date(2024, 3, 15)


def test_week_date_in_previous_calendar_year():
    assert parse_iso_date("2021-W01-1") == dt.date(2021, 1, 4)


def test_week_53_exists_only_in_long_years():
    assert parse_iso_date("2020-W53-7") == dt.date(2021, 1, 3)
    with pytest.raises(ParseError):
        parse_iso_date("2021-W53-1")


def test_february_29_only_in_leap_years():
    assert parse_iso_date("2000-02-29") == dt.date(2000, 2, 29)
    with pytest.raises(ParseError):
        parse_iso_date("1900-02-29")


def test_month_out_of_range():
    with pytest.raises(ParseError):
        parse_iso_date("2024-13-01")


def test_iso_duration_days_and_time():
    assert parse_iso_duration("P3DT4H5M").seconds == 3 * 86400 + 4 * 3600 + 5 * 60


def test_iso_duration_weeks_and_seconds():
    assert parse_iso_duration("P2W").seconds == 14 * 86400
    assert parse_iso_duration("PT90S").seconds == 90


def test_iso_duration_fractional_seconds_round():
    assert parse_iso_duration("PT1.6S").seconds == 2


def test_iso_duration_negative():
    assert parse_iso_duration("-PT1H").seconds == -3600


@pytest.mark.parametrize("text", ["P", "PT", "P1Y", "1D", "P1DT"])
def test_iso_duration_rejects(text):
    with pytest.raises(ParseError):
        parse_iso_duration(text)


def test_format_iso_duration():
    assert format_iso_duration(Duration(93784)) == "P1DT2H3M4S"
    assert format_iso_duration(Duration(0)) == "PT0S"
    assert format_iso_duration(Duration(-3600)) == "-PT1H"
    assert format_iso_duration(Duration(2 * 86400)) == "P2D"


def test_format_then_parse_round_trips():
    for seconds in (1, 59, 3600, 86399, 90061, 1209600):
        assert parse_iso_duration(format_iso_duration(Duration(seconds))).seconds == seconds
