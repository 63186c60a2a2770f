"""Prometheus metrics of the local server (prometheus-client).

Served on the REST port at the path of a TF Serving monitoring config
(`prometheus_config { enable: true path: "/monitoring/prometheus/metrics" }`,
see `gnmt_tf.serving.server_config`), in Prometheus' text format:

- `gnmt_tf_serving_requests_total{protocol, method, model, code}`: requests
  answered. `protocol` is `grpc` or `rest`; `method` `predict`,
  `get_model_metadata` or `get_model_status`; `code` is `OK` or the gRPC
  status code of the error (`INVALID_ARGUMENT`, `NOT_FOUND`, `UNAVAILABLE`,
  `DEADLINE_EXCEEDED`, ...; a REST error has the code its HTTP status was
  chosen from), so errors by code are `code!="OK"`.
- `gnmt_tf_serving_request_latency_seconds{protocol, method, model}`: a
  histogram of the time from a request's arrival to its answer.
- `gnmt_tf_serving_batch_size{model}`: a histogram of the rows of each model
  call: a batch with server-side batching (padded to its allowed size), a
  chunk of a request without.

`model` is the requested model's name when it is one the server serves, and
"(not served)" otherwise, so that clients cannot grow the set of series. Each
`ServingMetrics` has a registry of its own (several servers in one process
keep apart).
"""

from typing import Iterable

import grpc
import prometheus_client

NOT_SERVED = "(not served)"
CONTENT_TYPE = prometheus_client.CONTENT_TYPE_LATEST
# Seconds: one short sentence on a small model to a large batch on 8x8 GNMT.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
                   10.0, 30.0, 60.0, 120.0)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096)


class ServingMetrics:
    """Request, latency and batch-size metrics of one server.

    Args:
      models: the names of the models served (the `model` label's values).
    """

    def __init__(self, models: Iterable[str]):
        self.registry = prometheus_client.CollectorRegistry()
        self._models = frozenset(models)
        self.requests = prometheus_client.Counter(
            "gnmt_tf_serving_requests",
            "Requests answered, by protocol, method, model and status code "
            "(OK, or the gRPC code of the error).",
            ["protocol", "method", "model", "code"], registry=self.registry)
        self.latency = prometheus_client.Histogram(
            "gnmt_tf_serving_request_latency_seconds",
            "Time from a request's arrival to its answer.",
            ["protocol", "method", "model"], buckets=LATENCY_BUCKETS,
            registry=self.registry)
        self.batch_size = prometheus_client.Histogram(
            "gnmt_tf_serving_batch_size",
            "Rows per model call (a batch with server-side batching, else a "
            "chunk of a request).",
            ["model"], buckets=BATCH_BUCKETS, registry=self.registry)

    def _model(self, name: str) -> str:
        return name if name in self._models else NOT_SERVED

    def observe_request(self, protocol: str, method: str, model: str,
                        code: grpc.StatusCode, seconds: float):
        """Count one answered request and its latency."""
        model = self._model(model)
        self.requests.labels(protocol, method, model, code.name).inc()
        self.latency.labels(protocol, method, model).observe(seconds)

    def observe_batch(self, model: str, rows: int):
        """Record one model call of `rows` rows."""
        self.batch_size.labels(self._model(model)).observe(rows)

    def exposition(self) -> bytes:
        """The metrics in Prometheus' text format (`CONTENT_TYPE`)."""
        return prometheus_client.generate_latest(self.registry)
