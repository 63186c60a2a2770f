import math

import numpy as np
import pytest

from gnmt_tf.pipeline.quality import (QualityModel, attention_features,
                                      document_score, features,
                                      round_trip_agreement)
from gnmt_tf.pipeline.results import SentenceResult


def _result(matrix):
    matrix = np.asarray(matrix, float)
    return SentenceResult("x", -0.5,
                          tuple(f"▁s{i}" for i in range(matrix.shape[1])),
                          tuple(f"▁t{i}" for i in range(matrix.shape[0])),
                          matrix)


def test_attention_features_on_hand_matrices():
    sharp = attention_features(_result(np.eye(3)))
    assert sharp == {"coverage": 1.0, "entropy": 0.0}
    flat = attention_features(_result(np.full((2, 4), 0.25)))
    assert flat["coverage"] == pytest.approx(0.5)
    assert flat["entropy"] == pytest.approx(1.0)
    # Half the source ignored.
    half = attention_features(_result([[1, 0, 0, 0], [0, 1, 0, 0]]))
    assert half["coverage"] == pytest.approx(0.5)
    assert attention_features(SentenceResult("x")) == {
        "coverage": None, "entropy": None}


def test_round_trip_agreement():
    assert round_trip_agreement("A dog runs.", "A dog runs.") == 1.0
    assert round_trip_agreement("A dog runs.", None) is None
    assert round_trip_agreement("A dog runs.", "Zzz.") < 0.2
    found = features(SentenceResult("x", float("nan")), "a", "a")
    assert found["logprob"] is None and found["round_trip"] == 1.0


def test_fit_recovers_a_linear_relation_and_imputes_missing():
    rng = np.random.default_rng(0)
    rows = [{"logprob": float(a), "round_trip": float(b), "coverage": None,
             "entropy": None} for a, b in rng.uniform(0, 1, (50, 2))]
    targets = [0.1 + 0.3 * r["logprob"] + 0.5 * r["round_trip"]
               for r in rows]
    model = QualityModel.fit(rows, targets, ridge=0.0)
    assert set(model.weights) == {"logprob", "round_trip"}
    assert model.weights["logprob"] == pytest.approx(0.3)
    assert model.weights["round_trip"] == pytest.approx(0.5)
    assert model.intercept == pytest.approx(0.1)
    assert model.score({"logprob": 0.5, "round_trip": 0.5}) == \
        pytest.approx(0.5)
    mean = model.means["round_trip"]
    assert model.score({"logprob": 0.5, "round_trip": None}) == \
        pytest.approx(0.1 + 0.15 + 0.5 * mean)
    assert model.score({"logprob": 10.0, "round_trip": 10.0}) == 1.0
    assert model.score({"logprob": -10.0, "round_trip": -10.0}) == 0.0


def test_document_score_is_length_weighted():
    assert document_score([1.0, 0.0], [30, 10]) == pytest.approx(0.75)
    assert document_score([], []) is None
    assert math.isclose(document_score([0.2, 0.4], [0, 0]), 0.3)
