"""TensorFlow Serving's gRPC protos, importable without loading TensorFlow.

The `tensorflow-serving-api` wheel ships `tensorflow_serving/apis/*_pb2.py`,
which import `tensorflow.core.framework.tensor_pb2` and friends. Those are plain
generated protobuf modules, but importing them the normal way first executes
`tensorflow/__init__.py`, i.e. all of TensorFlow (~3 s, hundreds of MB). So when
TensorFlow is not imported yet, this module puts a bare package object named
`tensorflow` (its `__path__` pointing at the installed TensorFlow) in
`sys.modules` for the duration of the proto imports and removes it afterwards.
Only the `tensorflow.core.*_pb2` modules stay loaded; a later `import tensorflow`
runs the real package initialiser and reuses them, so message classes are shared
(`tf.make_tensor_proto(...)` returns the same `TensorProto` class as here).

If TensorFlow is already imported, the protos are imported normally.

Exports: `predict_pb2`, `get_model_metadata_pb2`, `get_model_status_pb2`,
`model_pb2`, `prediction_service_pb2_grpc`, `model_service_pb2_grpc`,
`model_server_config_pb2`, `tensor_pb2`, `tensor_shape_pb2`, `types_pb2`.
"""

import importlib
import importlib.util
import sys
import threading
import types

_LOCK = threading.Lock()

_MODULES = {
    "predict_pb2": "tensorflow_serving.apis.predict_pb2",
    "get_model_metadata_pb2": "tensorflow_serving.apis.get_model_metadata_pb2",
    "get_model_status_pb2": "tensorflow_serving.apis.get_model_status_pb2",
    "model_pb2": "tensorflow_serving.apis.model_pb2",
    "prediction_service_pb2_grpc":
        "tensorflow_serving.apis.prediction_service_pb2_grpc",
    "model_service_pb2_grpc": "tensorflow_serving.apis.model_service_pb2_grpc",
    "model_server_config_pb2":
        "tensorflow_serving.config.model_server_config_pb2",
    "tensor_pb2": "tensorflow.core.framework.tensor_pb2",
    "tensor_shape_pb2": "tensorflow.core.framework.tensor_shape_pb2",
    "types_pb2": "tensorflow.core.framework.types_pb2",
    "meta_graph_pb2": "tensorflow.core.protobuf.meta_graph_pb2",
    "saved_model_pb2": "tensorflow.core.protobuf.saved_model_pb2",
}


def _import_all():
    return {alias: importlib.import_module(name)
            for alias, name in _MODULES.items()}


def _import_without_tensorflow():
    with _LOCK:
        if "tensorflow" in sys.modules:
            return _import_all()
        spec = importlib.util.find_spec("tensorflow")
        if spec is None or not spec.submodule_search_locations:
            raise ImportError("the tensorflow package (for its protos) is missing")
        stub = types.ModuleType("tensorflow")
        stub.__path__ = list(spec.submodule_search_locations)
        sys.modules["tensorflow"] = stub
        try:
            return _import_all()
        finally:
            # Let a later `import tensorflow` run the real initialiser.
            if sys.modules.get("tensorflow") is stub:
                del sys.modules["tensorflow"]


globals().update(_import_without_tensorflow())

__all__ = sorted(_MODULES)
