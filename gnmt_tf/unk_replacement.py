"""UNK replacement from attention (Luong et al. 2015; Facebook's NMT).

An output `<unk>` is replaced by the translation of the source token it
attends to most: the most probable entry of a lexical table
(`gnmt_tf.text.lexical_table`, e.g. fast_align's over SentencePiece pieces),
or, when the table has none (or none is given), a copy of the source token.
A source `<unk>` piece is copied as its surface text, recovered from the
sentence with SentencePiece's offsets (`Subwords.encode_pieces`), so
characters the vocabulary lacks (CJK in a Latin-script model, rare symbols,
names with diacritics) come through to the output.

Runs on the host after the search, on the ids and attention the search
returns (`Translator.search(..., details=True)`).

Example:

    >>> replacer = UnkReplacer(subwords, read_lexical_table("lex.tsv"))
    >>> translator = Translator(model, subwords, unk_replacer=replacer)
    >>> translator.translate(["Ein Mann in 東京."])
"""

from typing import List, NamedTuple, Optional, Sequence

import numpy as np

from gnmt_tf.text.subword import EOS_ID, UNK_ID


class Replacement(NamedTuple):
    """One replaced `<unk>`: output position, the source position and
    token it attended to most, what replaced it, and how (`"dictionary"`
    or `"copy"`)."""

    position: int
    source_position: int
    source_token: str
    replacement: str
    method: str


class UnkReplacer:
    """Replaces output `<unk>` pieces using attention.

    Args:
      subwords: `gnmt_tf.text.subword.Subwords` of the model.
      dictionary: `gnmt_tf.text.lexical_table.LexicalTable` or None (copy
        only). Looked up by source piece (an `<unk>` piece by its surface).
      source_unk_first: bool. When the source has `<unk>` pieces, an output
        `<unk>` takes the one of them it attends to most (a model emits
        `<unk>` for what it cannot spell, mostly a source `<unk>`; the
        attention argmax alone often lands on a neighbouring piece).
    """

    def __init__(self, subwords, dictionary=None, source_unk_first=True):
        self.subwords = subwords
        self.dictionary = dictionary
        self.source_unk_first = source_unk_first

    def lookup(self, token: str):
        """`(replacement, method)` for a source token."""
        if self.dictionary is not None:
            best = self.dictionary.best_translation(token)
            if best is not None:
                return best, "dictionary"
        return token, "copy"

    def replace(self, sentence: str, ids: Sequence[int], attention,
                prefix_length: int = 0, end_id: int = EOS_ID) -> str:
        """The text of output `ids` with every `<unk>` replaced (see
        `replace_detailed`)."""
        return self.replace_detailed(sentence, ids, attention, prefix_length,
                                     end_id)[0]

    def replace_detailed(self, sentence: str, ids: Sequence[int], attention,
                         prefix_length: int = 0, end_id: Optional[int] = EOS_ID
                         ):
        """Replaces the `<unk>`s of one hypothesis.

        Args:
          sentence: the source text.
          ids: int `[T]`, the output ids (an end token ends them).
          attention: float `[T, S]`, each output position's attention over
            the model's source positions (`S` may include padding).
          prefix_length: int. Source positions before the first piece (a
            `<2xx>` token); those and the end token are never chosen.
          end_id: int or None. The end token.

        Returns:
          `(text, [Replacement, ...])`.
        """
        source = self.subwords.encode_pieces(sentence)
        attention = np.asarray(attention, np.float64)
        source_unks = np.array([i == UNK_ID for i, _ in source])
        restrict = self.source_unk_first and source_unks.any()
        pieces: List[str] = []
        replacements: List[Replacement] = []
        for t, i in enumerate(int(i) for i in ids):
            if i == end_id:
                break
            if i != UNK_ID:
                pieces.append(self.subwords.id_pieces([i])[0])
                continue
            window = attention[t, prefix_length:prefix_length + len(source)]
            if window.size == 0:  # nothing to point at: drop the <unk>
                continue
            if restrict and len(window) == len(source):
                window = np.where(source_unks, window, -np.inf)
            s = int(np.argmax(window))
            token = source[s][1]
            replacement, method = self.lookup(token)
            pieces.append(replacement)
            replacements.append(Replacement(t, s, token, replacement, method))
        return self.subwords.decode_pieces(pieces), replacements
