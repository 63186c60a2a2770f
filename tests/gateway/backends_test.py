"""The pipeline backends: a model in process and a served model, each
returning `SentenceResult`s with text, score, subwords and alignment."""

import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from gnmt_tf.gateway.backends import ALIGNMENT_OUTPUTS
from gnmt_tf.gateway.backends import ALIGNMENT_SIGNATURE
from gnmt_tf.gateway.backends import ServerBackend

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
SENTENCES = ["A big dog runs.", "   ", "A small cat eats.",
             "A young girl plays and a man sleeps."]


def _forced_attention(model, source_ids, target_ids):
    """The model's cross-attention of one teacher-forced pair, eagerly."""
    import tensorflow as tf

    config = model.config
    features = {
        "source_ids": tf.constant([source_ids + [config.eos_id]], tf.int32),
        "target_in_ids": tf.constant([[config.bos_id] + target_ids],
                                     tf.int32)}
    _, attention = model(features, return_attention=True)
    return attention.numpy()[0]


def test_constants_match_the_export():
    from gnmt_tf.export.savedmodel import ALIGNMENT_SIGNATURE as signature
    from gnmt_tf.aligned_search import OUTPUTS

    assert ALIGNMENT_SIGNATURE == signature
    assert ALIGNMENT_OUTPUTS == OUTPUTS


def test_model_backend_results(model_backend, search):
    from gnmt_tf.translator import SearchOptions

    translator = model_backend.translator
    subwords = translator.subwords
    assert model_backend.languages == ("de", "en")
    results = model_backend(SENTENCES, "en", "de", ())
    best = translator.translate_nbest(SENTENCES, SearchOptions(**search))
    assert [r.text for r in results] == [h[0].text for h in best]
    assert results[1].text == "" and results[1].target_pieces == ()
    for sentence, result in zip(SENTENCES, results):
        if not sentence.strip():
            continue
        assert result.source_pieces == tuple(subwords.pieces(sentence))
        assert "".join(result.target_pieces).replace("\u2581", " ").strip() \
            == result.text
        assert result.alignment.shape == (len(result.target_pieces),
                                          len(result.source_pieces))
        # The cross-attention of a teacher-forced pass over the output,
        # without the end token's row and column.
        target_ids = [subwords._sp.PieceToId(p) for p in result.target_pieces]
        attention = _forced_attention(translator.model,
                                      subwords.encode([sentence])[0],
                                      target_ids)
        np.testing.assert_allclose(
            result.alignment, attention[:len(target_ids), :-1], atol=1e-5)
        assert np.all(attention.sum(axis=-1) == pytest.approx(1.0, abs=1e-4))


def test_score_is_the_translators_log_prob_per_subword(tiny_model_dir):
    """With greedy search the Translator's score is the log-probability:
    the backend's score times the output length (end token included) is
    the Translator's score."""
    from gnmt_tf.gateway.backends import ModelBackend
    from gnmt_tf.translator import SearchOptions
    from gnmt_tf.translator import Translator

    greedy = SearchOptions(beam_size=1)
    translator = Translator.from_model_dir(tiny_model_dir)
    backend = ModelBackend(translator, greedy)
    results = backend(SENTENCES, "en", "de")
    best = translator.translate_nbest(SENTENCES, greedy)
    for sentence, result, hyps in zip(SENTENCES, results, best):
        if sentence.strip():
            assert result.score < 0
            assert result.score * (len(result.target_pieces) + 1) == \
                pytest.approx(hyps[0].score, rel=1e-5)


def test_batching_does_not_change_a_result(model_backend):
    """A sentence padded in a batch with a longer one gets the alignment and
    score it gets alone (the masks hold)."""
    alone = model_backend([SENTENCES[0]], "en", "de")[0]
    batched = model_backend([SENTENCES[3], SENTENCES[0]], "en", "de")[1]
    assert batched.text == alone.text
    assert batched.score == pytest.approx(alone.score, abs=1e-5)
    np.testing.assert_allclose(batched.alignment, alone.alignment,
                               atol=1e-5)


