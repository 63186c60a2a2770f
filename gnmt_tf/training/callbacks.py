"""Keras callbacks: delta annealing, step checkpoints, wall-time budget,
progress and validation-loss reports."""

import json
import os
import pathlib
import sys
import time

import tf_keras as keras


class DeltaAnnealing(keras.callbacks.Callback):
    """Anneals the cell/residual clipping bound delta from `start` to `end`.

    GNMT (§6) trains with clipping range delta annealed from 8 to 1 so that the
    final model's accumulators fit a narrow fixed-point range. Linear in the
    optimizer step over `anneal_steps`, then held at `end`.
    """

    def __init__(self, variable, start=8.0, end=1.0, anneal_steps=10000):
        super().__init__()
        self.variable = variable
        self.start, self.end, self.anneal_steps = start, end, anneal_steps

    def value_at(self, step):
        fraction = min(1.0, step / max(1, self.anneal_steps))
        return self.start + (self.end - self.start) * fraction

    def on_train_batch_begin(self, batch, logs=None):
        step = int(self.model.optimizer.iterations.numpy())
        self.variable.assign(self.value_at(step))


def read_progress(path):
    """Cumulative training progress saved beside the checkpoints."""
    try:
        return json.loads(pathlib.Path(path).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return {"step": 0, "train_seconds": 0.0, "target_tokens": 0.0}


class StepCheckpoint(keras.callbacks.Callback):
    """Saves a `tf.train.CheckpointManager` every `every` optimizer steps and at
    the end of training (also when training stops early), and records the
    cumulative wall time and target tokens in `progress_path` (JSON), so time
    budgets and throughput figures survive a kill and resume."""

    def __init__(self, manager, every, progress_path, progress_logger):
        super().__init__()
        self.manager = manager
        self.every = every
        self.progress_path = pathlib.Path(progress_path)
        self.logger = progress_logger
        self.previous = read_progress(progress_path)

    def _save(self, step):
        self.manager.save(checkpoint_number=step)
        progress = {
            "step": step,
            "train_seconds": self.previous["train_seconds"] + self.logger.elapsed(),
            "target_tokens": self.previous["target_tokens"] + self.logger.total_tokens(),
        }
        tmp = self.progress_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(progress) + "\n")
        os.replace(tmp, self.progress_path)

    def on_train_batch_end(self, batch, logs=None):
        step = int(self.model.optimizer.iterations.numpy())
        if step % self.every == 0:
            self._save(step)

    def on_train_end(self, logs=None):
        step = int(self.model.optimizer.iterations.numpy())
        latest = self.manager.latest_checkpoint
        if latest is None or not latest.endswith(f"-{step}"):
            self._save(step)


class TimeBudget(keras.callbacks.Callback):
    """Stops training once `minutes` of wall time have passed, counting
    `already_seconds` spent by earlier (resumed) runs.

    With several workers they stop at the same step: the first one out of
    time stops them all (`gnmt_tf.training.workers.any_worker`).
    """

    def __init__(self, minutes, already_seconds=0.0):
        super().__init__()
        self.seconds = minutes * 60.0 - already_seconds
        self.start = None

    def on_train_begin(self, logs=None):
        self.start = time.monotonic()

    def on_train_batch_end(self, batch, logs=None):
        from gnmt_tf.training.workers import any_worker

        spent = time.monotonic() - self.start >= self.seconds
        if any_worker(self.model.distribute_strategy, spent):
            self.model.stop_training = True


class StopAtStep(keras.callbacks.Callback):
    """Stops training once the optimizer has made `steps` steps (fit counts in
    whole epochs of `checkpoint_every` steps, which may overshoot)."""

    def __init__(self, steps):
        super().__init__()
        self.steps = steps

    def on_train_batch_end(self, batch, logs=None):
        if int(self.model.optimizer.iterations.numpy()) >= self.steps:
            self.model.stop_training = True


def current_learning_rate(optimizer) -> float:
    """The learning rate of the optimizer's last step (its schedule's
    value, where it has one)."""
    rate = optimizer.learning_rate
    if isinstance(rate, keras.optimizers.schedules.LearningRateSchedule):
        rate = rate(optimizer.iterations)
    return float(keras.backend.get_value(rate))


class ProgressLogger(keras.callbacks.Callback):
    """Prints step, loss, tokens/s and elapsed time every `every` steps.

    Args:
      every: int. Steps between reports.
      stream: where the lines go; None: `sys.stderr` as it is when a line
        is printed (not as it was when this module was imported, which
        may have been inside a redirection that has since closed).
      record: `(split, step, {name: value})` callable or None; also gets
        each report's loss, learning rate and target tokens/s (e.g.
        `gnmt_tf.training.summaries.TrainingRecord.record`).
    """

    def __init__(self, every=100, stream=None, record=None):
        super().__init__()
        self.every = every
        self.stream = stream
        self.record = record
        self.tokens = 0  # tokens since the last report
        self.epoch_tokens = 0.0  # the `target_tokens` metric is per epoch
        self.train_tokens = 0
        self.train_seconds = 0.0

    def on_train_begin(self, logs=None):
        self.start = self.last = time.monotonic()

    def elapsed(self):
        return time.monotonic() - self.start

    def total_tokens(self):
        return self.train_tokens + self.tokens

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch_tokens = 0.0

    def on_train_batch_end(self, batch, logs=None):
        step = int(self.model.optimizer.iterations.numpy())
        logs = logs or {}
        total = float(logs.get("target_tokens", 0.0))
        self.tokens += total - self.epoch_tokens
        self.epoch_tokens = total
        if step % self.every == 0:
            now = time.monotonic()
            rate = self.tokens / max(now - self.last, 1e-9)
            self.train_tokens += self.tokens
            self.train_seconds += now - self.last
            loss = float(logs.get("loss", float("nan")))
            print(f"step {step}  loss {loss:.4f}  "
                  f"tgt_tok/s {rate:.0f}  elapsed {now - self.start:.0f}s",
                  file=self.stream or sys.stderr, flush=True)
            self.tokens, self.last = 0, now
            if self.record is not None:
                self.record("train", step, {
                    "loss": loss,
                    "learning_rate": current_learning_rate(
                        self.model.optimizer),
                    "target_tokens_per_s": rate})


class ValidationReport(keras.callbacks.Callback):
    """Prints the validation loss `model.fit` computes at the end of each
    epoch (one checkpoint interval) and hands it to `record`, which keeps it
    (`TrainingRecord.record("validation", step, {"loss": ...})`)."""

    def __init__(self, record=None, stream=None):
        super().__init__()
        self.record = record
        self.stream = stream  # None: sys.stderr when printing

    def on_epoch_end(self, epoch, logs=None):
        loss = (logs or {}).get("val_loss")
        if loss is None:
            return
        step = int(self.model.optimizer.iterations.numpy())
        print(f"step {step}  validation loss {float(loss):.4f}",
              file=self.stream or sys.stderr, flush=True)
        if self.record is not None:
            self.record("validation", step, {"loss": float(loss)})
