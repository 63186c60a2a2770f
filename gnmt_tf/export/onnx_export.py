"""ONNX export (tf2onnx) of a model's `encode` and `decode_step`.

For TensorRT's `trtexec` and ONNX Runtime: as with TFLite, the search runs
on the host and the model gives two graphs, `encode.onnx` and
`decode_step.onnx`, with the inputs and outputs of the SavedModel's
`encode` / `decode_step` signatures (`gnmt_tf.export.savedmodel`). Two differences:

- An ONNX graph cannot have an output named like an input, so
  `decode_step`'s new state comes out as `next_<name>` (`next_h_0`, ...);
  feed it back as `<name>`.
- Shapes stay dynamic (batch, source length): ONNX has `Loop` for the
  encoder's `tf.scan`, so nothing is fixed as it is for TFLite. A model's
  task inputs (`Seq2SeqModel.task_inputs`: the task-space Transformer's
  ``src_lang``, ``tgt_lang`` int32 `[B]`, ``tags`` `[B, K]`) are inputs of
  ``encode``, and `model.json` next to the graphs describes them (as for
  TFLite); the Transformer's KV cache holds `max_sequence_length` positions.
  A model with such a limit gets the longest source it takes as
  ``max_source_length`` in `model.json` (none for GNMT).

Tokenisation (SentencePiece) and the beam search are not in these graphs;
`spm.model` is copied next to them, and
`gnmt_tf.host_translator.HostTranslator.from_onnx` translates with the
directory (`gnmt-tf translate --onnx DIR`). A QAT model directory exports its
fake-quant ops as QuantizeLinear/DequantizeLinear pairs, the explicit int8
form TensorRT builds int8 engines from.

Example:
```python
paths = export_onnx("runs/en-de", "onnx/en-de")
HostTranslator.from_onnx("onnx/en-de").translate(["A dog runs."])
```
"""

import pathlib

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

import tensorflow as tf

from gnmt_tf.export.step_functions import make_step_functions, task_encode_function
from gnmt_tf import model_dir as model_dir_lib
from gnmt_tf.io_utils import atomic_path, copy_file_atomic
from gnmt_tf.onnx_runtime import NEXT_PREFIX

DEFAULT_OPSET = 17


def _positional(function):
    """`function` (a concrete function with keyword inputs) as a
    `tf.function` with positional inputs, as tf2onnx traces it, and the
    `decode_step` state outputs renamed `next_*`."""
    specs = [tf.TensorSpec(t.shape, t.dtype, name=t.name.split(":")[0])
             for t in function.inputs if t.dtype != tf.resource]
    names = [spec.name for spec in specs]

    def body(*args):
        outputs = function(**dict(zip(names, args)))
        return {(NEXT_PREFIX + key if key in names else key): value
                for key, value in outputs.items()}

    return tf.function(body, input_signature=specs, autograph=False), specs


def convert_step_functions(model, out_dir, opset=DEFAULT_OPSET):
    """Writes `encode.onnx` and `decode_step.onnx` for a loaded model.

    Args:
        model: a `Seq2SeqModel`, weights loaded.
        out_dir: directory to write to (created if missing).
        opset: ONNX opset.

    Returns:
        `{"encode": Path, "decode_step": Path}`.

    Raises:
        ImportError: tf2onnx is not installed.
    """
    try:
        import tf2onnx
    except ImportError as e:
        raise ImportError("exporting to ONNX needs tf2onnx: pip install "
                          "'gnmt-tf[onnx]'") from e

    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    encode_fn, specs = task_encode_function(model)
    encode, decode_step = make_step_functions(
        model, encode_fn=encode_fn, encode_specs=specs,
        growing_cache=model.supports_growing_cache)
    paths = {}
    for name, function in (("encode", encode), ("decode_step", decode_step)):
        traced, specs = _positional(function)
        paths[name] = out_dir / f"{name}.onnx"
        with atomic_path(paths[name]) as tmp:
            tf2onnx.convert.from_function(traced, input_signature=specs,
                                          opset=opset, output_path=str(tmp))
    return paths


def export_onnx(model_dir, out_dir, opset=DEFAULT_OPSET):
    """Writes a model directory's ONNX graphs, vocabulary and `model.json`
    (any model type).

    Returns:
        `{"encode": Path, "decode_step": Path, "vocabulary": Path,
        "metadata": Path}`.

    Raises:
        ImportError: tf2onnx is not installed.
    """
    import json

    from gnmt_tf.export.host_metadata import default_lengths, export_metadata
    from gnmt_tf.host_translator import METADATA_FILE
    from gnmt_tf.io_utils import write_text_atomic

    model, subwords, payload = model_dir_lib.load_model(model_dir)
    paths = convert_step_functions(model, out_dir, opset)
    out_dir = pathlib.Path(out_dir)
    paths["vocabulary"] = out_dir / model_dir_lib.VOCAB_FILE
    copy_file_atomic(subwords.model_path, paths["vocabulary"])
    paths["metadata"] = out_dir / METADATA_FILE
    # Shapes are dynamic: only a model's own length limit bounds the source,
    # and a KV cache grows (no cache length).
    max_source_length = (None if model.max_target_length is None
                         else default_lengths(model)[0])
    growing = model.supports_growing_cache
    metadata = export_metadata(model, payload, max_source_length,
                               None if growing else model.max_target_length)
    write_text_atomic(paths["metadata"], json.dumps(metadata, indent=2) + "\n")
    return paths
