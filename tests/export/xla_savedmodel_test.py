"""SavedModel export with the search compiled by XLA (`gnmt-tf export
savedmodel --xla`): loaded back, it serves what the plain in-process
search gives, with allowed ops only."""

import json

import numpy as np
import pytest

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

import tensorflow as tf

from gnmt_tf.cli.main import main

BEAM_SIZE = 2
# The served (XLA) and in-process (plain) float32 scores: ~1,000 ulps,
# relative, as tests/gnmt_tf/translator_test.py's SCORE_TOLERANCE.
SCORE_TOLERANCE = 1024 * float(np.finfo(np.float32).eps)


@pytest.fixture(scope="module")
def xla_export(task_space, tmp_path_factory):
    path = tmp_path_factory.mktemp("xla_savedmodel") / "ts" / "1"
    assert main(["export", "savedmodel", "--model", str(task_space.model_dir),
                 "--out", str(path), "--beam-size", str(BEAM_SIZE),
                 "--beam-sizes", str(BEAM_SIZE), "--alpha", "0.6",
                 "--beta", "0.2", "--xla", "--no-alignment-signature"]) == 0
    return path


def _in_process(task_space):
    """The plain in-process search's best translations of the family's
    requests, in batch order."""
    from gnmt_tf.translator import SearchOptions

    options = SearchOptions(beam_size=BEAM_SIZE, length_penalty=0.6,
                            coverage_penalty=0.2)
    texts, scores = [], []
    for task, sentences in task_space.family.requests:
        for hyps in task_space.translator.translate_nbest(
                list(sentences), options, **task):
            texts.append(hyps[0].text)
            scores.append(hyps[0].score)
    return texts, scores


def test_xla_export_serves_the_plain_search(xla_export, task_space):
    from gnmt_tf.export.savedmodel import METADATA_FILE

    metadata = json.loads(
        (xla_export / "assets.extra" / METADATA_FILE).read_text())
    assert metadata["jit_compile_search"] is True
    loaded = tf.saved_model.load(str(xla_export))
    batch = {k: tf.constant(v) for k, v in task_space.batch().items()}
    want_texts, want_scores = _in_process(task_space)
    assert any(want_texts)
    served = loaded.signatures["serving_default"](**batch)
    with_options = loaded.signatures["translate_with_options"](
        **batch, beam_size=tf.constant(BEAM_SIZE),
        length_penalty=tf.constant(0.6), coverage_penalty=tf.constant(0.2))
    for out in (served, with_options):
        assert [t.decode() for t in out["translations"].numpy()] == \
            want_texts
        assert out["scores"].numpy().tolist() == pytest.approx(
            want_scores, rel=SCORE_TOLERANCE, abs=SCORE_TOLERANCE)


def test_xla_export_uses_allowed_ops(xla_export):
    from gnmt_tf.export import ops

    assert ops.disallowed_ops(xla_export) == []


def test_xla_export_refuses_an_ensemble(task_space, tmp_path, capsys):
    model = str(task_space.model_dir)
    code = main(["export", "savedmodel", "--model", model, "--model", model,
                 "--out", str(tmp_path / "m" / "1"), "--xla"])
    assert code == 2
    assert "single models, not ensembles" in capsys.readouterr().err
