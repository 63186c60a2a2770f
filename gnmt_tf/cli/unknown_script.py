"""Input in a script the model never saw: told on stderr, not translated
into confident nonsense without a word.

A model trained on English, German, French and Czech has no subwords for
Arabic, Hebrew, Chinese or Cyrillic letters: SentencePiece turns each such
word into one ``<unk>``, and the model still answers with a fluent target
sentence ("Eser, die sich wie ist wie ist." for an Arabic line). The
model's own vocabulary says which lines these are, whatever the
language: `UnknownScriptCheck` counts the letters of a line that fall in
``<unk>`` pieces, and a line where most are unknown (`UNKNOWN_SHARE`) is
listed at the end of the run in one warning line. A few unknown letters
(a Czech "ž" for an English-German model, a name in another script) do
not count.

Example:
```python
check = UnknownScriptCheck("model/spm.model")
check.add(["A dog runs.", "رجل يركب دراجة."], first=0)
check.report()  # warning: 1 input line (line 2) is mostly ...
```
"""

import sys

# A line is reported when more than this share of its letters is unknown.
UNKNOWN_SHARE = 0.5
# Line numbers listed in the warning, at most.
LISTED_LINES = 10


class UnknownScriptCheck:
    """Finds the input lines written mostly in letters outside a model's
    vocabulary.

    Args:
      vocabulary_path: str or Path. The model's SentencePiece model.

    Attributes:
      lines: list of int. The 1-based numbers of the lines found so far.
    """

    def __init__(self, vocabulary_path):
        from gnmt_tf.text.subword import UNK_ID, Subwords

        self._subwords = Subwords(vocabulary_path)
        self._unknown_id = UNK_ID
        self.lines = []

    def unknown_share(self, line) -> float:
        """The share of `line`'s letters in ``<unk>`` pieces (0 without
        letters)."""
        letters = sum(c.isalpha() for c in line)
        if not letters:
            return 0.0
        unknown = sum(sum(c.isalpha() for c in surface)
                      for piece_id, surface in
                      self._subwords.encode_pieces(line)
                      if piece_id == self._unknown_id)
        return unknown / letters

    def add(self, lines, first):
        """Checks a chunk of input lines; `first`: the 0-based index of
        its first line in the whole input."""
        self.lines += [first + i for i, line in enumerate(lines, 1)
                       if self.unknown_share(line) > UNKNOWN_SHARE]

    def report(self, stream=None):
        """Writes one warning line about the lines found, if any."""
        if not self.lines:
            return
        count = len(self.lines)
        listed = ", ".join(str(n) for n in self.lines[:LISTED_LINES])
        if count > LISTED_LINES:
            listed += f" and {count - LISTED_LINES} more"
        if count == 1:
            what, verb, whose = "1 input line (line", "is", "its translation"
        else:
            what, verb, whose = (f"{count} input lines (lines", "are",
                                 "their translations")
        print(f"warning: {what} {listed}) {verb} mostly in letters the "
              "model's vocabulary lacks (a script it never saw): "
              f"{whose} cannot be trusted", file=stream or sys.stderr)


def checking(vocabulary_path, format_chunk):
    """`(format_chunk, check)` for `gnmt_tf.cli.streaming.translate_stream`:
    `format_chunk` that also runs an `UnknownScriptCheck` of the model's
    vocabulary over the input lines; `check.report()` warns at the end."""
    check = UnknownScriptCheck(vocabulary_path)

    def format_and_check(lines, results, first):
        check.add(lines, first)
        return format_chunk(lines, results, first)

    return format_and_check, check
