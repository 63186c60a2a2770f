"""TF Serving's REST JSON <-> tensors (no server, no TensorFlow)."""

import base64

import numpy as np
import pytest

from gnmt_tf.serving import json_codec
from gnmt_tf.serving import tensor_codec
from gnmt_tf.serving.protos import meta_graph_pb2
from gnmt_tf.serving.protos import types_pb2
from gnmt_tf.serving.validation import InvalidRequest


def _signature(**inputs):
    """A SignatureDef with `name=(dtype, dims)` inputs."""
    signature = meta_graph_pb2.SignatureDef()
    for name, (dtype, dims) in inputs.items():
        signature.inputs[name].dtype = dtype
        for d in dims:
            signature.inputs[name].tensor_shape.dim.add(size=d)
    return signature


TEXT = _signature(text=(types_pb2.DT_STRING, [-1]))
OPTIONS = _signature(text=(types_pb2.DT_STRING, [-1]),
                     beam=(types_pb2.DT_INT32, []),
                     alpha=(types_pb2.DT_FLOAT, []))


def _arrays(body, signature):
    request = json_codec.parse_predict_request(body)
    return {k: tensor_codec.to_numpy(v) for k, v in
            json_codec.request_tensors(request, signature).items()}


def test_row_and_columnar_requests():
    rows = _arrays(b'{"instances": ["a", "b\\u00e9"]}', TEXT)
    assert list(rows["text"]) == [b"a", "bé".encode()]
    objects = _arrays(b'{"instances": [{"text": "a"}, {"text": "b"}]}', TEXT)
    assert list(objects["text"]) == [b"a", b"b"]
    columns = _arrays(
        b'{"inputs": {"text": ["a"], "beam": 4, "alpha": 0.6}}', OPTIONS)
    assert columns["beam"].dtype == np.int32 and columns["beam"] == 4
    assert columns["alpha"].dtype == np.float32 and columns["alpha"].shape == ()
    single = _arrays(b'{"inputs": [["a", "b"], ["c", "d"]]}',
                     _signature(text=(types_pb2.DT_STRING, [-1, 2])))
    assert single["text"].shape == (2, 2)
    data = base64.b64encode(b"\xff\x00").decode()
    raw = _arrays(('{"instances": [{"b64": "%s"}]}' % data).encode(), TEXT)
    assert list(raw["text"]) == [b"\xff\x00"]


@pytest.mark.parametrize("body, signature, message", [
    (b"", TEXT, "JSON parse error"),
    (b"[1]", TEXT, "must be a JSON object"),
    (b'{"instances": [], "inputs": []}', TEXT, "one of 'instances'"),
    (b'{"instances": {"text": "a"}}', TEXT, "must be a list"),
    (b'{"signature_name": 3, "inputs": []}', TEXT, "must be a string"),
    (b'{"instances": ["a", {"text": "b"}]}', TEXT, "element 1 is an object"),
    (b'{"instances": [{"text": "a"}, {"txt": "b"}]}', TEXT,
     "element 1 must be an object with the keys ['text']"),
    (b'{"instances": ["a"]}', OPTIONS, "several inputs"),
    (b'{"inputs": ["a"]}', OPTIONS, "several inputs"),
    (b'{"inputs": {"text": ["a"], "beam": 2.5, "alpha": 1}}', OPTIONS,
     "integers are expected (DT_INT32)"),
    (b'{"inputs": {"text": ["a"], "beam": true, "alpha": 1}}', OPTIONS,
     "numbers are expected"),
    (b'{"inputs": {"text": ["a"], "beam": 9999999999, "alpha": 1}}',
     OPTIONS, "out of the range of DT_INT32"),
    (b'{"inputs": {"text": [null], "beam": 1, "alpha": 1}}', OPTIONS,
     "holds null where strings"),
    (b'{"inputs": [["a"], ["b", "c"]]}', TEXT, "ragged"),
])
def test_bad_requests(body, signature, message):
    with pytest.raises(InvalidRequest) as info:
        _arrays(body, signature)
    assert message in str(info.value)


def test_response_formats():
    outputs = {"translations": np.array([b"A", "É".encode()], object),
               "scores": np.array([0.1, 2.0], np.float32)}
    assert json_codec.predict_response(outputs, row_format=True) == {
        "predictions": [{"translations": "A", "scores": 0.1},
                        {"translations": "É", "scores": 2.0}]}
    assert json_codec.predict_response(outputs, row_format=False) == {
        "outputs": {"translations": ["A", "É"], "scores": [0.1, 2.0]}}
    one = {"ids": np.array([[1, 2], [3, 4]], np.int64)}
    assert json_codec.predict_response(one, row_format=True) == {
        "predictions": [[1, 2], [3, 4]]}
    raw = {"audio_bytes": np.array([b"\xff"], object)}
    assert json_codec.predict_response(raw, row_format=False) == {
        "outputs": [{"b64": base64.b64encode(b"\xff").decode()}]}


def test_row_format_needs_batch_major_outputs():
    with pytest.raises(InvalidRequest, match="is a scalar"):
        json_codec.predict_response({"n": np.array(3)}, row_format=True)
    with pytest.raises(InvalidRequest, match="different numbers of rows"):
        json_codec.predict_response({"a": np.zeros(2), "b": np.zeros(3)},
                                    row_format=True)
    assert json_codec.predict_response({"n": np.array(3)},
                                       row_format=False) == {"outputs": 3}
