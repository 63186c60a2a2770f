"""Fixtures for the serving tests: toy SavedModels and in-process servers.

The toy model "toy" maps `text` to `translations` = upper-cased text (version
2: prefixed with "v2 ") and `scores` = its length in bytes. Version 1 also has
a `with_options` signature with a scalar `repeat` input, a
`translate_with_options` one with the GNMT export's scalar search options
(`beam_size`, `length_penalty`, `coverage_penalty`; scores = length x
length_penalty), a `checked` signature
that behaves like the GNMT export on bad input (an in-graph
`tf.debugging.Assert` on the length, at most 50 bytes, and a failure on an
empty batch), and TF Serving warm-up requests. Servers bind 127.0.0.1 on a
free port and are limited to 200-byte sentences and 64 rows; the shared ones
(`batching_server`, `plain_server`) also serve the REST API on a free port,
with the Prometheus metrics at `METRICS_PATH`.
"""

import shutil
import threading

import pytest

from gnmt_tf.serving.batching_config import BatchingParameters
from gnmt_tf.serving.model_manager import ModelManager
from gnmt_tf.serving.model_manager import VersionPolicy
from gnmt_tf.serving.request_runner import DEFAULT_MAX_ROWS_PER_RUN
from gnmt_tf.serving.server import ModelServer
from gnmt_tf.serving.validation import RequestLimits

METRICS_PATH = "/monitoring/prometheus/metrics"


def _save_toy_model(path, prefix="", options=False):
    import tensorflow as tf

    class Toy(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.string,
                                                    name="text")])
        def serve(self, text):
            upper = tf.strings.upper(text)
            if prefix:
                upper = tf.strings.join([prefix, upper])
            return {"translations": upper,
                    "scores": tf.cast(tf.strings.length(text), tf.float32)}

        @tf.function(input_signature=[
            tf.TensorSpec([None], tf.string, name="text"),
            tf.TensorSpec([], tf.int32, name="repeat")])
        def with_options(self, text, repeat):
            tiled = tf.tile(tf.strings.upper(text)[:, None], [1, repeat])
            return {"translations": tf.strings.reduce_join(tiled, axis=1)}

        @tf.function(input_signature=[
            tf.TensorSpec([None], tf.string, name="text"),
            tf.TensorSpec([], tf.int32, name="beam_size"),
            tf.TensorSpec([], tf.float32, name="length_penalty"),
            tf.TensorSpec([], tf.float32, name="coverage_penalty")])
        def translate_with_options(self, text, beam_size, length_penalty,
                                   coverage_penalty):
            length = tf.cast(tf.strings.length(text), tf.float32)
            return {"translations": tf.strings.upper(text),
                    "scores": length * length_penalty}

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string,
                                                    name="text")])
        def checked(self, text):
            longest = tf.reduce_max(tf.strings.length(text))
            check = tf.debugging.Assert(
                longest <= 50, ["input too long: the limit is 50 bytes, got",
                                longest, "(split it into sentences)"])
            with tf.control_dependencies([check]):
                upper = tf.strings.upper(text)
            # Reads row 0 (adding 0), so an empty batch fails as GNMT's
            # encoder does.
            first = tf.strings.length(text[0])
            scores = tf.strings.length(text) + tf.minimum(first, 0)
            return {"translations": upper,
                    "scores": tf.cast(scores, tf.float32)}

    module = Toy()
    signatures = {"serving_default": module.serve}
    if options:
        signatures["with_options"] = module.with_options
        signatures["translate_with_options"] = module.translate_with_options
        signatures["checked"] = module.checked
    tf.saved_model.save(module, path, signatures=signatures)
    if options:
        write_warmup(path, [("serving_default", {"text": [b"warm"]}),
                            ("with_options", {"text": [b"warm"], "repeat": 2})])
    return path


def write_warmup(path, requests):
    """TF Serving warm-up file: `requests` = [(signature, {key: value})]."""
    import os

    import tensorflow as tf
    from tensorflow_serving.apis import prediction_log_pb2

    from gnmt_tf.serving.model_manager import WARMUP_FILE

    os.makedirs(os.path.dirname(os.path.join(path, WARMUP_FILE)),
                exist_ok=True)
    with tf.io.TFRecordWriter(os.path.join(path, WARMUP_FILE)) as writer:
        for signature, inputs in requests:
            entry = prediction_log_pb2.PredictionLog()
            request = entry.predict_log.request
            request.model_spec.name = "toy"
            request.model_spec.signature_name = signature
            for key, value in inputs.items():
                request.inputs[key].CopyFrom(tf.make_tensor_proto(value))
            writer.write(entry.SerializeToString())


