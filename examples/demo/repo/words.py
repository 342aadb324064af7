"""Small text utilities."""


def word_count(text):
    """Return the number of words in text."""
    return len(text.split(" "))
