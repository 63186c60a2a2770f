"""TF Serving's REST API of the local server, against live servers (urllib for
HTTP, a real gRPC channel to compare): same answers as gRPC, TF Serving's
JSON formats, errors with the right HTTP status."""

import base64
import json
import socket
import threading
import time

import grpc
import numpy as np
import pytest

from gnmt_tf.serving import tensor_codec
from gnmt_tf.serving.batching_config import BatchingParameters
from gnmt_tf.serving.model_manager import LoadedModel
from gnmt_tf.serving.protos import meta_graph_pb2
from gnmt_tf.serving.protos import predict_pb2
from gnmt_tf.serving.protos import prediction_service_pb2_grpc
from gnmt_tf.serving.protos import types_pb2

SENTENCES = ["ein Haus", "zwei Häuser", "Grüße", "x" * 200]


def _grpc_predict(server, sentences, version=1, signature=""):
    request = predict_pb2.PredictRequest()
    request.model_spec.name = "toy"
    request.model_spec.version.value = version
    request.model_spec.signature_name = signature
    request.inputs["text"].CopyFrom(tensor_codec.string_tensor(sentences))
    with grpc.insecure_channel(server.target) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        response = stub.Predict(request, timeout=30)
    return {k: tensor_codec.to_numpy(v) for k, v in response.outputs.items()}


def test_rest_predict_equals_grpc_predict(any_server, http):
    expected = _grpc_predict(any_server, SENTENCES)
    url = f"{any_server.rest_url}/v1/models/toy/versions/1:predict"

    status, rows = http(url, {"instances": SENTENCES})
    assert status == 200
    assert [r["translations"] for r in rows["predictions"]] == [
        t.decode() for t in expected["translations"]]
    np.testing.assert_array_equal(
        np.array([r["scores"] for r in rows["predictions"]], np.float32),
        expected["scores"])

    status, columns = http(url, {"inputs": {"text": SENTENCES}})
    assert status == 200
    assert columns["outputs"]["translations"] == [
        r["translations"] for r in rows["predictions"]]
    assert columns["outputs"]["scores"] == [
        r["scores"] for r in rows["predictions"]]
    # float32 scores are written in their shortest form: 8.0, not 8.000000...
    assert columns["outputs"]["scores"][0] == 8.0


def test_row_objects_b64_and_the_latest_version(plain_server, http):
    url = f"{plain_server.rest_url}/v1/models/toy:predict"
    hello = base64.b64encode("héllo".encode()).decode()
    status, content = http(url, {"instances": [{"text": {"b64": hello}},
                                               {"text": "a"}]})
    assert status == 200
    assert [r["translations"] for r in content["predictions"]] == [
        "v2 HéLLO", "v2 A"]  # version 2 is the latest; upper() is ASCII


def test_scalar_option_in_columnar_format(any_server, http):
    url = f"{any_server.rest_url}/v1/models/toy/versions/1:predict"
    status, content = http(url, {"signature_name": "with_options",
                                 "inputs": {"text": ["ab", "c"],
                                            "repeat": 3}})
    assert status == 200
    assert content == {"outputs": ["ABABAB", "CCC"]}  # a single output


