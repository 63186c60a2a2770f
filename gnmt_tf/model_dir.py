"""A trained model on disk: config, vocabulary and checkpoints in one directory.

Layout::

    MODEL_DIR/config.json      {"model_type": ..., "model": {...}, "train": {...}}
    MODEL_DIR/spm.model        the shared SentencePiece vocabulary
    MODEL_DIR/checkpoints/     tf.train.Checkpoint files (ckpt-<step>)
    MODEL_DIR/weights.npz      or, for a shipped model, its final weights
                               (`gnmt_tf.weights_file`)

Wherever a model directory is read, the name of a shipped model
(`gnmt_tf.pretrained`) is accepted too.

Model types map to classes through `gnmt_tf.model_types` (entry points each
package declares), imported only when used, so `gnmt_tf` never imports the
packages that declare other model types.
"""

import json
import pathlib
import sys

from gnmt_tf import model_types
from gnmt_tf.pretrained import locate

CONFIG_FILE = "config.json"
VOCAB_FILE = "spm.model"
CHECKPOINT_DIR = "checkpoints"
WEIGHTS_FILE = "weights.npz"


def model_classes(model_type):
    """`(ModelClass, ConfigClass)` of a declared model type
    (`gnmt_tf.model_types`).

    Raises:
      ValueError: an unknown model type (naming the known ones).
    """
    declared = model_types.get_model_type(model_type)
    return (model_types.load_object(declared.model_class),
            model_types.load_object(declared.config_class))


def write_config(model_dir, model_type, model_config, train_config, extra=None):
    import dataclasses

    model_dir = pathlib.Path(model_dir)
    model_dir.mkdir(parents=True, exist_ok=True)
    payload = {"model_type": model_type,
               "model": dataclasses.asdict(model_config),
               "train": dataclasses.asdict(train_config)}
    payload.update(extra or {})
    from gnmt_tf.io_utils import write_text_atomic

    write_text_atomic(model_dir / CONFIG_FILE,
                      json.dumps(payload, indent=2) + "\n")


def read_config(model_dir) -> dict:
    """Reads `config.json`, with clear errors for a missing or broken file."""
    path = locate(model_dir) / CONFIG_FILE
    if not path.exists():
        raise FileNotFoundError(f"{model_dir} is not a model directory (no {CONFIG_FILE})")
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"{path} is not valid JSON: {e}") from None


def build_model(model_dir, precision="float32"):
    """Builds the (untrained) model described by `model_dir/config.json`,
    computing in `precision` (`float32`, or `mixed_bfloat16` for a
    Transformer: bfloat16 matmuls, float32 weights)."""
    from gnmt_tf.config import check_precision
    from gnmt_tf.config import from_dict

    check_precision(precision)
    payload = read_config(model_dir)
    model_type = payload.get("model_type", "gnmt")
    model_cls, config_cls = model_classes(model_type)
    if hasattr(config_cls, "from_dict"):
        config = config_cls.from_dict(payload["model"])
    else:
        config = from_dict(config_cls, payload["model"])
    if precision == "float32":
        return model_cls(config), payload
    if not model_cls.runs_in_low_precision:
        raise ValueError(f"precision={precision} is for Transformer models; "
                         f"{model_cls.__name__} runs in float32")
    return model_cls(config, dtype=precision), payload


def _checkpoints_newest_first(directory):
    """Checkpoint paths of the index in `directory`, the latest first."""
    import tensorflow as tf

    state = tf.train.get_checkpoint_state(str(directory))
    if state is None or not state.model_checkpoint_path:
        return []
    latest = state.model_checkpoint_path
    return [latest] + [path for path in reversed(state.all_model_checkpoint_paths)
                       if path != latest]


def restore_latest(checkpoint, model_dir, expect_partial=True):
    """Restores the newest readable checkpoint under `model_dir/checkpoints`.

    When the latest checkpoint cannot be read (truncated, deleted files), the
    older ones of the index are tried, newest first, and stderr says which
    one was restored instead.

    Returns:
      The checkpoint path restored, or None when there is none.

    Raises:
      ValueError: no checkpoint of the index can be read (corrupt/truncated).
    """
    candidates = _checkpoints_newest_first(
        pathlib.Path(model_dir) / CHECKPOINT_DIR)
    failures = []
    for path in candidates:
        try:
            status = checkpoint.restore(path)
            if expect_partial:
                status.expect_partial()
        except Exception as e:  # the reader raises OpError, IndexError, ... on damage
            failures.append(f"{type(e).__name__}: {str(e).splitlines()[0]}")
            continue
        if failures:
            print(f"warning: cannot restore checkpoint {candidates[0]} "
                  f"({failures[0]}); restored {path}, the newest readable "
                  "one", file=sys.stderr)
        return path
    if failures:
        older = " (nor any older one)" if len(candidates) > 1 else ""
        raise ValueError(f"cannot restore checkpoint {candidates[0]}{older}: "
                         f"{failures[0]}")
    return None


def load_model(model_dir, precision="float32"):
    """Loads a trained model and its vocabulary for inference.

    Args:
      model_dir: str or Path, or the name of a shipped model.
      precision: `float32`, or `mixed_bfloat16` (Transformer models; faster
        where the CPU has bfloat16 matmuls, at a small BLEU cost).

    Returns:
      `(model, subwords, payload)`.

    Raises:
      FileNotFoundError: no config, vocabulary or checkpoint.
      ValueError: unreadable config or corrupt checkpoint.
    """
    import tensorflow as tf

    from gnmt_tf.text.subword import Subwords

    model_dir = locate(model_dir)
    model, payload = build_model(model_dir, precision)
    subwords = Subwords(model_dir / VOCAB_FILE)
    model(model.dummy_inputs())  # create variables so restore checks them now
    if restore_latest(tf.train.Checkpoint(model=model), model_dir) is None:
        if not (model_dir / WEIGHTS_FILE).exists():
            raise FileNotFoundError(
                f"no checkpoint in {model_dir / CHECKPOINT_DIR} and no "
                f"{WEIGHTS_FILE} in {model_dir}")
        from gnmt_tf.weights_file import load_weights

        load_weights(model, model_dir / WEIGHTS_FILE)
    model.attach_model_dir(subwords, payload)  # what its inputs need
    return model, subwords, payload
