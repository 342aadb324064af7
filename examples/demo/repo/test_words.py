import unittest

from words import word_count


class WordCountTest(unittest.TestCase):
    def test_simple(self):
        self.assertEqual(word_count("hello world"), 2)

    def test_extra_spaces(self):
        self.assertEqual(word_count("  hello   world "), 2)

    def test_other_whitespace(self):
        self.assertEqual(word_count("one\ntwo\tthree"), 3)

    def test_empty(self):
        self.assertEqual(word_count(""), 0)


if __name__ == "__main__":
    unittest.main()