def test_model_backend_refuses_what_the_model_cannot_do(model_backend):
    with pytest.raises(ValueError, match="en->de only"):
        model_backend(["A dog runs."], "en", "fr")
    with pytest.raises(ValueError, match="no scene tags"):
        model_backend(["A dog runs."], "en", "de", ["news"])
    with pytest.raises(ValueError, match="limit"):
        model_backend([" ".join(["dog"] * 300)], "en", "de")


def test_aligned_model_gives_the_head_probabilities(model_families):
    """An `AlignedTranslationModel`'s alignment is its head's, as
    `forced_alignment` computes it (task-space model, task inputs)."""
    from gnmt_tf.gateway.backends import ModelBackend
    from gnmt_tf.translator import SearchOptions

    translator = model_families("aligned_model").translator
    backend = ModelBackend(translator, SearchOptions(beam_size=1))
    assert backend.languages == ("cs", "de", "en", "fr")
    sentences = ["a dog runs", "a big cat sleeps"]
    results = backend(sentences, "en", "fr", ["caption"])
    model, subwords = translator.model, translator.subwords
    task = translator.task_ids(src_lang="en", tgt_lang="fr",
                               tags=["caption"])
    targets = [[subwords._sp.PieceToId(p) for p in r.target_pieces]
               for r in results]
    probabilities, _ = model.forced_alignment(
        subwords.encode(sentences), targets,
        {name: [value] * 2 for name, value in task.items()})
    for result, expected, target in zip(results, probabilities, targets):
        assert result.alignment.shape == (len(target),
                                          len(result.source_pieces))
        np.testing.assert_allclose(
            result.alignment,
            expected[:len(target), :len(result.source_pieces)], atol=1e-5)


def test_server_backend_equals_in_process(grpc_server, model_backend):
    backend = ServerBackend.connect(grpc_server.target, "gnmt", ["en", "de"])
    try:
        assert backend.with_alignment and backend.task_names == ()
        served = backend(SENTENCES, "en", "de")
        local = model_backend(SENTENCES, "en", "de")
        for s, m in zip(served, local):
            assert s.text == m.text
            assert s.score == pytest.approx(m.score, abs=1e-4)
            assert s.source_pieces == m.source_pieces
            assert s.target_pieces == m.target_pieces
            np.testing.assert_allclose(s.alignment, m.alignment, atol=1e-4)
        with pytest.raises(ValueError, match="input too long"):
            backend([" ".join(["dog"] * 300)], "en", "de")
        with pytest.raises(ValueError, match="en->de only"):
            backend(["A dog."], "de", "en")
    finally:
        backend.close()


def test_server_backend_without_the_signature_gives_text(grpc_server):
    """A served model without `translate_with_alignment` (an older
    export): text only, through `serving_default`."""
    from gnmt_tf.serving.client import TranslationClient

    client = TranslationClient(grpc_server.target, "gnmt")
    signatures = client.metadata()
    del signatures[ALIGNMENT_SIGNATURE]
    backend = ServerBackend(client, ["en", "de"], signatures)
    try:
        result = backend(["A big dog runs."], "en", "de")[0]
        assert result.text and result.score is None \
            and result.alignment is None
    finally:
        backend.close()
    with pytest.raises(ValueError, match="exactly SRC,TGT"):
        ServerBackend(client, ["en", "de", "fr"], signatures)


_NO_TF = """
import json, sys
from gnmt_tf.gateway import Pipeline
nmt = Pipeline.from_server(sys.argv[1], "gnmt", ["en", "de"])
result = nmt.backend(["A big dog runs."], "en", "de")[0]
html = nmt.translate_document("<p>A big dog runs.</p>", "en", "de",
                              format="html")
print(json.dumps({"tf": "tensorflow" in sys.modules, "html": html,
                  "shape": list(result.alignment.shape)}))
"""


def test_server_path_imports_no_tensorflow(grpc_server, model_backend):
    proc = subprocess.run([sys.executable, "-c", _NO_TF, grpc_server.target],
                          capture_output=True, text=True, timeout=120,
                          cwd=REPO_ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["tf"] is False
    assert out["html"].startswith("<p>") and out["html"].endswith("</p>")
    pieces = model_backend.translator.subwords.pieces("A big dog runs.")
    assert out["shape"][0] > 0 and out["shape"][1] == len(pieces)
