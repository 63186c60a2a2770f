"""serving package of gnmt-tf: TF Serving's APIs, client and local server.

- `serving.client`: `TranslationClient` (batching, retries) and `translate_lines`;
  imports without TensorFlow.
- `serving.request_batching`: client-side sentence splitting, dedup, packing.
- `serving.server`: `ModelServer`, a local `PredictionService`/`ModelService`
  with the gRPC health service, and optionally the REST API
  (`serving.rest_server`, `serving.json_codec`) and Prometheus metrics
  (`serving.metrics`); both APIs share `serving.request_handler`.
- `serving.model_manager`: version polling, hot reload, `VersionPolicy`.
- `serving.dynamic_batcher`, `serving.batching_config`: server-side batching
  with TF Serving's `batching_parameters.txt`.
- `serving.server_config`: TF Serving's `models.config` and
  `monitoring.config`.
- `serving.cli`: the `gnmt-tf serve` subcommand.

Nothing is imported here, so `import serving.client` stays light.
"""

import os

# As `gnmt_tf` does (serving imports none of the TensorFlow-side packages):
# Keras 2 for any SavedModel that needs Keras, and quiet TensorFlow C++ logs.
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