@pytest.mark.parametrize("path, body, status, message", [
    ("nope:predict", {"instances": ["a"]}, 404, "'nope' is not served"),
    ("toy/versions/7:predict", {"instances": ["a"]}, 404, "version 7"),
    ("toy/labels/stable:predict", {"instances": ["a"]}, 404,
     "version labels are not supported"),
    ("toy:predict", {"signature_name": "nope", "instances": ["a"]}, 404,
     "signature 'nope'"),
    ("toy:predict", b"{not json", 400, "JSON parse error"),
    ("toy:predict", ["a"], 400, "must be a JSON object"),
    ("toy:predict", {"text": ["a"]}, 400, "one of 'instances'"),
    ("toy:predict", {"instances": []}, 400, "'instances' is empty"),
    ("toy:predict", {"instances": [1, 2]}, 400, "holds a number where "
     "strings"),
    ("toy:predict", {"instances": ["ok", ""]}, 400, "element 1 is empty"),
    ("toy:predict", {"instances": ["x" * 201]}, 400, "limit is 200"),
    ("toy:predict", {"instances": ["a"] * 65}, 400, "65 rows"),
    ("toy:predict", {"instances": [["a"], "b"]}, 400, "ragged"),
    ("toy:predict", {"inputs": {"text": ["a"], "other": ["b"]}}, 400,
     "unknown input(s) ['other']"),
    ("toy:predict", {"inputs": {"txt": ["a"]}}, 400, "missing input(s)"),
    ("toy:predict", {"instances": [{"text": {"b64": "%%"}}]}, 400,
     "bad base64"),
    ("toy/versions/1:predict", {"signature_name": "checked",
                                "instances": ["y" * 60]}, 400,
     "input too long: the limit is 50 bytes, got 60"),
    ("toy:classify", {"examples": []}, 501, "only :predict"),
    # Search options as `gnmt-tf translate --alpha / --beta / --beam-size`
    # take them (an export's graph answers NaN with an internal error).
    ("toy/versions/1:predict", {
        "signature_name": "translate_with_options",
        "inputs": {"text": ["a"], "beam_size": 2,
                   "length_penalty": float("inf"), "coverage_penalty": 0.0}},
     400, "length_penalty must be a finite number, got inf"),
    ("toy/versions/1:predict", {
        "signature_name": "translate_with_options",
        "inputs": {"text": ["a"], "beam_size": 2, "length_penalty": 0.6,
                   "coverage_penalty": float("nan")}},
     400, "coverage_penalty must be a finite number, got nan"),
    ("toy/versions/1:predict", {
        "signature_name": "translate_with_options",
        "inputs": {"text": ["a"], "beam_size": 0, "length_penalty": 0.6,
                   "coverage_penalty": 0.0}},
     400, "beam_size must be an integer >= 1, got 0"),
    # Nested past the parser's recursion, and just short of it (which the
    # tensor readers' recursion then hit): both used to be HTTP 500.
    ("toy:predict", b'{"instances": ' + b"[" * 100_000 + b"]" * 100_000
     + b"}", 400, "JSON nested deeper than 64 levels"),
    ("toy:predict", b'{"instances": ' + b"[" * 900 + b'"a"' + b"]" * 900
     + b"}", 400, "JSON nested deeper than 64 levels"),
])
def test_errors_have_tf_serving_http_status(any_server, http, path, body,
                                            status, message):
    got, content = http(f"{any_server.rest_url}/v1/models/{path}", body)
    assert got == status, content
    assert list(content) == ["error"]
    assert message in content["error"]
    # and the server still answers
    ok, content = http(f"{any_server.rest_url}/v1/models/toy/versions/1:"
                       "predict", {"instances": ["hello"]})
    assert (ok, content) == (200, {"predictions": [
        {"translations": "HELLO", "scores": 5.0}]})


def test_finite_search_options_are_served(any_server, http):
    status, content = http(
        f"{any_server.rest_url}/v1/models/toy/versions/1:predict",
        {"signature_name": "translate_with_options",
         "inputs": {"text": ["ab"], "beam_size": 2, "length_penalty": 0.5,
                    "coverage_penalty": -1.0}})
    assert (status, content) == (200, {"outputs": {
        "translations": ["AB"], "scores": [1.0]}})


def test_unknown_paths_are_json_errors(plain_server, http):
    status, content = http(f"{plain_server.rest_url}/v2/models/toy")
    assert status == 404
    assert content == {"error": "Malformed request: GET /v2/models/toy"}
    status, content = http(f"{plain_server.rest_url}/v1/models/toy",
                           {"instances": ["a"]})
    assert status == 405 and "Malformed request: POST" in content["error"]


def test_model_status_and_metadata(plain_server, http):
    base = f"{plain_server.rest_url}/v1/models/toy"
    status, content = http(base)
    assert status == 200
    assert content == {"model_version_status": [
        {"version": str(v), "state": "AVAILABLE",
         "status": {"error_code": "OK", "error_message": ""}}
        for v in (1, 2)]}
    status, content = http(f"{base}/versions/1")
    assert [s["version"] for s in content["model_version_status"]] == ["1"]

    status, content = http(f"{base}/versions/1/metadata")
    assert status == 200
    assert content["model_spec"] == {"name": "toy", "signature_name": "",
                                     "version": "1"}
    signatures = content["metadata"]["signature_def"]["signature_def"]
    assert {"serving_default", "with_options", "checked"} <= set(signatures)
    text = signatures["serving_default"]["inputs"]["text"]
    assert text["dtype"] == "DT_STRING"
    assert set(signatures["serving_default"]["outputs"]) == {
        "translations", "scores"}
    status, content = http(f"{base}/metadata")
    assert content["model_spec"]["version"] == "2"

    status, content = http(f"{plain_server.rest_url}/v1/models/nope")
    assert status == 404 and "not served" in content["error"]


