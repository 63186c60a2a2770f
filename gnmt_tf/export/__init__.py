"""export package of gnmt-tf: trained model directories to deployable artifacts.

- `gnmt_tf.export.savedmodel`: SavedModels for `tensorflow_model_server` (text and
  the model's task inputs in, text out, plus `encode` / `decode_step` for
  host-driven decoding), for any `Seq2SeqModel`;
- `gnmt_tf.export.ops`: the ops an export needs, checked against `allowed_ops.txt`;
- `gnmt_tf.export.tflite`: TFLite models (float32, dynamic-range, float16, int8) of
  any `Seq2SeqModel`, with the `model.json` that the host-side search
  (`gnmt_tf.host_translator`, no TensorFlow) reads; `gnmt_tf.export.tflite_tied_table`
  stores an int8 model's tied embedding table once;
- `gnmt_tf.export.onnx_export`, `gnmt_tf.export.tensorrt`: ONNX step graphs (for ONNX Runtime,
  the same host-side search, and TensorRT) and TF-TRT;
- `gnmt_tf.export.qat`: quantization-aware fine-tuning of any model directory, on the
  fake quantization of `gnmt_tf.quantization` and the QAT model of its family
  (`gnmt_tf.models.gnmt.qat`, `gnmt_tf.models.task_space.qat`, each named by its family's `registry`);
- `gnmt_tf.export.cli`: `gnmt-tf export ACTION`.

Importing this package (or `gnmt_tf.export.cli`) does not import TensorFlow.
"""

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)
