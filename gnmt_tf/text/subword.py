"""Shared SentencePiece wordpiece vocabulary (GNMT §4.1: shared source/target
wordpieces with a word-begin marker).

Training and batch pre-tokenisation use the `sentencepiece` library; inside graphs
(translation, SavedModels) the same model runs through
`tensorflow_text.SentencepieceTokenizer`, so ids agree exactly.
"""

import io
import pathlib

PAD_ID, UNK_ID, BOS_ID, EOS_ID = 0, 1, 2, 3


def train_sentencepiece(sentences, model_prefix, vocabulary_size=8000,
                        model_type="unigram", user_defined_symbols=(),
                        character_coverage=1.0, max_sentences=2_000_000,
                        ):
    """Trains a SentencePiece model on an iterable of sentences.

    Ids are fixed to pad=0, unk=1, bos=2, eos=3 (the model configs' defaults).
    `user_defined_symbols` (e.g. typed placeholders) never split.

    Returns:
      Path of the written `<model_prefix>.model`.
    """
    import sentencepiece as spm

    sentences = [s for s in sentences if s.strip()]
    if not sentences:
        raise ValueError("no non-empty sentences to train a vocabulary on")
    model_prefix = pathlib.Path(model_prefix)
    model_prefix.parent.mkdir(parents=True, exist_ok=True)
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences),
        model_prefix=str(model_prefix),
        vocab_size=vocabulary_size,
        model_type=model_type,
        character_coverage=character_coverage,
        input_sentence_size=max_sentences,
        shuffle_input_sentence=True,
        pad_id=PAD_ID, unk_id=UNK_ID, bos_id=BOS_ID, eos_id=EOS_ID,
        user_defined_symbols=list(user_defined_symbols),
        num_threads=2,
        # A soft limit: small corpora (tests, new languages) get fewer pieces
        # instead of an error; model configs take the real size.
        hard_vocab_limit=False,
        minloglevel=2,
    )
    return model_prefix.with_suffix(".model")


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

    @property
    def tf_tokenizer(self):
        """A `tensorflow_text.SentencepieceTokenizer` for the same model."""
        if self._tf_tokenizer is None:
            import tensorflow_text as tf_text

            self._tf_tokenizer = tf_text.SentencepieceTokenizer(
                model=self.model_proto, out_type="int32")
        return self._tf_tokenizer


def write_vocabulary(subwords: Subwords, path):
    """Writes the pieces one per line (for inspection and other toolkits)."""
    out = io.StringIO()
    for i in range(subwords.vocabulary_size):
        out.write(subwords._sp.IdToPiece(i) + "\n")
    pathlib.Path(path).write_text(out.getvalue(), encoding="utf-8")
