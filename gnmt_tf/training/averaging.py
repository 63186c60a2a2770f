"""Checkpoint averaging: the mean of a run's last N checkpoints as one model.

Averaging the weights of the last checkpoints of a run (Vaswani et al. 2017;
`onmt-main average_checkpoints` in OpenNMT-tf) usually gains BLEU for free.
The result is a new model directory: the run's config and vocabulary, and
either one checkpoint of the model alone (no optimizer slots) or, for
shipping, a float16 `weights.npz` (`gnmt_tf.weights_file`). The input
directory is only read. The output is written in a temporary folder next to
it and renamed into place, so it is complete or absent.

Example:
```python
average_checkpoints("runs/en-de", "runs/en-de-avg", last=5)
```
"""

import json
import pathlib
import shutil
import tempfile

from gnmt_tf import model_dir as model_dir_lib
from gnmt_tf.checks import check_number
from gnmt_tf.io_utils import current_umask
from gnmt_tf.training.metrics_log import METRICS_FILE

# Top-level files of a training run that are not part of the model (its
# TensorBoard logs/ folder is not copied either: only files are).
RUN_STATE_FILES = ("progress.json", ".lock", METRICS_FILE)
AVERAGED_FILE = "averaged.json"


def checkpoint_paths(model_dir, last):
    """The last `last` checkpoint paths of a run, oldest first."""
    import tensorflow as tf

    state = tf.train.get_checkpoint_state(
        str(pathlib.Path(model_dir) / model_dir_lib.CHECKPOINT_DIR))
    if state is None or not state.all_model_checkpoint_paths:
        raise FileNotFoundError(f"no checkpoints in {model_dir}")
    return list(state.all_model_checkpoint_paths)[-last:]


def averaged_weights(model, paths):
    """The mean of `model.weights` over checkpoints, in float64 sums."""
    import numpy as np
    import tensorflow as tf

    checkpoint = tf.train.Checkpoint(model=model)
    sums = None
    for path in paths:
        checkpoint.restore(path).expect_partial().assert_existing_objects_matched()
        weights = [np.asarray(w, dtype=np.float64) for w in model.get_weights()]
        sums = weights if sums is None else [s + w for s, w in zip(sums, weights)]
    return [(s / len(paths)).astype(w.dtype.as_numpy_dtype)
            for s, w in zip(sums, model.weights)]


def average_checkpoints(model_dir, output_dir, last=5, weights_only=False):
    """Writes the average of a run's last checkpoints as a model directory.

    Args:
      model_dir: the training run (str, Path or shipped model name).
      output_dir: the new model directory; must not exist.
      last: how many of the newest checkpoints to average (fewer when the
        run kept fewer; see `TrainConfig.keep_checkpoints`).
      weights_only: write a float16 `weights.npz` instead of a checkpoint.

    Returns:
      The checkpoint paths averaged.

    Raises:
      FileNotFoundError: no checkpoints. FileExistsError: output exists.
    """
    check_number("last", last, integer=True, minimum=1)
    model_dir = model_dir_lib.locate(model_dir)
    output_dir = pathlib.Path(output_dir)
    if output_dir.exists():
        raise FileExistsError(f"{output_dir} exists; give a new directory")
    import tensorflow as tf

    paths = checkpoint_paths(model_dir, last)
    model, _ = model_dir_lib.build_model(model_dir)
    model(model.dummy_inputs())
    model.set_weights(averaged_weights(model, paths))

    output_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix=f".{output_dir.name}.",
                                        dir=output_dir.parent))
    try:
        for path in model_dir.iterdir():
            if path.is_file() and path.name not in RUN_STATE_FILES:
                shutil.copy2(path, tmp / path.name)
        if weights_only:
            from gnmt_tf.weights_file import save_weights

            save_weights(model, tmp / model_dir_lib.WEIGHTS_FILE)
        else:
            step = int(paths[-1].rsplit("-", 1)[-1])
            tf.train.CheckpointManager(
                tf.train.Checkpoint(model=model),
                str(tmp / model_dir_lib.CHECKPOINT_DIR),
                max_to_keep=1).save(checkpoint_number=step)
        (tmp / AVERAGED_FILE).write_text(json.dumps(
            {"source": str(model_dir), "checkpoints": [
                pathlib.Path(p).name for p in paths]}, indent=2) + "\n")
        tmp.chmod(0o777 & ~current_umask())  # mkdtemp makes it private
        tmp.rename(output_dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return paths
