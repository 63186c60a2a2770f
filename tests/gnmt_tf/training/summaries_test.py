"""What a training run records: TensorBoard event files and metrics.csv.

`tiny_model_dir` (tests/conftest.py) trains 600 steps with a progress line
every 200, a checkpoint (and validation loss) every 200 and validation BLEU
at step 600.
"""

import math

import tensorflow as tf

from gnmt_tf.training.metrics_log import read_metrics
from gnmt_tf.training.summaries import LOG_DIR


def read_events(log_dir):
    """`{tag: [(step, value)]}` of the scalar summaries under `log_dir`."""
    found = {}
    for path in sorted(tf.io.gfile.glob(str(log_dir / "events.out.*"))):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                scalar = float(tf.make_ndarray(value.tensor))
                found.setdefault(value.tag, []).append((event.step, scalar))
    return found


def test_event_files_hold_the_expected_tags(tiny_model_dir):
    train = read_events(tiny_model_dir / LOG_DIR / "train")
    validation = read_events(tiny_model_dir / LOG_DIR / "validation")
    assert set(train) == {"loss", "learning_rate", "target_tokens_per_s"}
    assert set(validation) == {"loss", "bleu"}
    assert [step for step, _ in train["loss"]] == [200, 400, 600]
    assert [step for step, _ in validation["loss"]] == [200, 400, 600]
    assert [step for step, _ in validation["bleu"]] == [600]
    assert all(0 <= bleu <= 100 for _, bleu in validation["bleu"])
    # After the warm-up, inverse square-root decay.
    rates = [rate for _, rate in train["learning_rate"]]
    assert rates[0] > rates[1] > rates[2] > 0


def test_metrics_csv_matches_the_event_files(tiny_model_dir):
    rows = read_metrics(tiny_model_dir)
    validation = read_events(tiny_model_dir / LOG_DIR / "validation")
    losses = [(r.step, r.value) for r in rows
              if (r.split, r.metric) == ("validation", "loss")]
    assert [step for step, _ in losses] == [200, 400, 600]
    assert all(math.isfinite(v) and v > 0 for _, v in losses)
    for (step, value), (event_step, event_value) in zip(
            losses, validation["loss"]):
        assert step == event_step and math.isclose(value, event_value,
                                                   rel_tol=1e-6)
    assert {(r.split, r.metric) for r in rows} == {
        ("train", "loss"), ("train", "learning_rate"),
        ("train", "target_tokens_per_s"), ("validation", "loss"),
        ("validation", "bleu")}
