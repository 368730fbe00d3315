"""chrono: parse, compute with and format dates and durations."""

from chrono.calendar import (
    add_business_days,
    add_months,
    business_days_between,
    days_in_month,
    is_leap_year,
    iso_week,
)
from chrono.durations import Duration, parse_duration
from chrono.errors import ParseError
from chrono.humanize import format_compact, format_duration, natural_delta
from chrono.iso import format_iso_duration, parse_iso_date, parse_iso_duration
from chrono.relative import parse_relative

__all__ = [
    "Duration",
    "ParseError",
    "add_business_days",
    "add_months",
    "business_days_between",
    "days_in_month",
    "format_compact",
    "format_duration",
    "format_iso_duration",
    "is_leap_year",
    "iso_week",
    "natural_delta",
    "parse_duration",
    "parse_iso_date",
    "parse_iso_duration",
    "parse_relative",
]
