"""Fixtures of the gateway tests: the tiny GNMT model in process and its
SavedModel (the model-family harness's "gnmt" export, which has the
`translate_with_alignment` signature) behind a local gRPC server.

Both search alike (beam 3, alpha 0.6, beta 0.2: the harness export's
`serving_default` options), so their results can be compared.
"""

import pytest

SEARCH = dict(beam_size=3, length_penalty=0.6, coverage_penalty=0.2)
MODEL_NAME = "gnmt"


@pytest.fixture(scope="session")
def search():
    """The search of both backends (`SearchOptions` keywords)."""
    return dict(SEARCH)


@pytest.fixture(scope="session")
def model_backend(tiny_model_dir):
    """`gnmt_tf.gateway.backends.ModelBackend` of the tiny en->de model."""
    from gnmt_tf.gateway.backends import ModelBackend
    from gnmt_tf.translator import SearchOptions

    return ModelBackend.from_model_dir(tiny_model_dir, SearchOptions(**SEARCH))


@pytest.fixture(scope="session")
def grpc_server(model_families):
    """A local `gnmt-tf serve` server (gRPC on a free port) serving the tiny
    model's SavedModel as "gnmt"."""
    from gnmt_tf.serving.client import TranslationClient
    from gnmt_tf.serving.model_manager import ModelManager
    from gnmt_tf.serving.server import ModelServer

    export = model_families("gnmt").savedmodel
    manager = ModelManager({MODEL_NAME: str(export.parent)},
                           poll_interval_s=0.0)
    server = ModelServer(manager, port=0, num_threads=8)
    server.start()
    with TranslationClient(server.target, MODEL_NAME) as client:
        client.wait_until_available(timeout=120)
    yield server
    server.stop(grace=2)
