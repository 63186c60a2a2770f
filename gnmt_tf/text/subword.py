"""Shared SentencePiece wordpiece vocabulary (GNMT §4.1: shared source/target
wordpieces with a word-begin marker).

Training and batch pre-tokenisation use the `sentencepiece` library; inside graphs
(translation, SavedModels) the same model runs through
`tensorflow_text.SentencepieceTokenizer`, so ids agree exactly.
"""

import collections
import io
import pathlib
import sys
import unicodedata

PAD_ID, UNK_ID, BOS_ID, EOS_ID = 0, 1, 2, 3
SPECIAL_IDS = (PAD_ID, UNK_ID, BOS_ID, EOS_ID)


def train_sentencepiece(sentences, model_prefix, vocabulary_size=8000,
                        model_type="unigram", user_defined_symbols=(),
                        character_coverage=1.0, max_sentences=2_000_000,
                        ):
    """Trains a SentencePiece model on an iterable of sentences.

    Ids are fixed to pad=0, unk=1, bos=2, eos=3 (the model configs' defaults).
    `user_defined_symbols` (e.g. typed placeholders) never split. The model
    is trained in a temporary folder next to `model_prefix` and its two files
    are renamed into place only when training succeeds.

    Returns:
      Path of the written `<model_prefix>.model`.
    """
    import os
    import tempfile

    sentences = [s for s in sentences if s.strip()]
    if not sentences:
        raise ValueError("no non-empty sentences to train a vocabulary on")
    vocabulary_size = vocabulary_size_floor(
        sentences, vocabulary_size, len(user_defined_symbols),
        character_coverage)
    model_prefix = pathlib.Path(model_prefix)
    model_prefix.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{model_prefix.name}.",
                                     dir=model_prefix.parent) as staging:
        staged = pathlib.Path(staging) / "spm"
        _train(sentences, staged, vocabulary_size, model_type,
               user_defined_symbols, character_coverage, max_sentences)
        for suffix in (".vocab", ".model"):  # .model last: it marks success
            os.replace(staged.with_suffix(suffix),
                       model_prefix.with_name(model_prefix.name + suffix))
    return model_prefix.with_name(model_prefix.name + ".model")


def coverage_for_base_characters(sentences, max_characters):
    """The SentencePiece `character_coverage` that keeps the
    `max_characters` most frequent characters of `sentences` (GNMT's cap on
    base characters, about 500 in Wu et al. 2016 §4.1); rarer characters
    become `<unk>`.

    SentencePiece counts the NFKC-normalised characters, with whitespace as
    one word-boundary symbol, sorts them by frequency, and keeps characters
    while the share of the text covered so far is below the coverage; so
    the coverage of the `max_characters` most frequent ones keeps exactly
    those. Returns 1.0 when the text has no more characters than that.
    """
    counts = collections.Counter()
    for sentence in sentences:
        text = unicodedata.normalize("NFKC", sentence).strip()
        if text:
            counts["\u2581"] += len(text.split())  # one before each word
            counts.update(c for c in text if not c.isspace())
    if len(counts) <= max_characters:
        return 1.0
    ranked = sorted(counts.values(), reverse=True)
    return sum(ranked[:max_characters]) / sum(ranked)


def vocabulary_size_floor(sentences, vocabulary_size, num_user_symbols=0,
                          character_coverage=1.0):
    """`vocabulary_size`, raised (with a note on stderr) to what SentencePiece
    needs: at full `character_coverage` one piece per distinct character of
    the (NFKC-normalised) text, plus the special and user-defined pieces.

    Without the floor a small preset on real text fails inside SentencePiece
    ("Vocabulary size is smaller than required_chars").
    """
    if character_coverage < 1.0:
        return vocabulary_size  # rare characters may fall back to <unk>
    characters = set()
    for sentence in sentences:
        characters.update(unicodedata.normalize("NFKC", sentence))
    distinct = len({c for c in characters if not c.isspace()})
    # All whitespace becomes the one word-boundary piece.
    needed = distinct + 1 + len(SPECIAL_IDS) + num_user_symbols
    if vocabulary_size < needed:
        print(f"note: vocabulary size raised from {vocabulary_size} to "
              f"{needed}: SentencePiece needs a piece for each of the "
              f"text's {distinct} distinct characters", file=sys.stderr)
        return needed
    return vocabulary_size


