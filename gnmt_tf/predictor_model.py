"""SGNMT predictors combined into one `Seq2SeqModel`.

Stahlberg et al. (2017), "SGNMT -- A Flexible NMT Decoding Platform": a
search scores each next token with several *predictors*, combined
log-linearly, `score = sum_i w_i * log p_i`. `PredictorModel` wraps such a
combination as one `gnmt_tf.seq2seq_model.Seq2SeqModel`, so `Translator`,
beam, greedy and exact search, forced decoding (`gnmt_tf.rescoring`) and the
SavedModel export take it unchanged. Predictors:

- ``nmt``: a translation model (any `Seq2SeqModel`); several make an
  ensemble. ``ensemble_mode="average"`` averages their probabilities
  (`EnsembleStepFunction`, their weights as mixture weights) and adds that
  log-probability with weight 1 instead.
- ``wc``: a word-count bonus (`WordCountPredictor`).
- ``lm``: a target-side n-gram LM over SentencePiece pieces
  (`gnmt_tf.lm.predictor.NgramLMPredictor`; kenlm, host-side, so not in a
  SavedModel).

Example:
```python
model, subwords = load_predictors(["runs/a", "runs/b"],
                                  ["nmt", "nmt", "lm", "wc"],
                                  [1.0, 1.0, 0.3, 0.1], lm="lm.arpa")
Translator(model, subwords).translate(["A dog runs."])
```
"""

import pathlib

from gnmt_tf.decoding.ensemble import EnsembleStepFunction
from gnmt_tf.decoding.ensemble import LogLinearStepFunction
from gnmt_tf.decoding.ensemble import WordCountPredictor
from gnmt_tf.decoding.ensemble import check_weights
from gnmt_tf.seq2seq_model import Seq2SeqModelBase

PREDICTOR_TYPES = ("nmt", "lm", "wc")
ENSEMBLE_MODES = ("loglinear", "average")


def _is_model(predictor):
    return hasattr(predictor, "encode")


