"""Issue 18: an expired request stops computing, and no model call is larger
than `max_rows_per_run` rows (no server-side batching)."""

import threading
import time

import grpc
import numpy as np
import pytest

from gnmt_tf.serving import tensor_codec
from gnmt_tf.serving.model_manager import LoadedModel
from gnmt_tf.serving.protos import meta_graph_pb2
from gnmt_tf.serving.protos import predict_pb2
from gnmt_tf.serving.protos import prediction_service_pb2_grpc
from gnmt_tf.serving.protos import types_pb2

SECONDS_PER_ROW = 0.05


class BusyModel:
    """A fake model as busy as a CPU-bound one: one call at a time, 50 ms a
    row; it records the rows of each call when the call is done."""

    def __init__(self):
        self.lock = threading.Lock()
        self.calls = []

    def run(self, inputs):
        with self.lock:
            time.sleep(SECONDS_PER_ROW * len(inputs["text"]))
            self.calls.append(len(inputs["text"]))
        return {"translations": inputs["text"]}

    def load(self, path):
        signature = meta_graph_pb2.SignatureDef()
        for infos in (signature.inputs, signature.outputs):
            key = "text" if infos is signature.inputs else "translations"
            infos[key].dtype = types_pb2.DT_STRING
            infos[key].tensor_shape.dim.add(size=-1)
        return LoadedModel({"serving_default": signature},
                           {"serving_default": self.run})


@pytest.fixture
def busy_server(start_server, tmp_path):
    version = tmp_path / "busy" / "1"
    version.mkdir(parents=True)
    (version / "saved_model.pb").write_bytes(b"")
    model = BusyModel()
    server = start_server({"busy": str(tmp_path / "busy")},
                          load_fn=model.load, max_rows_per_run=4)
    yield server, model
    server.stop(grace=1)


def _request(rows):
    request = predict_pb2.PredictRequest()
    request.model_spec.name = "busy"
    request.inputs["text"].CopyFrom(
        tensor_codec.string_tensor([f"s{i}" for i in range(rows)]))
    return request


def test_expired_request_stops_and_the_next_one_is_not_kept_waiting(
        busy_server):
    server, model = busy_server
    with grpc.insecure_channel(server.target) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        start = time.monotonic()
        with pytest.raises(grpc.RpcError) as info:  # 40 rows need 2 s
            stub.Predict(_request(40), timeout=0.5)
        assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        sent = time.monotonic()
        response = stub.Predict(_request(1), timeout=10)
        waited = time.monotonic() - sent
        assert response.outputs["translations"].string_val == [b"s0"]
    # It waited for one 4-row chunk at most, not the 1.5 s left of the 40.
    assert waited < 1.0, f"the one-row request waited {waited:.2f} s"
    time.sleep(max(0.0, start + 2.5 - time.monotonic()))
    big = model.calls[:-1]  # the last call is the one-row request
    assert sum(big) < 40, f"the expired request ran on: {model.calls}"
    assert max(model.calls) <= 4


def test_large_request_runs_in_bounded_chunks(busy_server):
    server, model = busy_server
    with grpc.insecure_channel(server.target) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        response = stub.Predict(_request(10), timeout=10)
    assert list(response.outputs["translations"].string_val) == [
        f"s{i}".encode() for i in range(10)]
    assert model.calls == [4, 4, 2]
    assert np.sum(model.calls) == 10
