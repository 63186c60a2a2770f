"""Unsupervised sentence quality estimation from what the model exposes.

Glass-box features (Fomicheva et al. 2020, "Unsupervised Quality Estimation
for Neural Machine Translation", TACL), read from a backend's
`SentenceResult`, plus round-trip agreement:

- `logprob`: the length-normalised log-probability of the output
  (`SentenceResult.score`; Fomicheva's TP);
- `coverage`: mean over source subwords of min(1, attention received) (Tu
  et al. 2016's coverage; low when the output ignores part of the source);
- `entropy`: mean over output subwords of the entropy of its alignment row,
  divided by log of the source length (Fomicheva's Ent; high when the
  decoder looked everywhere, i.e. did not know where to look);
- `round_trip`: chrF (sacrebleu) of the translation translated back by the
  same multi-direction model against the source, / 100 (available when the
  backend translates the reverse direction).

They are combined linearly, `score = clip(b + sum_k w_k * f_k, 0, 1)`, with
a missing feature replaced by its mean on the fitting data (so a backend
without attention or without the reverse direction gets a score from what
it has). The weights in `DEFAULT_MODEL` are a least-squares fit (small ridge)
of sentence chrF / 100 against the reference on Multi30k **val** en->de
translated by the zoo model (`benchmarks/pipeline.py`, section "qe"; see
`benchmarks/results/pipeline.json` "qe_fit"); the test figure
(`qe_spearman_chrf`, test_2017_flickr) never saw the fit. A document's
score is the mean of its sentences' scores weighted by their length in
characters.
"""

import dataclasses
import math
from typing import Dict, Mapping, Optional, Sequence

import numpy as np

from gnmt_tf.pipeline.results import SentenceResult

FEATURES = ("logprob", "coverage", "entropy", "round_trip")
Features = Dict[str, Optional[float]]


def attention_features(result: SentenceResult) -> Features:
    """`coverage` and `entropy` of `result.alignment` (None without)."""
    if result.alignment is None:
        return {"coverage": None, "entropy": None}
    scores = np.asarray(result.alignment, np.float64)
    if scores.ndim != 2 or not scores.size:
        return {"coverage": None, "entropy": None}
    rows = len(result.target_pieces) if result.target_pieces else \
        scores.shape[0]
    cols = len(result.source_pieces) if result.source_pieces else \
        scores.shape[1]
    scores = np.clip(scores[:max(rows, 1), :max(cols, 1)], 0, None)
    coverage = float(np.mean(np.minimum(1.0, scores.sum(axis=0))))
    if scores.shape[1] < 2:
        return {"coverage": coverage, "entropy": 0.0}
    p = scores / np.maximum(scores.sum(axis=1, keepdims=True), 1e-12)
    entropy = -np.sum(np.where(p > 0, p * np.log(np.maximum(p, 1e-12)), 0),
                      axis=1) / math.log(scores.shape[1])
    return {"coverage": coverage, "entropy": float(np.mean(entropy))}


def round_trip_agreement(source: str, back: Optional[str]) -> Optional[float]:
    """chrF of the back-translation against the source, in [0, 1]."""
    if back is None:
        return None
    if not source.strip():
        return 1.0 if not back.strip() else 0.0
    import sacrebleu

    return sacrebleu.sentence_chrf(back, [source]).score / 100.0


def features(result: SentenceResult, source: str,
             back: Optional[str] = None) -> Features:
    """All features of one sentence (None where unavailable)."""
    found = {"logprob": (float(result.score) if result.score is not None
                         and math.isfinite(result.score) else None)}
    found.update(attention_features(result))
    found["round_trip"] = round_trip_agreement(source, back)
    return found


@dataclasses.dataclass(frozen=True)
class QualityModel:
    """A linear combination of features, clipped to [0, 1].

    Attributes:
      intercept: float.
      weights: feature -> weight.
      means: feature -> value used when the feature is missing.
    """

    intercept: float
    weights: Mapping[str, float]
    means: Mapping[str, float]

    def score(self, found: Features) -> float:
        """The quality estimate of one sentence, in [0, 1]."""
        total = self.intercept
        for name, weight in self.weights.items():
            value = found.get(name)
            total += weight * (self.means[name] if value is None else value)
        return float(min(1.0, max(0.0, total)))

    @classmethod
    def fit(cls, rows: Sequence[Features], targets: Sequence[float],
            names: Sequence[str] = FEATURES,
            ridge: float = 1e-3) -> "QualityModel":
        """Least squares (with a small ridge) of `targets` (e.g. sentence
        chrF / 100) on the features of `rows`; missing values are imputed
        with the mean. Fit on a development set, never on the test set."""
        names = [n for n in names
                 if any(r.get(n) is not None for r in rows)]
        means = {n: float(np.mean([r[n] for r in rows
                                   if r.get(n) is not None]))
                 for n in names}
        x = np.array([[r[n] if r.get(n) is not None else means[n]
                       for n in names] for r in rows], np.float64)
        y = np.asarray(targets, np.float64)
        centre = x.mean(axis=0) if len(x) else np.zeros(len(names))
        xc = x - centre
        w = np.linalg.solve(xc.T @ xc + ridge * len(x) * np.eye(len(names)),
                            xc.T @ (y - y.mean())) if names else np.zeros(0)
        intercept = float(y.mean() - centre @ w) if len(y) else 0.0
        return cls(intercept, {n: float(v) for n, v in zip(names, w)}, means)


# Fitted by `benchmarks/pipeline.py` (section "qe") on 300 sentences of
# Multi30k val en->de, the shipped multi30k-transformer with its alignment
# head, greedy, through `gnmt_tf.gateway.backends.ModelBackend`
# (`benchmarks/results/pipeline.json` "qe_fit"; the test Spearman is there
# too). `coverage` and `entropy` are read from the backend's alignment, the
# head's probabilities here (whose columns nearly always sum to >= 1, so
# coverage carries no signal); for another model, fit its own
# (`QualityModel.fit`).
DEFAULT_MODEL = QualityModel(
    intercept=0.7350,
    weights={"logprob": 0.2830, "coverage": -0.0099,
             "entropy": -0.2208, "round_trip": 0.2681},
    means={"logprob": -0.5122, "coverage": 0.9999,
           "entropy": 0.5346, "round_trip": 0.6180})


def document_score(scores: Sequence[float],
                   lengths: Sequence[int]) -> Optional[float]:
    """The length-weighted mean of sentence scores (None for none)."""
    total = sum(lengths)
    if not scores:
        return None
    if not total:
        return float(np.mean(scores))
    return float(sum(s * n for s, n in zip(scores, lengths)) / total)
