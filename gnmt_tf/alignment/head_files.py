"""An alignment head stored beside a trained model, and loaded with it.

A model directory (or shipped model) with a head holds two more files:

    MODEL_DIR/alignment_head.npz   the head's weights (`gnmt_tf.weights_file`)
    MODEL_DIR/alignment_head.json  its config, training data and scores

`load_model` is `gnmt_tf.model_dir.load_model` plus the head when the
directory has one. The pipeline's in-process backend
(`gnmt_tf.gateway.backends.ModelBackend`) and the SavedModel export load models
through it, so their alignments (`gnmt_tf.aligned_search`) come from the
head. `gnmt_tf` itself never loads a head: it may not import this package.
"""

import json
import os
import pathlib
import shutil
import time
from typing import Optional

HEAD_WEIGHTS = "alignment_head.npz"
HEAD_CONFIG = "alignment_head.json"
# Files of a model directory that a copy with a head keeps (the weights
# are written anew, in float16, as a shipped model's).
_COPIED_FILES = ("config.json", "spm.model", "spm.vocab")


def wrap_with_head(model, head_config: Optional[dict] = None,
                   filters=(32, 32), kernel_size: int = 3):
    """`model` in an `AlignedTranslationModel` with a new head (of
    `head_config`, a `ConvAlignmentHead.get_config()` subset, if given) and
    its translation weights frozen."""
    from gnmt_tf.alignment.aligned_model import AlignedTranslationModel
    from gnmt_tf.alignment.conv_alignment_head import ConvAlignmentHead

    options = dict(head_config or {"filters": list(filters),
                                   "kernel_size": kernel_size})
    head = ConvAlignmentHead(name="alignment_head", **options)
    return AlignedTranslationModel(model, head, alignment_weight=1.0,
                                   freeze_translation_model=True)


def save_model_with_head(aligned, model_dir, output_dir, info: dict) -> None:
    """Writes `output_dir`: a model directory with `model_dir`'s config and
    vocabulary, the model's weights (float16 `weights.npz`) and the head.
    Written in a temporary directory beside it, then renamed; `model_dir`
    is only read.

    Raises:
      FileExistsError: `output_dir` exists.
    """
    from gnmt_tf.model_dir import WEIGHTS_FILE
    from gnmt_tf.pretrained import locate
    from gnmt_tf.weights_file import save_weights

    source = locate(model_dir)
    output_dir = pathlib.Path(output_dir)
    if output_dir.exists():
        raise FileExistsError(f"{output_dir} exists; give a new directory")
    output_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = output_dir.parent / f".{output_dir.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)  # left by a killed run
    tmp.mkdir()
    try:
        for name in _COPIED_FILES:
            if (source / name).exists():
                shutil.copy2(source / name, tmp / name)
        save_weights(aligned.translation_model, tmp / WEIGHTS_FILE)
        write_head(aligned, tmp, info)
        tmp.rename(output_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def write_head(aligned, directory, info: dict) -> None:
    """Writes the head's two files into `directory` (each atomically)."""
    from gnmt_tf.io_utils import write_text_atomic
    from gnmt_tf.weights_file import save_weights

    directory = pathlib.Path(directory)
    head = aligned.head
    save_weights(head, directory / HEAD_WEIGHTS, dtype="float32")
    payload = {"head": {"filters": list(head.filters),
                        "kernel_size": head.kernel_size,
                        "prior": head.prior,
                        "position_features": head.position_features},
               **info, "written": time.strftime("%Y-%m-%d %H:%M:%S UTC",
                                                time.gmtime())}
    write_text_atomic(directory / HEAD_CONFIG,
                      json.dumps(payload, indent=2) + "\n")


def has_head(model_dir) -> bool:
    """True when the model directory (or shipped model) has a head."""
    from gnmt_tf.pretrained import locate

    return (locate(model_dir) / HEAD_CONFIG).exists()


def attach_head(model, model_dir):
    """`model` wrapped with the head stored in `model_dir`.

    Raises:
      ValueError: an unreadable head config or weights that do not fit.
    """
    from gnmt_tf.pretrained import locate
    from gnmt_tf.weights_file import load_weights

    directory = locate(model_dir)
    path = directory / HEAD_CONFIG
    try:
        head_config = json.loads(path.read_text())["head"]
    except (json.JSONDecodeError, KeyError, TypeError) as e:
        raise ValueError(f"{path} is not an alignment head config: "
                         f"{e}") from None
    aligned = wrap_with_head(model, head_config)
    load_weights(aligned.head, directory / HEAD_WEIGHTS)
    return aligned


def load_model(model_dir):
    """`gnmt_tf.model_dir.load_model`, the model wrapped with its alignment
    head when the directory has one: `(model, subwords, payload)`."""
    from gnmt_tf import model_dir as model_dir_lib

    model, subwords, payload = model_dir_lib.load_model(model_dir)
    if has_head(model_dir):
        model = attach_head(model, model_dir)
    return model, subwords, payload
