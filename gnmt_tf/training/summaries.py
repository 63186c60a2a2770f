"""TensorBoard summaries and `metrics.csv` of a training run, side by side.

`TrainingRecord.record("train", step, {"loss": ...})` writes each number
twice: as a TensorBoard scalar under `MODEL_DIR/logs/<split>/` and as a row
of `MODEL_DIR/metrics.csv` (`gnmt_tf.training.metrics_log`). The callbacks of
`gnmt_tf.training.callbacks` (progress, validation loss) and
`gnmt_tf.training.validation_bleu` call it; `trainer.fit` owns it.

Tags, all against the optimizer step:

    logs/train:       loss, learning_rate, target_tokens_per_s
    logs/validation:  loss, bleu

Both splits use the tag `loss`, so TensorBoard draws training and
validation loss in one chart (`tensorboard --logdir MODEL_DIR/logs`).
`keras.callbacks.TensorBoard` is not used: its batch counter restarts at 0
with every `fit` call, i.e. with every resume, and it indexes its epoch
summaries by epoch, so the curves of a resumed run would fold back.
"""

import pathlib

import tensorflow as tf

from gnmt_tf.training.metrics_log import METRICS_FILE, MetricsLog

LOG_DIR = "logs"


class TrainingRecord:
    """Writes a run's numbers to TensorBoard event files and `metrics.csv`.

    Args:
      model_dir: str or Path. The run's model directory.
      resume_step: int. The step the run starts at; `metrics.csv` rows after
        it (from steps trained again) are dropped.
    """

    def __init__(self, model_dir, resume_step=0):
        self.model_dir = pathlib.Path(model_dir)
        self.log_dir = self.model_dir / LOG_DIR
        self.metrics = MetricsLog(self.model_dir / METRICS_FILE)
        self.metrics.truncate_after(resume_step)
        self._writers = {}

    def record(self, split, step, values):
        """Writes `{tag: float}` of `split` ("train", "validation") at `step`."""
        writer = self._writers.get(split)
        if writer is None:
            writer = tf.summary.create_file_writer(str(self.log_dir / split))
            self._writers[split] = writer
        with writer.as_default(step=int(step)):
            for tag, value in values.items():
                tf.summary.scalar(tag, float(value))
        writer.flush()
        self.metrics.append(step, split, values)

    def close(self):
        """Flushes and closes the event files."""
        for writer in self._writers.values():
            writer.close()
        self._writers = {}
