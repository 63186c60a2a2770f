"""The standard gRPC health service (grpc.health.v1) of the local server."""

import threading
import time

import grpc
import numpy as np
import pytest
from grpc_health.v1 import health_pb2
from grpc_health.v1 import health_pb2_grpc

from gnmt_tf.serving.model_manager import LoadedModel
from gnmt_tf.serving.protos import meta_graph_pb2
from gnmt_tf.serving.protos import types_pb2

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


def _check(stub, service):
    return stub.Check(health_pb2.HealthCheckRequest(service=service),
                      timeout=10).status


def test_server_and_each_model_are_serving(any_server):
    with grpc.insecure_channel(any_server.target) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        assert _check(stub, "") == SERVING
        assert _check(stub, "toy") == SERVING
        with pytest.raises(grpc.RpcError) as info:
            _check(stub, "nope")
        assert info.value.code() == grpc.StatusCode.NOT_FOUND


def _echo_loader(path):
    """A fake model (no TensorFlow) that echoes `text`."""
    signature = meta_graph_pb2.SignatureDef()
    for infos, key in ((signature.inputs, "text"),
                       (signature.outputs, "translations")):
        infos[key].dtype = types_pb2.DT_STRING
        infos[key].tensor_shape.dim.add(size=-1)
    return LoadedModel({"serving_default": signature},
                       {"serving_default": lambda inputs: {
                           "translations": np.asarray(inputs["text"])}})


def _wait_for(stub, service, status, timeout=20.0):
    deadline = time.monotonic() + timeout
    while _check(stub, service) != status:
        assert time.monotonic() < deadline, f"{service!r} never {status}"
        time.sleep(0.05)


def test_not_serving_until_loaded_and_after_shutdown(start_server, tmp_path):
    (tmp_path / "a" / "1").mkdir(parents=True)
    (tmp_path / "a" / "1" / "saved_model.pb").write_bytes(b"")
    (tmp_path / "b").mkdir()  # no version yet
    server = start_server({"a": str(tmp_path / "a"),
                           "b": str(tmp_path / "b")},
                          load_fn=_echo_loader, poll_interval_s=0.05)
    with grpc.insecure_channel(server.target) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        assert _check(stub, "a") == SERVING
        assert _check(stub, "b") == NOT_SERVING
        assert _check(stub, "") == NOT_SERVING  # not every model is loaded
        (tmp_path / "b" / "1").mkdir()
        (tmp_path / "b" / "1" / "saved_model.pb").write_bytes(b"")
        _wait_for(stub, "b", SERVING)
        assert _check(stub, "") == SERVING

        watch = stub.Watch(health_pb2.HealthCheckRequest(service=""),
                           timeout=20)
        assert next(watch).status == SERVING
        stopper = threading.Thread(target=server.stop, args=(1,))
        stopper.start()
        assert next(watch).status == NOT_SERVING  # told before it goes
        watch.cancel()
        stopper.join(20)
    assert server.wait(0)
