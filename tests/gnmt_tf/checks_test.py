"""Range checks shared by configs and flags (`gnmt_tf.checks`)."""

import math

import numpy as np
import pytest

from gnmt_tf.checks import check_number, describe, in_range


def test_describe():
    assert describe(integer=True, minimum=1) == "an integer >= 1"
    assert describe(minimum=0, below=1) == "a finite number in [0, 1)"
    assert describe(above=0) == "a finite number > 0"
    assert describe() == "a finite number"


@pytest.mark.parametrize("value, bounds, ok", [
    (3, dict(integer=True, minimum=1), True),
    (np.int64(3), dict(integer=True, minimum=1), True),
    (0, dict(integer=True, minimum=1), False),
    (-3, dict(integer=True, minimum=1), False),
    (1.5, dict(integer=True), False),
    (True, dict(integer=True), False),
    ("3", dict(integer=True), False),
    (math.nan, {}, False),
    (math.inf, {}, False),
    (np.float32(0.5), dict(minimum=0, below=1), True),
    (1.0, dict(minimum=0, below=1), False),
    (0.0, dict(above=0), False),
])
def test_in_range(value, bounds, ok):
    assert in_range(value, **bounds) is ok


def test_check_number_names_the_setting():
    with pytest.raises(ValueError,
                       match=r"max_tokens must be an integer >= 1, got 0"):
        check_number("max_tokens", 0, integer=True, minimum=1)
    check_number("max_minutes", None, above=0, optional=True)
    with pytest.raises(ValueError, match="max_minutes"):
        check_number("max_minutes", None, above=0)
