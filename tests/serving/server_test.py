"""The local server: correctness, bad inputs, batching, cancellation, shutdown."""

import threading
import time

import grpc
import numpy as np
import pytest

from gnmt_tf.serving import tensor_codec
from gnmt_tf.serving.batching_config import BatchingParameters
from gnmt_tf.serving.client import TranslationClient
from gnmt_tf.serving.model_manager import LoadedModel
from gnmt_tf.serving.protos import get_model_metadata_pb2
from gnmt_tf.serving.protos import get_model_status_pb2
from gnmt_tf.serving.protos import meta_graph_pb2
from gnmt_tf.serving.protos import model_service_pb2_grpc
from gnmt_tf.serving.protos import predict_pb2
from gnmt_tf.serving.protos import prediction_service_pb2_grpc
from gnmt_tf.serving.protos import types_pb2

INVALID = grpc.StatusCode.INVALID_ARGUMENT
NOT_FOUND = grpc.StatusCode.NOT_FOUND


@pytest.fixture
def stub(any_server):
    with grpc.insecure_channel(any_server.target) as channel:
        yield prediction_service_pb2_grpc.PredictionServiceStub(channel)


def predict_request(tensor=None, name="toy", version=None, signature="",
                    key="text", extra=None):
    request = predict_pb2.PredictRequest()
    request.model_spec.name = name
    request.model_spec.signature_name = signature
    if version is not None:
        request.model_spec.version.value = version
    if tensor is None:
        tensor = tensor_codec.string_tensor(["hello"])
    request.inputs[key].CopyFrom(tensor)
    for k, v in (extra or {}).items():
        request.inputs[k].CopyFrom(v)
    return request


def test_served_output_equals_saved_model(any_server, stub, toy_versions):
    import tensorflow as tf

    sentences = ["ein Haus", "zwei Häuser", "Grüße"]
    response = stub.Predict(predict_request(
        tensor_codec.string_tensor(sentences), version=1), timeout=30)
    model = tf.saved_model.load(toy_versions[1])
    expected = model.signatures["serving_default"](text=tf.constant(sentences))
    got = {k: tf.make_ndarray(v) for k, v in response.outputs.items()}
    assert list(got["translations"]) == list(expected["translations"].numpy())
    np.testing.assert_array_equal(got["scores"], expected["scores"].numpy())
    assert response.model_spec.name == "toy"
    assert response.model_spec.version.value == 1
    assert response.model_spec.signature_name == "serving_default"


def test_latest_by_default_and_named_version(plain_server):
    client = TranslationClient(plain_server.target, "toy")
    assert client.predict(["a"])[0] == ["v2 A"]
    assert client.predict(["a"])[2] == 2
    client.version = 1
    assert client.predict(["a"])[0] == ["A"]
    client.close()


def bad(shape=None, values=(b"ok",), dtype=types_pb2.DT_STRING, content=b""):
    proto = tensor_codec.string_tensor(list(values), shape)
    proto.dtype = dtype
    if content:
        proto.tensor_content = content
    return proto


@pytest.mark.parametrize("request_kwargs, code, message", [
    (dict(tensor=tensor_codec.make_tensor(np.ones(2, np.float32))), INVALID,
     "dtype DT_FLOAT"),
    (dict(tensor=bad(shape=[1, 1])), INVALID, "shape"),
    (dict(tensor=bad(shape=[3])), INVALID, "needs 3 strings"),
    (dict(tensor=bad(content=b"xx")), INVALID, "tensor_content"),
    (dict(tensor=bad(values=[b"ok", b""])), INVALID, "element 1 is empty"),
    (dict(tensor=bad(values=[b" \t"])), INVALID, "is empty"),
    (dict(tensor=bad(values=[b"ok", b"caf\xe9"])), INVALID, "UTF-8"),
    (dict(tensor=bad(values=[b"x" * 201])), INVALID, "limit is 200"),
    (dict(tensor=bad(values=[b"x"] * 65)), INVALID, "65 rows"),
    (dict(key="txt"), INVALID, "missing input"),
    (dict(extra={"other": tensor_codec.string_tensor(["a"])}), INVALID,
     "unknown input"),
    (dict(name=""), INVALID, "name is empty"),
    (dict(name="nope"), NOT_FOUND, "not served"),
    (dict(version=7), NOT_FOUND, "version 7"),
    (dict(signature="nope"), NOT_FOUND, "signature 'nope'"),
])
def test_bad_requests_get_status_and_message(stub, request_kwargs, code,
                                             message):
    with pytest.raises(grpc.RpcError) as info:
        stub.Predict(predict_request(**request_kwargs), timeout=10)
    assert info.value.code() == code
    assert message in info.value.details()
    # and the server is still fine
    assert stub.Predict(predict_request(version=1), timeout=10).outputs[
        "translations"].string_val == [b"HELLO"]


