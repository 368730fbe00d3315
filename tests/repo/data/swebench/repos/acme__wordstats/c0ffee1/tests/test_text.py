from wordstats import normalize, sentences


def test_normalize_lowers_and_strips_punctuation():
    assert normalize("Hello, World!") == ["hello", "world"]


def test_normalize_keeps_apostrophes():
    assert normalize("It's fine") == ["it's", "fine"]


def test_sentences_split_on_end_marks():
    assert sentences("One. Two! Three?") == ["One.", "Two!", "Three?"]
