from wordstats import word_counts


def test_word_counts():
    assert word_counts("a b a")["a"] == 2


def test_word_counts_ignore_case():
    assert word_counts("A a")["a"] == 2
