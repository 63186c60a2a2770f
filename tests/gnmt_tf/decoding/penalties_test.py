import numpy as np

import gnmt_tf  # noqa: F401

from gnmt_tf.decoding import penalties

COVERAGE = np.array([[0.5, 1.5, 0.0, 0.25]], np.float32)    # [1, S=4]
MASK = np.array([[True, True, False, True]])         # position 2 is padding


def test_length_penalty_matches_hand_computed_values():
    lp = penalties.length_penalty([1, 7, 8], 0.6).numpy()
    # (5+1)/6 = 1; (5+7)/6 = 2 -> 2**0.6; (5+8)/6 -> (13/6)**0.6
    np.testing.assert_allclose(
        lp, [1.0, 1.515716566510398, (13 / 6) ** 0.6], rtol=1e-6)
    np.testing.assert_allclose(
        penalties.length_penalty([7], 1.0).numpy(), [2.0], rtol=1e-6)


def test_length_penalty_is_one_without_alpha():
    np.testing.assert_array_equal(
        penalties.length_penalty([1, 5, 50], 0.0).numpy(), [1.0, 1.0, 1.0])


def test_coverage_penalty_matches_hand_computed_value():
    # 0.2 * (log 0.5 + log min(1.5, 1) + log 0.25); the padding 0 is masked.
    cp = penalties.coverage_penalty(COVERAGE, MASK, 0.2).numpy()
    np.testing.assert_allclose(cp, [-0.4158883083359672], rtol=1e-6)


def test_coverage_penalty_floors_zero_coverage():
    # Unmasked, the 0 coverage counts as log(1e-10) instead of -inf.
    cp = penalties.coverage_penalty(COVERAGE, None, 0.2).numpy()
    np.testing.assert_allclose(cp, [-5.021058494324059], rtol=1e-6)
    assert np.isfinite(cp).all()


def test_coverage_penalty_is_zero_when_fully_covered_or_beta_zero():
    full = np.array([[1.0, 2.0, 1.5]], np.float32)
    assert penalties.coverage_penalty(full, None, 0.7).numpy()[0] == 0.0
    assert penalties.coverage_penalty(COVERAGE, MASK, 0.0).numpy()[0] == 0.0


def test_gnmt_score_matches_hand_computed_value():
    score = penalties.gnmt_score(
        [-3.0], [7], COVERAGE, MASK, alpha=0.6, beta=0.2).numpy()
    # -3 / 2**0.6 + 0.2 * (log 0.5 + log 0.25)
    np.testing.assert_allclose(score, [-2.3951501744953085], rtol=1e-6)


def test_gnmt_score_without_penalties_is_log_prob():
    score = penalties.gnmt_score(
        [-3.0, -0.5], [7, 2], np.repeat(COVERAGE, 2, 0), MASK, 0.0, 0.0)
    np.testing.assert_array_equal(score.numpy(), [-3.0, -0.5])


def test_gnmt_score_without_attention_only_normalises_length():
    score = penalties.gnmt_score([-3.0], [7], None, None, 1.0, 0.5).numpy()
    np.testing.assert_allclose(score, [-1.5], rtol=1e-6)
