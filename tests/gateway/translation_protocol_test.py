"""One translator protocol (`gnmt_tf.translation.TranslationBackend`): the
in-process `Translator`, the TFLite host translator, the gRPC client and the
gateway's two backends take the same call and give the same results, of
one result type."""

import pytest

MODEL_NAME = "gnmt"  # the name tests/gateway/conftest.py serves it under

SENTENCES = ["A big dog runs.", "   ", "A small cat eats.",
             "A young girl plays."]


@pytest.fixture(scope="module")
def backends(model_families, model_backend, grpc_server):
    from gnmt_tf.gateway.backends import ServerBackend
    from gnmt_tf.serving.client import TranslationClient

    family = model_families("gnmt")
    client = TranslationClient(grpc_server.target, MODEL_NAME)
    server_backend = ServerBackend.connect(grpc_server.target, MODEL_NAME,
                                           ["en", "de"])
    yield {"translator": family.translator, "tflite": family.tflite,
           "client": client, "model_backend": model_backend,
           "server_backend": server_backend}
    client.close()
    server_backend.close()


@pytest.mark.parametrize("beam_size", [1, 3])  # the export's beam sizes
def test_every_backend_answers_one_protocol(backends, beam_size):
    from gnmt_tf.translation import Hypothesis, SearchOptions
    from gnmt_tf.translation import TranslationBackend

    options = SearchOptions(beam_size=beam_size, length_penalty=0.6,
                            coverage_penalty=0.2)
    expected = backends["translator"].translate_nbest(SENTENCES, options)
    texts = [h[0].text for h in expected]
    assert texts[1] == "" and all(texts[i] for i in (0, 2, 3))
    for name, backend in backends.items():
        assert isinstance(backend, TranslationBackend), name
        got = backend.translate_nbest(SENTENCES, options)
        assert all(type(h) is Hypothesis for hyps in got for h in hyps), name
        assert [h[0].text for h in got] == texts, name
        # float32 everywhere, other kernels (TFLite, the server's graph):
        # a few ulps a term over some 10-20 terms, as in the harness.
        assert [h[0].score for h in got] == pytest.approx(
            [h[0].score for h in expected], abs=1e-3), name
        # The same search as keywords.
        assert backend.translate(SENTENCES, beam_size=beam_size,
                                 length_penalty=0.6,
                                 coverage_penalty=0.2) == texts, name


def test_what_a_backend_cannot_search_is_refused(backends):
    """A served model returns its best hypothesis, searched by beam: more
    hypotheses or another decoder are one clear error, not a quiet
    default."""
    from gnmt_tf.translation import SearchOptions

    for name in ("client", "server_backend"):
        with pytest.raises(ValueError, match="num_hypotheses"):
            backends[name].translate_nbest(
                SENTENCES, SearchOptions(beam_size=3, num_hypotheses=2))
    with pytest.raises(ValueError, match="decoder"):
        backends["tflite"].translate(SENTENCES, decoder="dfs")
    with pytest.raises(TypeError, match="SearchOptions"):
        backends["translator"].translate(SENTENCES, {"beam_size": 2})