def _slow_loader(seconds_per_call, gate=None):
    """A fake model (no TensorFlow): reverses strings, `seconds_per_call` a
    call; a batch with "block" waits for `gate` first."""

    signature = meta_graph_pb2.SignatureDef()
    for infos, key in ((signature.inputs, "text"),
                       (signature.outputs, "translations")):
        infos[key].dtype = types_pb2.DT_STRING
        infos[key].tensor_shape.dim.add(size=-1)

    def run(inputs):
        if gate is not None and b"block" in list(inputs["text"]):
            gate.wait(20)
        time.sleep(seconds_per_call)
        return {"translations": np.array([s[::-1] for s in inputs["text"]],
                                         dtype=object)}
    return lambda path: LoadedModel({"serving_default": signature},
                                    {"serving_default": run})


def test_rest_deadline_stops_the_request(start_server, tmp_path, http):
    (tmp_path / "slow" / "1").mkdir(parents=True)
    (tmp_path / "slow" / "1" / "saved_model.pb").write_bytes(b"")
    server = start_server({"slow": str(tmp_path / "slow")},
                          load_fn=_slow_loader(0.3), max_rows_per_run=1,
                          rest=True, rest_timeout_s=0.5)
    url = f"{server.rest_url}/v1/models/slow:predict"
    status, content = http(url, {"instances": ["ab"]})
    assert (status, content) == (200, {"predictions": ["ba"]})
    def rows_run():
        return server.metrics.registry.get_sample_value(
            "gnmt_tf_serving_batch_size_sum", {"model": "slow"})

    before = rows_run()
    status, content = http(url, {"instances": ["a", "b", "c", "d", "e"]})
    assert status == 504
    assert "deadline" in content["error"]
    # it stopped after the chunk that ran past the deadline: 2 of 5 rows
    assert rows_run() - before <= 2
    server.stop(grace=2)


def _wait_until(condition, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_client_gone_drops_its_queued_work(start_server, tmp_path, http):
    (tmp_path / "slow" / "1").mkdir(parents=True)
    (tmp_path / "slow" / "1" / "saved_model.pb").write_bytes(b"")
    gate = threading.Event()
    server = start_server(
        {"slow": str(tmp_path / "slow")},
        BatchingParameters(max_batch_size=4, batch_timeout_micros=1000,
                           num_batch_threads=1),
        load_fn=_slow_loader(0.0, gate), rest=True)
    (_, _, _, batcher), = server.manager.batchers()
    url = f"{server.rest_url}/v1/models/slow:predict"
    answers = []
    blocker = threading.Thread(target=lambda: answers.append(
        http(url, {"instances": ["block"]})))
    blocker.start()
    # The blocker's batch has left the queue: the only batch thread is busy
    # with it (until then, the next request could join that batch).
    _wait_until(lambda: batcher.stats["tasks"] >= 1
                and not batcher.queue_state()["batches"])
    body = json.dumps({"instances": ["gone"]}).encode()
    with socket.create_connection(("127.0.0.1", server.rest_port)) as s:
        s.sendall(b"POST /v1/models/slow:predict HTTP/1.1\r\n"
                  b"Host: localhost\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        _wait_until(lambda: batcher.stats["tasks"] >= 2)  # queued
    # the client has gone: its work is dropped before it runs
    _wait_until(lambda: batcher.queue_state()["cancelled"] == 1)
    gate.set()
    blocker.join(20)
    assert answers == [(200, {"predictions": ["kcolb"]})]
    assert batcher.stats["cancelled"] == 1
    assert http(url, {"instances": ["ok"]}) == (200, {"predictions": ["ko"]})
    server.stop(grace=2)
