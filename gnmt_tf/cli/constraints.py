"""Glossary terms for `gnmt-tf translate`: `--constraints` and
`--glossary-constraints`.

`--constraints FILE` gives one line per input line: the target terms (tab
separated) its translation must contain; an empty line asks for none.
`--glossary-constraints FILE` gives `source term<TAB>target term` lines;
an input line asks for the target term of every source term it contains (a
whole-word, case-insensitive match). Unlike the pipeline's `--glossary`
(placeholders restored after translation), the target term is decoded in
place, so the words around it are chosen to fit it. Either way the terms reach
`Translator.translate_nbest(constraints=...)`, which tokenises them with the
model's SentencePiece and decodes with dynamic beam allocation
(`gnmt_tf.decoding.constrained_search`).
"""

import re

from gnmt_tf.data.corpus import read_lines


class LexicalConstraints:
    """The terms of each input line, from a constraints file or a glossary.

    Use `from_constraints_file` or `from_glossary`.
    """

    def __init__(self, name, per_line=None, glossary=None):
        self.name = name
        self.per_line = per_line
        self.glossary = glossary

    @classmethod
    def from_constraints_file(cls, path):
        """One list of terms per line of `path` (tab-separated)."""
        lines = read_lines(path)
        return cls("--constraints", per_line=[
            [t.strip() for t in line.split("\t") if t.strip()]
            for line in lines])

    @classmethod
    def from_glossary(cls, path):
        """`(pattern, target term)` pairs from `path`'s `source<TAB>target`
        lines (blank lines skipped).

        Raises:
          ValueError: a line without a source and a target term.
        """
        glossary = []
        for number, line in enumerate(read_lines(path), 1):
            if not line.strip():
                continue
            source, _, target = line.partition("\t")
            if not source.strip() or not target.strip():
                raise ValueError(f"--glossary-constraints {path} line "
                                 f"{number}: expected 'source term<TAB>"
                                 "target term'")
            pattern = re.compile(r"(?<!\w)" + re.escape(source.strip())
                                 + r"(?!\w)", re.IGNORECASE)
            glossary.append((pattern, target.strip()))
        return cls("--glossary-constraints", glossary=glossary)

    def for_lines(self, first, sentences):
        """The term lists of `sentences`, input lines `first`, `first + 1`,
        ... (0-based).

        Raises:
          ValueError: the constraints file has fewer lines than the input.
        """
        if self.glossary is None:
            if first + len(sentences) > len(self.per_line):
                raise ValueError(
                    f"--constraints has {len(self.per_line)} lines, fewer "
                    "than the input")
            return self.per_line[first:first + len(sentences)]
        out = []
        for sentence in sentences:
            terms = []
            for pattern, target in self.glossary:
                if pattern.search(sentence) and target not in terms:
                    terms.append(target)
            out.append(terms)
        return out

    def check_all_used(self, num_lines):
        """Raises ValueError when a constraints file has more lines than the
        `num_lines` input lines."""
        if self.glossary is None and len(self.per_line) > num_lines:
            raise ValueError(f"--constraints has {len(self.per_line)} lines, "
                             f"but the input had {num_lines}")
