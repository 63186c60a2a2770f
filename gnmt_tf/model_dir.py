"""A trained model on disk: config, vocabulary and checkpoints in one directory.

Layout::

    MODEL_DIR/config.json      {"model_type": ..., "model": {...}, "train": {...}}
    MODEL_DIR/spm.model        the shared SentencePiece vocabulary
    MODEL_DIR/checkpoints/     tf.train.Checkpoint files (ckpt-<step>)

Model types map to classes by dotted path, imported only when used, so
`gnmt_tf` never imports the packages that register other model types.
"""

import importlib
import json
import pathlib
import sys

CONFIG_FILE = "config.json"
VOCAB_FILE = "spm.model"
CHECKPOINT_DIR = "checkpoints"

MODEL_TYPES = {
    "gnmt": ("gnmt_tf.models.gnmt:GNMT", "gnmt_tf.config:GNMTConfig"),
    "task_space_transformer": (
        "task_space.task_space_translation_model:TaskSpaceTranslationModel",
        "task_space.config:TransformerConfig"),
    "gnmt_qat": ("export.qat:QATGNMT", "gnmt_tf.config:GNMTConfig"),
    "task_space_transformer_qat": (
        "export.transformer_qat:QATTaskSpaceTransformer",
        "task_space.config:TransformerConfig"),
}


def register_model_type(name, model_path, config_path):
    """Registers `name` -> ("module:ModelClass", "module:ConfigClass")."""
    MODEL_TYPES[name] = (model_path, config_path)


def _import(path):
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def model_classes(model_type):
    try:
        model_path, config_path = MODEL_TYPES[model_type]
    except KeyError:
        raise ValueError(f"unknown model type {model_type!r}; "
                         f"known: {', '.join(sorted(MODEL_TYPES))}") from None
    return _import(model_path), _import(config_path)


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
    return model, subwords, payload