class PredictorModel(Seq2SeqModelBase):
    """Models and target-side predictors as one `Seq2SeqModel`.

    `encode` runs every model's encoder on the same source ids, the state
    is `{"p0": ..., "p1": ...}` (one entry per predictor, in order; a
    target-side predictor's from its `initial_state(batch_size)`), and
    `step` returns the weighted sum of the predictors' scores and the
    weight-averaged attention of the models (see `LogLinearStepFunction`).
    Everything else (`config`, task inputs, source prefix) is the first
    model's, which every model must share.

    Args:
      predictors: list of `Seq2SeqModel`s and target-side predictors
        (`step(ids, state)`, `initial_state(batch_size)`, `max_score`),
        at least one model.
      weights: list of floats >= 0 (one per predictor, one > 0), or None
        for all 1.
      ensemble_mode: "loglinear" or "average" (see the module docstring).

    Raises:
      ValueError: no model, a bad weight or mode, or models that differ in
        their special tokens, vocabulary size, task inputs or source prefix.
    """

    # Predictors may be host code (an n-gram LM) and members may differ in
    # what they compile: the graph search, always.
    supports_compiled_search = False

    def __init__(self, predictors, weights=None, ensemble_mode="loglinear"):
        self.predictors = list(predictors)
        self.weights = check_weights(
            [1.0] * len(self.predictors) if weights is None else weights,
            len(self.predictors))
        if ensemble_mode not in ENSEMBLE_MODES:
            raise ValueError(f"ensemble mode must be one of "
                             f"{', '.join(ENSEMBLE_MODES)}, got "
                             f"{ensemble_mode!r}")
        self.ensemble_mode = ensemble_mode
        self.models = [p for p in self.predictors if _is_model(p)]
        if not self.models:
            raise ValueError("a predictor combination needs at least one "
                             "translation model (nmt)")
        first = self.models[0]
        for i, model in enumerate(self.models[1:], 2):
            for what, get in (
                    ("bos/eos/pad ids", lambda m: (m.config.bos_id,
                                                   m.config.eos_id,
                                                   m.config.pad_id)),
                    ("vocabulary size",
                     lambda m: getattr(m.config, "vocabulary_size", None)),
                    ("task inputs", lambda m: tuple(m.task_inputs())),
                    ("source prefix", lambda m: m.source_prefix)):
                if get(model) != get(first):
                    raise ValueError(
                        f"model {i} differs from model 1 in its {what} "
                        f"({get(model)!r} vs {get(first)!r}): ensemble "
                        "members must share the vocabulary and task inputs")
        self.config = first.config
        limits = [m.max_target_length for m in self.models
                  if m.max_target_length]
        self.max_target_length = min(limits) if limits else None
        self.default_task = first.default_task
        self.trained_tasks = first.trained_tasks
        self.fixed_task = first.fixed_task
        self.source_prefix = first.source_prefix
        self.servable = all(getattr(p, "servable", True)
                            for p in self.predictors)
        self._combined = self._combine()

    def _combine(self):
        """The step function over the tuple of predictor states (nested
        one level for the models in "average" mode)."""
        steps = [p.step for p in self.predictors]
        maxima = [0.0 if _is_model(p) else p.max_score
                  for p in self.predictors]
        if self.ensemble_mode == "loglinear" or len(self.models) == 1:
            self._layout = None
            return LogLinearStepFunction(steps, self.weights, maxima)
        models = [i for i, p in enumerate(self.predictors) if _is_model(p)]
        others = [i for i, p in enumerate(self.predictors)
                  if not _is_model(p)]
        model_weights = [self.weights[i] for i in models]
        if not any(w > 0 for w in model_weights):
            raise ValueError("ensemble mode average needs a model weight > 0")
        # The mixture drops the models of weight 0 (it needs weights > 0).
        mixed = [i for i in models if self.weights[i] > 0]
        self._layout = (mixed, others)
        ensemble = EnsembleStepFunction([steps[i] for i in mixed],
                                        [self.weights[i] for i in mixed])
        return LogLinearStepFunction(
            [ensemble] + [steps[i] for i in others],
            [1.0] + [self.weights[i] for i in others],
            [0.0] + [maxima[i] for i in others])

    @property
    def max_step_score(self):
        """An upper bound of one step's combined score (> 0 with a positive
        word-count bonus: exact search then cannot prune)."""
        return self._combined.max_step_score

    @property
    def variables(self):
        """Every model's variables (what a SavedModel must hold)."""
        return [v for m in self.models for v in m.variables]

    def task_inputs(self):
        return self.models[0].task_inputs()

    def encode(self, source_ids, **task):
        import tensorflow as tf

        return {"models": [m.encode(source_ids, **task) for m in self.models],
                "batch_size": tf.shape(source_ids)[0]}

    def initial_state(self, encoded, max_length=None):
        encodings = iter(encoded["models"])
        state = {}
        for i, p in enumerate(self.predictors):
            if _is_model(p):
                state[f"p{i}"] = (p.initial_state(next(encodings)) if
                                  max_length is None else
                                  p.initial_state(next(encodings), max_length))
            else:
                state[f"p{i}"] = p.initial_state(encoded["batch_size"])
        return state

    def step(self, ids, state):
        """`(ids [N], state) -> (scores [N, V], attention [N, S] or None,
        state)`."""
        states = [state[f"p{i}"] for i in range(len(self.predictors))]
        if self._layout is None:
            scores, attention, new = self._combined(ids, tuple(states))
            return scores, attention, {f"p{i}": s for i, s in enumerate(new)}
        mixed, others = self._layout
        scores, attention, (mixed_new, *others_new) = self._combined(
            ids, (tuple(states[i] for i in mixed),
                  *(states[i] for i in others)))
        new = dict(state)
        new.update({f"p{i}": s for i, s in zip(mixed, mixed_new)})
        new.update({f"p{i}": s for i, s in zip(others, others_new)})
        return scores, attention, new


