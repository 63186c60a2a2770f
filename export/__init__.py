"""export package of gnmt-tf: trained model directories to deployable artifacts.

- `export.savedmodel`: SavedModels for `tensorflow_model_server` (text and
  the model's task inputs in, text out, plus `encode` / `decode_step` for
  host-driven decoding), for any `Seq2SeqModel`;
- `export.ops`: the ops an export needs, checked against `allowed_ops.txt`;
- `export.tflite`: TFLite models (float32, dynamic-range, float16, int8) of
  any `Seq2SeqModel`, with the `model.json` that the host-side search
  (`gnmt_tf.host_translator`, no TensorFlow) reads; `export.tflite_tied_table`
  stores an int8 model's tied embedding table once;
- `export.onnx_export`, `export.tensorrt`: ONNX step graphs (for ONNX Runtime,
  the same host-side search, and TensorRT) and TF-TRT;
- `export.qat`: quantization-aware fine-tuning of any model directory, on the
  fake quantization of `export.quantization` and the QAT model of its family
  (`export.gnmt_qat`, `export.transformer_qat`, named by `export.registry`);
- `export.cli`: `gnmt-tf export ACTION`.

Importing this package (or `export.cli`) does not import TensorFlow.
"""

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)
