"""Lexical translation tables: the file that shortlists and UNK replacement read.

A table is UTF-8 text, one entry a line, three tab-separated columns:

    source_token <TAB> target_token <TAB> score

- `source_token` non-empty: `score` is the translation probability
  `t(target | source)` (fast_align's lexical table; `gnmt_tf.alignment.lexical_table`
  writes it over SentencePiece pieces, with `<unk>` pieces written as their
  surface text), entries of a source token most probable first;
- `source_token` empty: `score` is the count of `target_token` in the
  training targets (the frequent-token list of a shortlist).

Tokens never contain tabs or newlines (SentencePiece pieces and whitespace
words cannot), so the format needs no quoting.
"""

import collections
import dataclasses
from typing import Dict, Iterable, List, Tuple


@dataclasses.dataclass
class LexicalTable:
    """A read table.

    Attributes:
      translations: `{source_token: [(target_token, probability), ...]}`,
        most probable first.
      frequencies: `[(target_token, count), ...]`, most frequent first.
    """

    translations: Dict[str, List[Tuple[str, float]]]
    frequencies: List[Tuple[str, float]]

    def best_translation(self, token: str):
        """The most probable translation of `token`, or None."""
        candidates = self.translations.get(token)
        return candidates[0][0] if candidates else None


def write_lexical_table(out, translations: Iterable[Tuple[str, str, float]],
                        frequencies: Iterable[Tuple[str, float]]) -> None:
    """Writes `(source, target, probability)` entries, then
    `(target, count)` frequencies, to the text stream `out`."""
    for source, target, prob in translations:
        out.write(f"{_check(source)}\t{_check(target)}\t{prob:.6g}\n")
    for target, count in frequencies:
        out.write(f"\t{_check(target)}\t{count:g}\n")


def read_lexical_table(path) -> LexicalTable:
    """Reads a table file (see the module docstring).

    Raises:
      ValueError: a line without three columns or with a bad score, naming
        the file and the line.
    """
    translations = collections.defaultdict(list)
    frequencies = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line:
                continue
            columns = line.split("\t")
            try:
                if len(columns) != 3 or not columns[1]:
                    raise ValueError("expected 3 tab-separated columns")
                score = float(columns[2])
                if not score >= 0:
                    raise ValueError(f"bad score {columns[2]!r}")
            except ValueError as e:
                raise ValueError(f"{path}:{number}: {e}") from None
            if columns[0]:
                translations[columns[0]].append((columns[1], score))
            else:
                frequencies.append((columns[1], score))
    for entries in translations.values():
        entries.sort(key=lambda e: -e[1])
    frequencies.sort(key=lambda e: -e[1])
    return LexicalTable(dict(translations), frequencies)


def _check(token: str) -> str:
    if not token or "\t" in token or "\n" in token:
        raise ValueError(f"bad token for a lexical table: {token!r}")
    return token
