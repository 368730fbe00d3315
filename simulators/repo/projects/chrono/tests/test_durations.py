import pytest
from chrono import Duration, ParseError, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1h30m", 5400),
        ("90 minutes", 5400),
        ("2 days, 3 hours", 183600),
        ("1.5h", 5400),
        ("1 week and 2 days", 777600),
        ("45s", 45),
        ("3 hrs 5 mins", 11100),
    ],
)
def test_parse_compact_and_spoken(text, seconds):
    assert parse_duration(text).seconds == seconds


def test_parse_clock_hours_and_minutes():
    assert parse_duration("1:30").seconds == 5400


def test_parse_clock_with_seconds():
    assert parse_duration("0:02:05").seconds == 125


def test_parse_negative_duration():
    assert parse_duration("-15m").seconds == -900


def test_parse_explicit_plus_sign():
    assert parse_duration("+2h").seconds == 7200


def test_parse_rejects_unknown_unit():
    with pytest.raises(ParseError):
        parse_duration("3 fortnights")


def test_parse_rejects_repeated_unit():
    with pytest.raises(ParseError):
        parse_duration("1h 2h")


def test_parse_rejects_empty_text():
    with pytest.raises(ParseError):
        parse_duration("   ")


def test_parse_error_reports_position():
    with pytest.raises(ParseError) as info:
        parse_duration("5m ???")
    assert info.value.position == 3


def test_duration_of_rounds_to_seconds():
    assert Duration.of(minutes=1.5).seconds == 90
    assert Duration.of(weeks=1, days=1).seconds == 8 * 86400


def test_components_split_largest_first():
    parts = Duration(694861).components()
    assert parts == {"week": 1, "day": 1, "hour": 1, "minute": 1, "second": 1}


def test_components_of_negative_duration_use_absolute_value():
    assert Duration(-3661).components()["hour"] == 1


def test_arithmetic():
    a, b = Duration(90), Duration(30)
    assert (a + b).seconds == 120
    assert (a - b).seconds == 60
    assert (a * 2).seconds == 180
    assert (3 * b).seconds == 90
    assert (-a).seconds == -90


def test_ordering_and_truth():
    assert Duration(5) < Duration(6)
    assert Duration(6) >= Duration(6)
    assert not Duration(0)
    assert abs(Duration(-4)) == Duration(4)
