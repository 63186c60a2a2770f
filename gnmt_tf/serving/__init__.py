"""serving package of gnmt-tf: TF Serving's APIs, client and local server.

- `gnmt_tf.serving.client`: `TranslationClient` (batching, retries) and `translate_lines`;
  imports without TensorFlow.
- `gnmt_tf.serving.request_batching`: client-side sentence splitting, dedup, packing.
- `gnmt_tf.serving.server`: `ModelServer`, a local `PredictionService`/`ModelService`
  with the gRPC health service, and optionally the REST API
  (`gnmt_tf.serving.rest_server`, `gnmt_tf.serving.json_codec`) and Prometheus metrics
  (`gnmt_tf.serving.metrics`); both APIs share `gnmt_tf.serving.request_handler`.
- `gnmt_tf.serving.model_manager`: version polling, hot reload, `VersionPolicy`.
- `gnmt_tf.serving.dynamic_batcher`, `gnmt_tf.serving.batching_config`: server-side batching
  with TF Serving's `batching_parameters.txt`.
- `gnmt_tf.serving.server_config`: TF Serving's `models.config` and
  `monitoring.config`.
- `gnmt_tf.serving.cli`: the `gnmt-tf serve` subcommand.

Nothing is imported here, so `import gnmt_tf.serving.client` stays light.
"""

import os

# As `gnmt_tf` does (serving imports none of the TensorFlow-side packages):
# Keras 2 for any SavedModel that needs Keras, and quiet TensorFlow C++ logs.
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