def test_output_filter(stub):
    request = predict_request(version=1)
    request.output_filter.append("scores")
    response = stub.Predict(request, timeout=10)
    assert list(response.outputs) == ["scores"]
    request.output_filter.append("nope")
    with pytest.raises(grpc.RpcError) as info:
        stub.Predict(request, timeout=10)
    assert info.value.code() == INVALID


def test_no_deadline(stub):
    response = stub.Predict(predict_request(version=1))
    assert response.outputs["translations"].string_val == [b"HELLO"]


def test_scalar_option_signature_runs_unbatched(any_server, stub):
    request = predict_request(tensor_codec.string_tensor(["ab", "c"]),
                              version=1, signature="with_options")
    request.inputs["repeat"].CopyFrom(
        tensor_codec.make_tensor(np.array(3, np.int32)))
    response = stub.Predict(request, timeout=10)
    assert list(response.outputs["translations"].string_val) == [
        b"ABABAB", b"CCC"]
    sv_batchers = [k for _, v, k, _ in any_server.manager.batchers() if v == 1]
    assert "with_options" not in sv_batchers


def test_empty_batch(stub):
    response = stub.Predict(predict_request(tensor_codec.string_tensor([])),
                            timeout=10)
    assert list(response.outputs["translations"].string_val) == []


def test_metadata_and_status(any_server):
    with grpc.insecure_channel(any_server.target) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        request = get_model_metadata_pb2.GetModelMetadataRequest()
        request.model_spec.name = "toy"
        with pytest.raises(grpc.RpcError) as info:
            stub.GetModelMetadata(request, timeout=10)
        assert info.value.code() == INVALID
        request.metadata_field.append("signature_def")
        response = stub.GetModelMetadata(request, timeout=10)
        sig_map = get_model_metadata_pb2.SignatureDefMap()
        response.metadata["signature_def"].Unpack(sig_map)
        signature = sig_map.signature_def["serving_default"]
        assert signature.inputs["text"].dtype == types_pb2.DT_STRING
        assert set(signature.outputs) == {"translations", "scores"}

        models = model_service_pb2_grpc.ModelServiceStub(channel)
        status_request = get_model_status_pb2.GetModelStatusRequest()
        status_request.model_spec.name = "toy"
        status = models.GetModelStatus(status_request, timeout=10)
        available = get_model_status_pb2.ModelVersionStatus.AVAILABLE
        assert all(s.state == available for s in status.model_version_status)
        status_request.model_spec.name = "nope"
        with pytest.raises(grpc.RpcError) as info:
            models.GetModelStatus(status_request, timeout=10)
        assert info.value.code() == NOT_FOUND
    client = TranslationClient(any_server.target, "toy")
    assert client.metadata()["serving_default"]["inputs"] == {
        "text": ("DT_STRING", [-1])}
    client.close()


def test_dynamic_batcher_merges_concurrent_requests(batching_server):
    batcher, = [b for _, _, key, b in batching_server.manager.batchers()
                if key == "serving_default"]
    before = dict(batcher.stats)
    client = TranslationClient(batching_server.target, "toy")
    barrier = threading.Barrier(8)
    results = [None] * 8

    def one(i):
        barrier.wait(5)
        results[i] = client.predict([f"s{i}"])[0][0]

    threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    client.close()
    assert results == [f"S{i}" for i in range(8)]
    tasks = batcher.stats["tasks"] - before.get("tasks", 0)
    batches = batcher.stats["batches"] - before.get("batches", 0)
    assert tasks == 8
    assert batches < 8, f"8 concurrent requests ran as {batches} batches"


