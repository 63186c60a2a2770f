"""argparse validators of the numeric flags (`gnmt_tf.flags.arg_types`)."""

import argparse

import pytest

from gnmt_tf.flags import arg_types


@pytest.mark.parametrize("parse, text, expected", [
    (arg_types.positive_int, "3", 3),
    (arg_types.non_negative_int, "0", 0),
    (arg_types.positive_float, "0.5", 0.5),
    (arg_types.finite_float, "-1.5", -1.5),
    (arg_types.probability, "1", 1.0),
])
def test_accepts(parse, text, expected):
    assert parse(text) == expected


@pytest.mark.parametrize("parse, text", [
    (arg_types.positive_int, "0"),
    (arg_types.positive_int, "-3"),
    (arg_types.positive_int, "1.5"),
    (arg_types.positive_int, "many"),
    (arg_types.non_negative_int, "-1"),
    (arg_types.positive_float, "0"),
    (arg_types.positive_float, "inf"),
    (arg_types.finite_float, "nan"),
    (arg_types.finite_float, "-inf"),
    (arg_types.probability, "1.5"),
])
def test_rejects_with_the_range_in_words(parse, text):
    with pytest.raises(argparse.ArgumentTypeError, match="must be .*got"):
        parse(text)
