"""export package of gnmt-tf: trained model directories to deployable artifacts.

- `export.savedmodel`: SavedModels for `tensorflow_model_server` (text and
  the model's task inputs in, text out, plus `encode` / `decode_step` for
  host-driven decoding), for any `Seq2SeqModel`;
- `export.ops`: the ops an export needs, checked against `allowed_ops.txt`;
- `export.tflite`: TFLite models (float32, dynamic-range, float16, int8) of
  any `Seq2SeqModel`, with the `model.json` that the host-side search
  (`gnmt_tf.host_translator`, no TensorFlow) reads;
- `export.onnx_export`: the same two steps as ONNX graphs (tf2onnx), for
  ONNX Runtime (the same host-side search) and TensorRT;
- `export.quantization` / `export.qat`: tfmot `QuantizeConfig`s, fake-quant
  layers and quantization-aware fine-tuning of GNMT;
- `export.transformer_quantization` / `export.transformer_qat`: the same for
  the task-space Transformer;
- `export.tflite_int8`: the int8 conversion of a QAT model;
- `export.cli`: `gnmt-tf export ACTION`.

Importing this package (or `export.cli`) does not import TensorFlow.
"""

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)
