"""Property-based tests of `Predict` (Hypothesis): random rows, bytes and
Unicode (invalid UTF-8, blanks, over-long strings, too many rows, shapes that
disagree with their values) sent through real gRPC clients to the real servers
of conftest (no batching, batching, batching with a queue smaller than the
row limit).

Properties: each request gets exactly one output per input row or a named
status among `EXPECTED_CODES` with a one-line message; a well-formed request
is answered correctly; and the server still answers a normal request
afterwards.

`test_predict_properties` runs 40 examples per server (a few seconds);
`test_predict_properties_long` (slow: `--run-slow`) runs 1,000.
"""

import types

import grpc
import pytest
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from gnmt_tf.serving import tensor_codec
from gnmt_tf.serving.client import TranslationClient
from gnmt_tf.serving.client import TranslationError
from gnmt_tf.serving.protos import predict_pb2
from gnmt_tf.serving.protos import prediction_service_pb2_grpc

EXPECTED_CODES = frozenset({
    grpc.StatusCode.INVALID_ARGUMENT,    # bad input, over a limit
    grpc.StatusCode.RESOURCE_EXHAUSTED,  # too many concurrent RPCs
    grpc.StatusCode.UNAVAILABLE,         # batching queue full right now
})
MAX_ROWS, MAX_BYTES, CHECKED_MAX_BYTES = 64, 200, 50  # conftest's limits


@pytest.fixture(scope="module",
                params=["plain_server", "batching_server",
                        "small_queue_server"])
def server(request):
    """Each server of conftest with a raw stub and a `TranslationClient`,
    shared by all examples."""
    server = request.getfixturevalue(request.param)
    channel = grpc.insecure_channel(server.target)
    client = TranslationClient(server.target, "toy", version=1, timeout=30,
                               max_retries=0)
    yield types.SimpleNamespace(
        manager=server.manager, client=client,
        stub=prediction_service_pb2_grpc.PredictionServiceStub(channel))
    client.close()
    channel.close()


def _utf8(text):
    return text.encode("utf-8")


element = st.one_of(
    st.text(max_size=30).map(_utf8),                       # any Unicode
    st.binary(max_size=30),                                # often not UTF-8
    st.text(alphabet="ab \t", min_size=1, max_size=60).map(_utf8),
    st.integers(CHECKED_MAX_BYTES - 2, MAX_BYTES + 3).map(lambda n: b"x" * n),
)
case = st.fixed_dictionaries({
    "texts": st.lists(element, max_size=MAX_ROWS + 8),
    "signature": st.sampled_from(["", "checked"]),
    "via": st.sampled_from(["client", "stub"]),
    "shape_delta": st.sampled_from([0, 0, 0, 1, -1]),
})


def _well_formed(texts, signature):
    """Whether every check (server and model) should pass."""
    limit = CHECKED_MAX_BYTES if signature == "checked" else MAX_BYTES
    for t in texts:
        try:
            decoded = t.decode("utf-8")
        except UnicodeDecodeError:
            return False
        if not decoded.strip() or len(t) > limit:
            return False
    return len(texts) <= MAX_ROWS


def _send(server, texts, signature, via, shape_delta):
    """`(translations, None, None)` or `(None, status code, message)`."""
    if via == "client":
        server.client.signature = signature or "serving_default"
        try:
            translations, scores, _ = server.client.predict(texts)
        except TranslationError as e:
            return None, e.code, str(e)
        assert scores is not None and len(scores) == len(translations)
        return [t.encode("utf-8") for t in translations], None, None
    request = predict_pb2.PredictRequest()
    request.model_spec.name = "toy"
    request.model_spec.version.value = 1
    request.model_spec.signature_name = signature
    request.inputs["text"].CopyFrom(tensor_codec.string_tensor(
        texts, [max(0, len(texts) + shape_delta)]))
    try:
        response = server.stub.Predict(request, timeout=30)
    except grpc.RpcError as e:
        return None, e.code(), e.details()
    outputs = response.outputs
    assert len(outputs["scores"].float_val) == len(
        outputs["translations"].string_val)
    return list(outputs["translations"].string_val), None, None


def _check(server, example):
    texts, signature = example["texts"], example["signature"]
    via = example["via"]
    delta = example["shape_delta"] if via == "stub" else 0
    translations, code, message = _send(server, texts, signature, via, delta)
    if code is None:
        assert delta == 0 or not texts and delta < 0
        assert len(translations) == len(texts)  # one output per row
        assert translations == [t.upper() for t in texts]  # ASCII upper
    else:
        assert code in EXPECTED_CODES, f"{code} for {len(texts)} rows"
        assert message and "\n" not in message, message
        small_queue = server.manager.batching and (
            server.manager.batching.max_enqueued_batches
            * server.manager.batching.max_batch_size < len(texts))
        if delta == 0 and _well_formed(texts, signature) and not small_queue:
            pytest.fail(f"a well-formed request failed with {code}")
    # and the server is still fine
    server.client.signature = "serving_default"
    assert server.client.predict(["still here"])[0] == ["STILL HERE"]


FAST = settings(max_examples=40, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(example=case)
def test_predict_properties(server, example):
    _check(server, example)


@pytest.mark.slow
@settings(FAST, max_examples=1000)
@given(example=case)
def test_predict_properties_long(server, example):
    _check(server, example)
