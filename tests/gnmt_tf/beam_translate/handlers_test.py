"""The model handlers give a `LineFailure` for a line the model refuses,
the other lines of the batch translated (no model: a scripted one)."""

import pytest

pytest.importorskip(
    "apache_beam", reason="apache-beam not installed: it needs protobuf < 7 "
    "(see README, Batch translation with Apache Beam: make test-beam)")

from gnmt_tf.beam_translate.handlers import _Handler  # noqa: E402
from gnmt_tf.beam_translate.shards import LineFailure  # noqa: E402


class _Upper(_Handler):
    """Upper-cases; refuses a batch holding "bad" (as a translator refuses
    a batch with one line too long)."""

    def load_model(self):
        return None

    def translate(self, batch, model):
        for i, line in enumerate(batch, 1):
            if "bad" in line:
                raise ValueError(f"input {i} has 300 subwords;\nthe limit "
                                 "is 250")
        return [line.upper() for line in batch]


def test_a_refused_line_fails_alone():
    out = _Upper().run_inference(["a", "a bad one", "c"], None)
    assert out == ["A", LineFailure("has 300 subwords; the limit is 250"),
                   "C"]
    assert _Upper().run_inference(["a", "b"], None) == ["A", "B"]