# --- a slow fake model (no TensorFlow) for cancellation and shutdown --------

def _slow_loader(delay, gate=None):
    """Reverses strings after `delay` s; "block" waits for `gate` first."""
    signature = meta_graph_pb2.SignatureDef(
        method_name="tensorflow/serving/predict")
    text = signature.inputs["text"]
    text.name, text.dtype = "text:0", types_pb2.DT_STRING
    text.tensor_shape.dim.add(size=-1)
    out = signature.outputs["translations"]
    out.name, out.dtype = "out:0", types_pb2.DT_STRING
    out.tensor_shape.dim.add(size=-1)

    def run(inputs):
        if gate is not None and b"block" in list(inputs["text"]):
            gate.wait(10)
        time.sleep(delay)
        return {"translations": np.array([s[::-1] for s in inputs["text"]],
                                         dtype=object)}

    def load(path):
        return LoadedModel({"serving_default": signature},
                           {"serving_default": run})
    return load


@pytest.fixture
def slow_base(tmp_path):
    version = tmp_path / "slow" / "1"
    version.mkdir(parents=True)
    (version / "saved_model.pb").write_bytes(b"")
    return str(tmp_path / "slow")


def test_cancelled_request_leaves_server_healthy(start_server, slow_base):
    server = start_server({"slow": slow_base}, load_fn=_slow_loader(0.3))
    with grpc.insecure_channel(server.target) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        futures = [stub.Predict.future(predict_request(name="slow"), timeout=10)
                   for _ in range(3)]
        time.sleep(0.1)  # the model is running them
        for f in futures:
            assert f.cancel()
            with pytest.raises(grpc.FutureCancelledError):
                f.result()
        response = stub.Predict(predict_request(name="slow"), timeout=10)
        assert response.outputs["translations"].string_val == [b"olleh"]
    server.stop(grace=2)


def test_cancelled_queued_requests_are_dropped(start_server, slow_base):
    gate = threading.Event()
    server = start_server(
        {"slow": slow_base},
        BatchingParameters(max_batch_size=4, batch_timeout_micros=1000,
                           num_batch_threads=1),
        load_fn=_slow_loader(0.0, gate))
    (_, _, _, batcher), = server.manager.batchers()
    with grpc.insecure_channel(server.target) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        blocker = stub.Predict.future(predict_request(
            tensor_codec.string_tensor(["block"]), name="slow"), timeout=20)
        deadline = time.monotonic() + 10
        # The blocker's batch has left the queue: the only batch thread is
        # busy with it (until then, later requests could join that batch).
        while batcher.stats["tasks"] < 1 or batcher.queue_state()["batches"]:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        futures = [stub.Predict.future(predict_request(name="slow"), timeout=20)
                   for _ in range(3)]
        while batcher.stats["tasks"] < 4:  # queued behind the blocker
            assert time.monotonic() < deadline
            time.sleep(0.01)
        for f in futures:
            assert f.cancel()
        while batcher.queue_state()["cancelled"] < 3:  # the server has seen it
            assert time.monotonic() < deadline
            time.sleep(0.01)
        gate.set()
        assert blocker.result().outputs["translations"].string_val == [b"kcolb"]
        response = stub.Predict(predict_request(name="slow"), timeout=10)
        assert response.outputs["translations"].string_val == [b"olleh"]
    assert batcher.stats["cancelled"] == 3  # dropped before running
    server.stop(grace=2)


def test_graceful_shutdown_drains_in_flight(start_server, slow_base):
    server = start_server({"slow": slow_base}, load_fn=_slow_loader(0.5))
    with grpc.insecure_channel(server.target) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        in_flight = stub.Predict.future(predict_request(name="slow"),
                                        timeout=10)
        time.sleep(0.15)
        stopper = threading.Thread(target=server.stop, args=(5,))
        stopper.start()
        response = in_flight.result()
        assert response.outputs["translations"].string_val == [b"olleh"]
        stopper.join(10)
        assert server.wait(0)
        with pytest.raises(grpc.RpcError) as info:
            stub.Predict(predict_request(name="slow"), timeout=5)
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE
