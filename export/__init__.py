"""export package of gnmt-tf: trained model directories to deployable artifacts.

- `export.savedmodel`: SavedModels for `tensorflow_model_server` (text in,
  text out, plus `encode` / `decode_step` for host-driven decoding);
- `export.ops`: the ops an export needs, checked against `allowed_ops.txt`;
- `export.tflite` / `export.tflite_translator`: TFLite models and the NumPy
  beam search that drives them;
- `export.cli`: `gnmt-tf export ACTION`.

Importing this package (or `export.cli`) does not import TensorFlow.
"""

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)
