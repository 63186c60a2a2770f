"""An n-gram language model over target SentencePiece pieces as a predictor.

The LM's tokens are the model's own SentencePiece pieces (`▁Ein`, `▁Hund`,
`e`, ...), not words: a predictor must score every vocabulary entry at every
step, which a piece-level LM does directly, while a word-level one could only
score a word once its last piece is known (SGNMT's word-to-subword
wrappers). The end token is the LM's `</s>`; other control pieces (`<s>`,
`<pad>`) and `<unk>` score as the LM's `<unk>`. Scores are natural logs
(kenlm's log10 times ln 10), like the models'.

kenlm runs in Python, so the step goes through `tf.numpy_function`: it works
in `Translator` and every search here, but cannot be part of a SavedModel
served by `tensorflow_model_server` (`servable` is False).
"""

import math

import numpy as np

# Distinct contexts whose score vectors are kept (beams share contexts).
CACHE_SIZE = 50000


def lm_tokens(subwords, ids_list):
    """Id lists -> the LM's token lists (pieces; control ids and the end
    token left out), as `gnmt-tf lm` trains on and the predictor scores."""
    return [[p for i, p in zip(ids, subwords.id_pieces(ids))
             if not subwords.is_control(i)] for ids in ids_list]


class NgramLMPredictor:
    """Scores the next target piece with a kenlm model (ARPA or binary).

    The state is `{"context": int32 [N, max(order - 1, 1)]}`: the last
    pieces, `-1` before the sentence start; the LM state of a row is
    rebuilt from it (an order-n model sees at most n - 1 pieces back, so
    this is exact), and the score vectors of contexts are cached.

    Args:
      path: a kenlm model file (ARPA, or kenlm's binary format).
      subwords: the target `gnmt_tf.text.subword.Subwords`.
      bos_id, end_id: the model's start and end tokens.

    Raises:
      UsageError: kenlm is not installed (`pip install kenlm`).
      FileNotFoundError: no such model file.
    """

    max_score = 0.0
    servable = False

    def __init__(self, path, subwords, bos_id, end_id):
        import pathlib

        from gnmt_tf.errors import UsageError

        try:
            import kenlm
        except ImportError:
            raise UsageError("the lm predictor needs kenlm: pip install "
                             "'gnmt-tf[lm]' (or kenlm)") from None
        if not pathlib.Path(path).exists():
            raise FileNotFoundError(f"language model {path} not found")
        self._kenlm = kenlm
        self.model = kenlm.Model(str(path))
        self.order = self.model.order
        self.bos_id, self.end_id = int(bos_id), int(end_id)
        size = subwords.vocabulary_size
        pieces = subwords.id_pieces(range(size))
        self.words = ["</s>" if i == self.end_id else
                      "<unk>" if subwords.is_control(i) else p
                      for i, p in enumerate(pieces)]
        self.vocab_size = size
        self._cache = {}

    def initial_state(self, batch_size):
        """`{"context": [B, max(order - 1, 1)]}` of -1 (sentence start)."""
        import tensorflow as tf

        return {"context": tf.fill(tf.stack([batch_size,
                                             max(self.order - 1, 1)]), -1)}

    def step(self, ids, state):
        """`(ids [N], state) -> (scores [N, V], None, state)`."""
        import tensorflow as tf

        ids = tf.where(tf.equal(ids, self.bos_id), -1, tf.cast(ids, tf.int32))
        context = tf.concat([state["context"][:, 1:], ids[:, tf.newaxis]], 1)
        scores = tf.numpy_function(self.context_scores, [context],
                                   tf.float32, stateful=False)
        scores.set_shape([None, self.vocab_size])
        return scores, None, {"context": context}

    def context_scores(self, context):
        """NumPy `[N, C]` contexts -> `[N, V]` float32 natural-log scores."""
        out = np.empty([len(context), self.vocab_size], np.float32)
        for row, key in enumerate(map(tuple, np.asarray(context).tolist())):
            if key not in self._cache:
                if len(self._cache) >= CACHE_SIZE:
                    self._cache.clear()
                self._cache[key] = self._score_all(key)
            out[row] = self._cache[key]
        return out

    def _score_all(self, context):
        kenlm, model = self._kenlm, self.model
        state, scratch = kenlm.State(), kenlm.State()
        tokens = [i for i in context if i >= 0]
        if len(tokens) < len(context) or self.order == 1:
            model.BeginSentenceWrite(state)
        else:
            model.NullContextWrite(state)
        for i in tokens:
            model.BaseScore(state, self.words[i], scratch)
            state, scratch = scratch, state
        scores = np.fromiter((model.BaseScore(state, w, scratch)
                              for w in self.words), np.float64,
                             count=self.vocab_size)
        return (scores * math.log(10.0)).astype(np.float32)
