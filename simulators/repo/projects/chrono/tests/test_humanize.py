from chrono import Duration, format_compact, format_duration, natural_delta


def test_format_duration_two_largest_parts():
    assert format_duration(Duration(93784)) == "1 day 2 hours"


def test_format_duration_singular_and_plural():
    assert format_duration(Duration(3660)) == "1 hour 1 minute"
    assert format_duration(Duration(7320)) == "2 hours 2 minutes"


def test_format_duration_more_units():
    assert format_duration(Duration(93784), max_units=4) == "1 day 2 hours 3 minutes 4 seconds"


def test_format_duration_zero_and_negative():
    assert format_duration(Duration(0)) == "0 seconds"
    assert format_duration(Duration(-90)) == "minus 1 minute 30 seconds"


def test_format_compact():
    assert format_compact(Duration(788645)) == "1w2d3h4m5s"
    assert format_compact(Duration(0)) == "0s"
    assert format_compact(Duration(-60)) == "-1m"


def test_natural_delta_future_and_past():
    assert natural_delta(Duration(3 * 86400)) == "in 3 days"
    assert natural_delta(Duration(-2 * 3600)) == "2 hours ago"


def test_natural_delta_rounds_to_one_unit():
    assert natural_delta(Duration(90 * 60)) == "in 2 hours"
    assert natural_delta(Duration(-61)) == "a minute ago"


def test_natural_delta_now_and_seconds():
    assert natural_delta(Duration(5)) == "now"
    assert natural_delta(Duration(30)) == "in a few seconds"