def parse_predictors(text):
    """`"nmt,nmt,lm,wc"` -> `["nmt", "nmt", "lm", "wc"]`.

    Raises:
      ValueError: an unknown predictor type (naming the known ones).
    """
    names = [n.strip() for n in str(text).split(",")]
    unknown = [n for n in names if n not in PREDICTOR_TYPES]
    if unknown:
        raise ValueError(f"unknown predictor(s) {', '.join(map(repr, unknown))}"
                         f"; known: {', '.join(PREDICTOR_TYPES)}")
    return names


def parse_weights(text):
    """`"1,1,0.3"` -> `[1.0, 1.0, 0.3]` (checked by `check_weights` later).

    Raises:
      ValueError: a weight that is not a number.
    """
    try:
        return [float(w) for w in str(text).split(",")]
    except ValueError:
        raise ValueError(f"weights must be comma-separated numbers, got "
                         f"{text!r}") from None


def load_predictors(model_dirs, predictors=None, weights=None, lm=None,
                    ensemble_mode="loglinear"):
    """Loads model directories and builds the `PredictorModel` of
    `predictors`.

    Args:
      model_dirs: list of model directories (or shipped model names), one
        per ``nmt`` predictor, in order.
      predictors: list of predictor types (`PREDICTOR_TYPES`), or None for
        one ``nmt`` per model.
      weights: list of floats, one per predictor, or None for all 1.
      lm: the kenlm model file of the ``lm`` predictor.
      ensemble_mode: "loglinear" or "average".

    Returns:
      `(PredictorModel, subwords)`: the first model's vocabulary.

    Raises:
      ValueError: the models' SentencePiece vocabularies differ, the number
        of models or weights does not match the predictors, an ``lm``
        predictor without `lm` (or `lm` without one), a bad weight.
    """
    from gnmt_tf.model_dir import load_model

    model_dirs = [str(d) for d in model_dirs]
    if not model_dirs:
        raise ValueError("give at least one model")
    if predictors is None:
        predictors = ["nmt"] * len(model_dirs)
    predictors = list(predictors)
    parse_predictors(",".join(predictors))
    if predictors.count("nmt") != len(model_dirs):
        raise ValueError(f"{predictors.count('nmt')} nmt predictor(s) but "
                         f"{len(model_dirs)} model(s): give one model per "
                         "nmt predictor")
    if weights is not None:
        check_weights(weights, len(predictors))
    if ("lm" in predictors) != (lm is not None):
        raise ValueError("the lm predictor needs a language model file (--lm)"
                         if lm is None else
                         "a language model was given but no lm predictor")
    if predictors.count("lm") > 1:
        raise ValueError("give at most one lm predictor")
    loaded = [load_model(d) for d in model_dirs]
    first_vocab = loaded[0][1]
    for directory, (_, subwords, _) in zip(model_dirs[1:], loaded[1:]):
        if subwords.model_proto != first_vocab.model_proto:
            raise ValueError(
                f"{directory} has another SentencePiece vocabulary than "
                f"{model_dirs[0]} ({pathlib.Path(subwords.model_path).name} "
                "differs): ensemble members must share it (train with "
                "--vocab of the first model)")
    models = iter(model for model, _, _ in loaded)
    config = loaded[0][0].config
    built = []
    for name in predictors:
        if name == "nmt":
            built.append(next(models))
        elif name == "wc":
            built.append(WordCountPredictor(first_vocab.vocabulary_size,
                                            config.eos_id))
        else:
            from gnmt_tf.lm.predictor import NgramLMPredictor

            built.append(NgramLMPredictor(lm, first_vocab, config.bos_id,
                                          config.eos_id))
    return PredictorModel(built, weights, ensemble_mode), first_vocab
