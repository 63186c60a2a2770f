"""Where a run is in its input stream, checkpointed with the model.

Keras `fit` makes the input iterator itself and never shows it to
callbacks; `InputPosition` wraps `model.train_function` (which `fit` calls
with the iterator at each step) to get hold of it, restores it from the
checkpoint of the step the model resumed from, and saves it at each
checkpoint step (`tf.train.Checkpoint` of a `tf.data` iterator: shard files
and offsets, the shuffle and bucketing buffers, the sampling RNG). A killed
run then goes on with the batch after the last checkpoint's, and reads
nothing it had already consumed again; without this it would start the
stream over (the same order, the same seed).

The position is saved as `MODEL_DIR/checkpoints/input/worker-<index>-<step>`.
Under a `tf.distribute` strategy (`--strategy mirrored` or
`multi_worker_mirrored`) `fit` iterates a distributed dataset, whose
iterator TensorFlow cannot checkpoint: such runs say so once and restart
their input stream on resume, as before.
"""

import pathlib
import sys

import tensorflow as tf
import tf_keras as keras

INPUT_DIR = "input"


class InputPosition(keras.callbacks.Callback):
    """Saves and restores the `fit` input iterator beside the checkpoints.

    Args:
      directory: `MODEL_DIR/checkpoints/input`.
      every: save at each step that is a multiple of it (the checkpoint
        interval), and at the end of training.
      resume_step: the step the model was restored at (0: a new run).
      worker: this process's index among the workers.
      keep: how many positions to keep (as the model checkpoints).
    """

    def __init__(self, directory, every, resume_step, worker=0, keep=5):
        super().__init__()
        self.directory = pathlib.Path(directory)
        self.every = every
        self.resume_step = resume_step
        self.prefix = f"worker-{worker}"
        self.keep = keep
        self._manager = self._original = None
        self._failed = False

    def _path(self, step):
        return self.directory / f"{self.prefix}-{step}"

    def on_train_begin(self, logs=None):
        train_function = self._original = self.model.train_function

        def with_iterator(iterator, *args):
            if self._manager is None and not self._failed:
                self._attach(iterator)
            return train_function(iterator, *args)

        self.model.train_function = with_iterator

    def _attach(self, iterator):
        try:
            checkpoint = tf.train.Checkpoint(iterator=iterator)
        except ValueError:
            # tf.distribute's iterators (MirroredStrategy and the like) are
            # not trackable: such a run restarts its stream on resume.
            print("note: the input position of a distributed input cannot be "
                  "saved; a resumed run restarts its input stream",
                  file=sys.stderr)
            self._failed = True
            return
        self._manager = tf.train.CheckpointManager(
            checkpoint, str(self.directory), max_to_keep=self.keep,
            checkpoint_name=self.prefix)
        if not self.resume_step:
            return
        path = self._path(self.resume_step)
        if not pathlib.Path(f"{path}.index").exists():
            print(f"no input position saved at step {self.resume_step}: the "
                  "input stream starts again from its beginning",
                  file=sys.stderr)
            return
        checkpoint.restore(str(path)).assert_consumed()
        print(f"input stream resumed at step {self.resume_step}",
              file=sys.stderr)

    def _save(self, step):
        if self._manager is None:
            return
        try:
            self._manager.save(checkpoint_number=step)
        except (tf.errors.OpError, ValueError, TypeError) as e:
            # An input that cannot be saved (e.g. a Python generator) trains
            # on; a resume then restarts its stream, as before.
            print(f"warning: cannot save the input position "
                  f"({str(e).splitlines()[0]}); a resumed run restarts the "
                  "input stream", file=sys.stderr)
            self._manager, self._failed = None, True

    def on_train_batch_end(self, batch, logs=None):
        step = int(self.model.optimizer.iterations.numpy())
        if step % self.every == 0:
            self._save(step)

    def on_train_end(self, logs=None):
        self.model.train_function = self._original  # for a later `fit`
        step = int(self.model.optimizer.iterations.numpy())
        if self._manager is not None and (
                self._manager.latest_checkpoint is None
                or not self._manager.latest_checkpoint.endswith(f"-{step}")):
            self._save(step)