@pytest.fixture(scope="session")
def toy_versions(tmp_path_factory):
    """`{1: path, 2: path}` of the toy SavedModel's two versions."""
    root = tmp_path_factory.mktemp("toy_exports")
    return {1: _save_toy_model(str(root / "1"), options=True),
            2: _save_toy_model(str(root / "2"), prefix="v2 ")}


@pytest.fixture(scope="session")
def warmup_writer():
    """`write_warmup(saved_model_path, [(signature, {key: value})])`."""
    return write_warmup


@pytest.fixture(scope="session")
def make_base(tmp_path_factory, toy_versions):
    """`make_base(versions=(1,))` -> a fresh `BASE/toy` holding those versions."""
    def make(versions=(1,)):
        base = tmp_path_factory.mktemp("models") / "toy"
        base.mkdir()
        for v in versions:
            shutil.copytree(toy_versions[v], base / str(v))
        return str(base)
    return make


@pytest.fixture(scope="session")
def start_server():
    """`start_server(models, batching=None, limits=..., max_rows_per_run=32,
    rest=False, rest_timeout_s=30.0, **manager_kwargs)` -> a started
    `ModelServer` (with `rest`, also the REST API and the metrics at
    `METRICS_PATH`); all are stopped at the end of the session."""
    servers = []

    def start(models, batching=None, poll_interval_s=0.0, load_fn=None,
              limits=RequestLimits(max_string_bytes=200, max_rows=64),
              max_rows_per_run=DEFAULT_MAX_ROWS_PER_RUN, rest=False,
              rest_timeout_s=30.0, **kwargs):
        if load_fn is not None:
            kwargs["load_fn"] = load_fn
        manager = ModelManager(models, poll_interval_s=poll_interval_s,
                               batching=batching, **kwargs)
        server = ModelServer(manager, port=0, num_threads=16, limits=limits,
                             max_rows_per_run=max_rows_per_run,
                             rest_port=0 if rest else None,
                             rest_threads=8, rest_timeout_s=rest_timeout_s,
                             monitoring_path=METRICS_PATH if rest else None)
        server.start()
        servers.append(server)
        return server

    yield start
    # All at once: a stop can wait out its grace period (an idle keep-alive
    # connection of the REST API), and one after another these took ~20 s.
    stops = [threading.Thread(target=server.stop, kwargs={"grace": 2})
             for server in servers]
    for stop in stops:
        stop.start()
    for stop in stops:
        stop.join()


@pytest.fixture(scope="session")
def batching_server(start_server, make_base):
    """"toy" version 1 with dynamic batching (8 rows, 50 ms, 1 thread)."""
    params = BatchingParameters(max_batch_size=8, batch_timeout_micros=50_000,
                                max_enqueued_batches=64, num_batch_threads=1)
    return start_server({"toy": make_base()}, params, rest=True)


@pytest.fixture(scope="session")
def small_queue_server(start_server, make_base):
    """"toy" version 1 with batching whose queue holds 4 batches of 2 rows (8
    rows in all) while a request may have 64: the defaults' 3,200 vs 4,096,
    in small."""
    params = BatchingParameters(max_batch_size=2, batch_timeout_micros=1000,
                                max_enqueued_batches=4, num_batch_threads=1)
    return start_server({"toy": make_base()}, params)


@pytest.fixture(scope="session")
def plain_server(start_server, make_base):
    """"toy" versions 1 and 2 (policy "all"), no batching."""
    return start_server({"toy": make_base((1, 2))},
                        policy=VersionPolicy.parse("all"), rest=True)


@pytest.fixture(params=["batching", "plain"])
def any_server(request):
    """Each test using it runs against both servers."""
    return request.getfixturevalue(f"{request.param}_server")


@pytest.fixture(scope="session")
def http():
    """`http(url, body=None, method=None)` -> `(status, content)`: a real HTTP
    request (urllib, no proxy); `body` is sent as JSON (bytes as they are),
    a JSON answer is parsed, any other is text."""
    import json
    import urllib.error
    import urllib.request

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def call(url, body=None, method=None, timeout=30):
        data = body if body is None or isinstance(body, bytes) \
            else json.dumps(body).encode()
        request = urllib.request.Request(
            url, data=data, method=method or ("GET" if data is None
                                              else "POST"),
            headers={} if data is None else
            {"Content-Type": "application/json"})
        try:
            with opener.open(request, timeout=timeout) as response:
                status, headers = response.status, response.headers
                text = response.read()
        except urllib.error.HTTPError as e:
            status, headers, text = e.code, e.headers, e.read()
        if headers.get_content_type() == "application/json":
            return status, json.loads(text)
        return status, text.decode("utf-8")
    return call