def _train(sentences, model_prefix, vocabulary_size, model_type,
           user_defined_symbols, character_coverage, max_sentences):
    import sentencepiece as spm

    from gnmt_tf.progress import progress

    # The bar counts the sentences SentencePiece reads, not its training.
    reading = progress(sentences, desc="vocabulary: reading",
                       unit=" sentences")
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(reading),
            model_prefix=str(model_prefix),
            vocab_size=vocabulary_size,
            model_type=model_type,
            character_coverage=character_coverage,
            input_sentence_size=max_sentences,
            shuffle_input_sentence=True,
            pad_id=PAD_ID, unk_id=UNK_ID, bos_id=BOS_ID, eos_id=EOS_ID,
            user_defined_symbols=list(user_defined_symbols),
            num_threads=2,
            # A soft limit: small corpora (tests, new languages) get fewer
            # pieces instead of an error; model configs take the real size.
            hard_vocab_limit=False,
            minloglevel=2,
        )
    except (RuntimeError, ValueError) as e:  # INTERNAL / INVALID_ARGUMENT
        raise ValueError(f"SentencePiece cannot train this vocabulary: "
                         f"{str(e).splitlines()[0]}") from None


class Subwords:
    """A SentencePiece model usable both from Python and inside TF graphs.

    Args:
      model_path: str or Path. A `.model` file written by `train_sentencepiece`.

    Raises:
      FileNotFoundError / ValueError: missing or unreadable model file.
    """

    def __init__(self, model_path):
        import sentencepiece as spm

        self.model_path = pathlib.Path(model_path)
        if not self.model_path.exists():
            raise FileNotFoundError(f"SentencePiece model {self.model_path} not found")
        self.model_proto = self.model_path.read_bytes()
        self._sp = spm.SentencePieceProcessor()
        try:
            self._sp.LoadFromSerializedProto(self.model_proto)
        except Exception as e:  # sentencepiece raises plain RuntimeError/OSError
            raise ValueError(f"{self.model_path} is not a SentencePiece model: {e}") from None
        self._tf_tokenizer = None

    @property
    def vocabulary_size(self) -> int:
        return self._sp.GetPieceSize()

    def encode(self, sentences):
        """Python-side tokenisation: list of str -> list of lists of ids."""
        return self._sp.Encode(list(sentences), out_type=int)

    def decode(self, ids_list):
        return self._sp.Decode([list(ids) for ids in ids_list])

    def pieces(self, sentence):
        return self._sp.EncodeAsPieces(sentence)

    def piece_id(self, piece) -> int:
        """The id of a piece string (`UNK_ID` for one not in the vocabulary)."""
        return self._sp.PieceToId(piece)

    def encode_pieces(self, sentence):
        """`sentence` -> list of `(id, piece)`, an `<unk>` piece spelled as
        its surface text in the sentence (what UNK replacement copies)."""
        return [(p.id, p.surface if p.id == UNK_ID else p.piece)
                for p in self._sp.EncodeAsProto(sentence).pieces]

    def encode_with_offsets(self, sentence):
        """`(ids, offsets)` of one sentence in one pass: its ids (as
        `encode`) and the `(begin, end)` UTF-8 byte offsets of each piece's
        text in `sentence`, leading whitespace left out (a piece that is
        only a word boundary gives `begin == end`)."""
        ids, spans = [], []
        for p in self._sp.EncodeAsProto(sentence).pieces:
            surface = p.surface.encode("utf-8")
            ids.append(p.id)
            spans.append((p.begin + len(surface) - len(surface.lstrip()),
                          p.end))
        return ids, spans

    def piece_offsets(self, sentence):
        """The offsets of `encode_with_offsets` alone."""
        return self.encode_with_offsets(sentence)[1]

    def decode_pieces(self, pieces) -> str:
        """Pieces -> text; a string that is no piece is kept verbatim."""
        return self._sp.DecodePieces(list(pieces))

    def id_pieces(self, ids):
        """Ids -> their pieces (`</s>` for the end token)."""
        return [self._sp.IdToPiece(int(i)) for i in ids]

    def is_control(self, piece_id) -> bool:
        """True for the special pieces (`<pad>`, `<unk>`, `<s>`, `</s>`)."""
        return bool(self._sp.IsControl(int(piece_id))
                    or self._sp.IsUnknown(int(piece_id)))

    @property
    def tf_tokenizer(self):
        """A `tensorflow_text.SentencepieceTokenizer` for the same model."""
        if self._tf_tokenizer is None:
            import tensorflow_text as tf_text

            self._tf_tokenizer = tf_text.SentencepieceTokenizer(
                model=self.model_proto, out_type="int32")
        return self._tf_tokenizer

    def reset_tf_tokenizer(self):
        """Drops the TF Text tokenizer; `tf_tokenizer` makes a new one (after
        TensorFlow's kernel cache, which holds its resource, was cleared)."""
        self._tf_tokenizer = None


def write_vocabulary(subwords: Subwords, path):
    """Writes the pieces one per line (for inspection and other toolkits)."""
    out = io.StringIO()
    for i in range(subwords.vocabulary_size):
        out.write(subwords._sp.IdToPiece(i) + "\n")
    from gnmt_tf.io_utils import write_text_atomic

    write_text_atomic(path, out.getvalue())
