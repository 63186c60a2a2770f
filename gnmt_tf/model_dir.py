"""A trained model on disk: config, vocabulary and checkpoints in one directory.

Layout::

    MODEL_DIR/config.json      {"model_type": ..., "model": {...}, "train": {...}}
    MODEL_DIR/spm.model        the shared SentencePiece vocabulary
    MODEL_DIR/checkpoints/     tf.train.Checkpoint files (ckpt-<step>)

Model types map to classes through `gnmt_tf.model_types` (entry points each
package declares), imported only when used, so `gnmt_tf` never imports the
packages that declare other model types.
"""

import json
import pathlib

from gnmt_tf import model_types

CONFIG_FILE = "config.json"
VOCAB_FILE = "spm.model"
CHECKPOINT_DIR = "checkpoints"

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
    (model_dir / CONFIG_FILE).write_text(json.dumps(payload, indent=2) + "\n")


def read_config(model_dir) -> dict:
    """Reads `config.json`, with clear errors for a missing or broken file."""
    path = pathlib.Path(model_dir) / CONFIG_FILE
    if not path.exists():
        raise FileNotFoundError(f"{model_dir} is not a model directory (no {CONFIG_FILE})")
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"{path} is not valid JSON: {e}") from None


def build_model(model_dir):
    """Builds the (untrained) model described by `model_dir/config.json`."""
    from gnmt_tf.config import from_dict

    payload = read_config(model_dir)
    model_cls, config_cls = model_classes(payload.get("model_type", "gnmt"))
    if hasattr(config_cls, "from_dict"):
        config = config_cls.from_dict(payload["model"])
    else:
        config = from_dict(config_cls, payload["model"])
    return model_cls(config), payload


def restore_latest(checkpoint, model_dir, expect_partial=True):
    """Restores the newest checkpoint under `model_dir/checkpoints`.

    Returns:
      The checkpoint path restored, or None when there is none.

    Raises:
      ValueError: the checkpoint exists but cannot be read (corrupt/truncated).
    """
    import tensorflow as tf

    directory = pathlib.Path(model_dir) / CHECKPOINT_DIR
    latest = tf.train.latest_checkpoint(str(directory))
    if latest is None:
        return None
    try:
        status = checkpoint.restore(latest)
        if expect_partial:
            status.expect_partial()
    except Exception as e:  # the reader raises OpError, IndexError, ... on damage
        raise ValueError(f"cannot restore checkpoint {latest}: "
                         f"{type(e).__name__}: {str(e).splitlines()[0]}") from None
    return latest


def load_model(model_dir):
    """Loads a trained model and its vocabulary for inference.

    Returns:
      `(model, subwords, payload)`.

    Raises:
      FileNotFoundError: no config, vocabulary or checkpoint.
      ValueError: unreadable config or corrupt checkpoint.
    """
    import tensorflow as tf

    from gnmt_tf.text.subword import Subwords

    model, payload = build_model(model_dir)
    subwords = Subwords(pathlib.Path(model_dir) / VOCAB_FILE)
    model(model.dummy_inputs())  # create variables so restore checks them now
    if restore_latest(tf.train.Checkpoint(model=model), model_dir) is None:
        raise FileNotFoundError(f"no checkpoint in {pathlib.Path(model_dir) / CHECKPOINT_DIR}")
    attach = getattr(model, "attach_vocabulary", None)
    if attach is not None:  # inputs that depend on the vocabulary
        attach(subwords, payload)
    return model, subwords, payload
