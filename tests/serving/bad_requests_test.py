"""Issue 18: requests that used to wedge the server or come back as graph
dumps, against the real server and the toy SavedModel (see conftest)."""

import threading

import grpc
import pytest

from gnmt_tf.serving import tensor_codec
from gnmt_tf.serving.batching_config import BatchingParameters
from gnmt_tf.serving.protos import predict_pb2
from gnmt_tf.serving.protos import prediction_service_pb2_grpc
from gnmt_tf.serving.validation import RequestLimits

INVALID = grpc.StatusCode.INVALID_ARGUMENT


def _request(sentences, signature="", name="toy"):
    request = predict_pb2.PredictRequest()
    request.model_spec.name = name
    request.model_spec.signature_name = signature
    request.model_spec.version.value = 1  # the version with `checked`
    request.inputs["text"].CopyFrom(tensor_codec.string_tensor(sentences))
    return request


def _stub(server):
    channel = grpc.insecure_channel(server.target)
    return channel, prediction_service_pb2_grpc.PredictionServiceStub(channel)


def test_request_larger_than_the_queue_does_not_wedge_the_server(
        small_queue_server):
    channel, stub = _stub(small_queue_server)
    with channel:
        ok = stub.Predict(_request([f"s{i}" for i in range(8)]), timeout=10)
        assert len(ok.outputs["translations"].string_val) == 8
        with pytest.raises(grpc.RpcError) as info:
            stub.Predict(_request([f"s{i}" for i in range(9)]), timeout=10)
        assert info.value.code() == INVALID
        assert "9 rows" in info.value.details()
        assert "at most 8" in info.value.details()
        for _ in range(3):  # every later request is served
            response = stub.Predict(_request(["one row"]), timeout=10)
            assert response.outputs["translations"].string_val == [b"ONE ROW"]
    for _, _, _, batcher in small_queue_server.manager.batchers():
        assert batcher.queue_state()["batches"] == 0


def test_zero_rows_get_an_empty_result_without_running_the_model(any_server):
    channel, stub = _stub(any_server)
    with channel:
        response = stub.Predict(_request([], signature="checked"), timeout=10)
    assert response.outputs["translations"].string_val == []
    assert tensor_codec.shape_of(response.outputs["translations"]) == [0]
    assert tensor_codec.to_floats(response.outputs["scores"]) == []


def test_in_graph_assertion_is_one_sentence(any_server):
    channel, stub = _stub(any_server)
    with channel:
        with pytest.raises(grpc.RpcError) as info:
            stub.Predict(_request(["x" * 60], signature="checked"), timeout=10)
    assert info.value.code() == INVALID
    assert info.value.details() == (
        "the model rejected the input: input too long: the limit is 50 "
        "bytes, got 60 (split it into sentences)")


@pytest.mark.parametrize("options, message", [
    ({"length_penalty": float("inf")},
     "length_penalty must be a finite number, got inf"),
    ({"length_penalty": float("nan")},
     "length_penalty must be a finite number, got nan"),
    ({"coverage_penalty": float("-inf")},
     "coverage_penalty must be a finite number, got -inf"),
    ({"beam_size": -1}, "beam_size must be an integer >= 1, got -1"),
])
def test_non_finite_search_options_are_invalid_argument(any_server, options,
                                                        message):
    import numpy as np

    values = dict({"beam_size": 2, "length_penalty": 0.6,
                   "coverage_penalty": 0.0}, **options)
    request = _request(["a dog"], signature="translate_with_options")
    request.inputs["beam_size"].CopyFrom(tensor_codec.make_tensor(
        np.int32(values["beam_size"])))
    for key in ("length_penalty", "coverage_penalty"):
        request.inputs[key].CopyFrom(tensor_codec.make_tensor(
            np.float32(values[key])))
    channel, stub = _stub(any_server)
    with channel:
        with pytest.raises(grpc.RpcError) as info:
            stub.Predict(request, timeout=10)
    assert info.value.code() == INVALID
    assert info.value.details() == message


def test_a_bad_request_fails_alone_in_a_shared_batch(start_server, make_base):
    # A batch waits up to 5 s for 4 rows: the four requests below share one.
    params = BatchingParameters(max_batch_size=4,
                                batch_timeout_micros=5_000_000,
                                num_batch_threads=1)
    server = start_server({"toy": make_base()}, params)
    channel, stub = _stub(server)
    texts = ["good 1", "x" * 60, "good 2", "good 3"]
    results = [None] * len(texts)

    def send(i):
        try:
            results[i] = stub.Predict(_request([texts[i]], "checked"),
                                      timeout=10).outputs[
                "translations"].string_val[0]
        except grpc.RpcError as e:
            results[i] = e.code()

    with channel:
        threads = [threading.Thread(target=send, args=(i,))
                   for i in range(len(texts))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(20)
    batchers = {k: b for _, _, k, b in server.manager.batchers()}
    assert batchers["checked"].stats["split_batches"] >= 1  # shared a batch
    assert results == [b"GOOD 1", INVALID, b"GOOD 2", b"GOOD 3"]
    server.stop(grace=1)


def test_padded_size_limit(start_server, make_base):
    server = start_server({"toy": make_base()}, limits=RequestLimits(
        max_string_bytes=200, max_rows=64, max_padded_bytes=1000))
    channel, stub = _stub(server)
    with channel:
        # 10 rows x 100 bytes = 1,000 padded bytes: at the limit
        response = stub.Predict(_request(["x" * 100] * 10), timeout=10)
        assert len(response.outputs["translations"].string_val) == 10
        # one longer row pads all 10 to 101 bytes
        with pytest.raises(grpc.RpcError) as info:
            stub.Predict(_request(["x" * 100] * 9 + ["y" * 101]), timeout=10)
    assert info.value.code() == INVALID
    assert info.value.details() == (
        "request too large: 1,010 padded bytes (10 strings in 'text' x 101 "
        "bytes, the longest); the limit is 1,000 (gnmt-tf serve "
        "--max_request_padded_bytes): send fewer or shorter sentences per "
        "request")
    server.stop(grace=1)
