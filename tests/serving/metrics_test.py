"""Prometheus metrics of the local server, scraped over HTTP from live servers:
counters and histograms move with gRPC and REST requests."""

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families

from gnmt_tf.serving import tensor_codec
from gnmt_tf.serving.metrics import NOT_SERVED
from gnmt_tf.serving.metrics import ServingMetrics
from gnmt_tf.serving.protos import predict_pb2
from gnmt_tf.serving.protos import prediction_service_pb2_grpc

METRICS_PATH = "/monitoring/prometheus/metrics"
REQUESTS = "gnmt_tf_serving_requests_total"
LATENCY_COUNT = "gnmt_tf_serving_request_latency_seconds_count"
BATCH_SUM = "gnmt_tf_serving_batch_size_sum"


def _scrape(server, http):
    """`{(sample name, sorted labels): value}` from the metrics page."""
    status, text = http(f"{server.rest_url}{METRICS_PATH}")
    assert status == 200
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples}


def _value(samples, name, **labels):
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def _grpc_predict(server, name, sentences):
    request = predict_pb2.PredictRequest()
    request.model_spec.name = name
    request.model_spec.version.value = 1
    request.inputs["text"].CopyFrom(tensor_codec.string_tensor(sentences))
    with grpc.insecure_channel(server.target) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        try:
            stub.Predict(request, timeout=30)
        except grpc.RpcError as e:
            return e.code()
    return grpc.StatusCode.OK


def test_counters_move_with_grpc_and_rest_requests(any_server, http):
    before = _scrape(any_server, http)
    assert _grpc_predict(any_server, "toy", ["a", "b", "c"]) == \
        grpc.StatusCode.OK
    assert _grpc_predict(any_server, "toy", ["a", ""]) == \
        grpc.StatusCode.INVALID_ARGUMENT
    assert _grpc_predict(any_server, "nope", ["a"]) == \
        grpc.StatusCode.NOT_FOUND
    url = f"{any_server.rest_url}/v1/models"
    assert http(f"{url}/toy/versions/1:predict",
                {"instances": ["d", "e"]})[0] == 200
    assert http(f"{url}/toy:predict", {"instances": [7]})[0] == 400
    assert http(f"{url}/gone:predict", {"instances": ["a"]})[0] == 404
    assert http(f"{url}/toy")[0] == 200
    after = _scrape(any_server, http)

    def delta(name, **labels):
        return _value(after, name, **labels) - _value(before, name, **labels)

    grpc_ok = dict(protocol="grpc", method="predict", model="toy")
    rest_ok = dict(protocol="rest", method="predict", model="toy")
    assert delta(REQUESTS, code="OK", **grpc_ok) == 1
    assert delta(REQUESTS, code="INVALID_ARGUMENT", **grpc_ok) == 1
    assert delta(REQUESTS, protocol="grpc", method="predict",
                 model=NOT_SERVED, code="NOT_FOUND") == 1
    assert delta(REQUESTS, code="OK", **rest_ok) == 1
    assert delta(REQUESTS, code="INVALID_ARGUMENT", **rest_ok) == 1
    assert delta(REQUESTS, protocol="rest", method="predict",
                 model=NOT_SERVED, code="NOT_FOUND") == 1
    assert delta(REQUESTS, protocol="rest", method="get_model_status",
                 model="toy", code="OK") == 1
    assert delta(LATENCY_COUNT, **grpc_ok) == 2  # "nope" is not "toy"
    assert delta(LATENCY_COUNT, **rest_ok) == 2
    # 3 + 2 rows ran (padded up to allowed batch sizes, if any)
    assert delta(BATCH_SUM, model="toy") >= 5


def test_metrics_only_at_the_configured_path(plain_server, http):
    status, _ = http(f"{plain_server.rest_url}/metrics")
    assert status == 404


def test_model_label_is_bounded():
    metrics = ServingMetrics(["gnmt"])
    for name in ("gnmt", "x", "y"):
        metrics.observe_request("rest", "predict", name,
                                grpc.StatusCode.NOT_FOUND, 0.01)
    value = metrics.registry.get_sample_value
    assert value(REQUESTS, {"protocol": "rest", "method": "predict",
                            "model": NOT_SERVED, "code": "NOT_FOUND"}) == 2
    assert value(REQUESTS, {"protocol": "rest", "method": "predict",
                            "model": "gnmt", "code": "NOT_FOUND"}) == 1


def test_monitoring_path_needs_the_rest_port():
    from gnmt_tf.serving.model_manager import ModelManager
    from gnmt_tf.serving.server import ModelServer

    with pytest.raises(ValueError, match="needs rest_port"):
        ModelServer(ModelManager({}), monitoring_path=METRICS_PATH)
