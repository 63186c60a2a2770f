"""An ensemble (two models and a word-count bonus) exported as one
SavedModel: the single model's signatures, only allowed ops, and in a fresh
process the translations and scores of the in-process `Translator`.

The round trip (an export of two models and a fresh TensorFlow process)
takes about 22 s on an idle 2-core machine.
"""

import json
import subprocess
import sys

import numpy as np
import pytest

from gnmt_tf.export.ops import disallowed_ops
from gnmt_tf.export.savedmodel import METADATA_FILE
from gnmt_tf.export.savedmodel import export_savedmodel
from gnmt_tf.cli.main import main
from gnmt_tf.predictor_model import load_predictors
from gnmt_tf.translator import SearchOptions
from gnmt_tf.translator import Translator

SENTENCES = ["A big dog runs.", "   ", "A small cat eats.",
             "A young girl plays."]
PREDICTORS = dict(predictors=["nmt", "nmt", "wc"], weights=[1.0, 0.5, 0.2])
OPTIONS = SearchOptions(beam_size=2, length_penalty=0.6)

_FRESH = """
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401
args = json.loads(sys.argv[1])
sigs = tf.saved_model.load(args["path"]).signatures
text = tf.constant(args["sentences"])
out = {"signatures": sorted(sigs)}
for name, result in (
        ("default", sigs["serving_default"](text=text)),
        ("greedy", sigs["translate_with_options"](
            text=text, beam_size=tf.constant(1),
            length_penalty=tf.constant(0.0),
            coverage_penalty=tf.constant(0.0)))):
    out[name] = [[t.decode() for t in result["translations"].numpy()],
                 result["scores"].numpy().tolist()]
print("RESULT" + json.dumps(out))
"""


@pytest.fixture(scope="module")
def ensemble_export(tiny_model_dir, tmp_path_factory):
    path = tmp_path_factory.mktemp("ensemble") / "ensemble" / "1"
    return export_savedmodel([tiny_model_dir, tiny_model_dir], path, OPTIONS,
                             warmup_sentences=[], beam_sizes=(1,),
                             **PREDICTORS)


def test_round_trip_in_a_fresh_process(ensemble_export, tiny_model_dir):
    assert disallowed_ops(ensemble_export) == []
    metadata = json.loads(
        (ensemble_export / "assets.extra" / METADATA_FILE).read_text())
    assert metadata["ensemble"]["weights"] == PREDICTORS["weights"]
    assert metadata["signatures"] == ["decode_step", "encode",
                                      "serving_default",
                                      "translate_with_options"]
    proc = subprocess.run(
        [sys.executable, "-c", _FRESH, json.dumps(
            {"path": str(ensemble_export), "sentences": SENTENCES})],
        capture_output=True, text=True, timeout=300)
    lines = [l for l in proc.stdout.splitlines() if l.startswith("RESULT")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    fresh = json.loads(lines[-1][len("RESULT"):])
    model, subwords = load_predictors([tiny_model_dir, tiny_model_dir],
                                      **PREDICTORS)
    translator = Translator(model, subwords)
    for name, options in (("default", OPTIONS),
                          ("greedy", SearchOptions(beam_size=1))):
        hyps = [h[0] for h in translator.translate_nbest(SENTENCES, options)]
        texts, scores = fresh[name]
        assert texts == [h.text for h in hyps]
        np.testing.assert_allclose(scores, [h.score for h in hyps],
                                   rtol=1e-5, atol=1e-5)
    assert fresh["default"][0][1] == "" and fresh["default"][1][1] == 0.0


def test_lm_predictor_cannot_be_exported(tiny_model_dir, tmp_path, capsys):
    with pytest.raises(ValueError, match="lm predictor cannot be exported"):
        export_savedmodel([tiny_model_dir], tmp_path / "m" / "1",
                          predictors=["nmt", "lm"])
    code = main(["export", "savedmodel", "--model", str(tiny_model_dir),
                 "--out", str(tmp_path / "m" / "1"), "--predictors",
                 "nmt,lm", "--lm", str(tmp_path / "lm.arpa")])
    err = capsys.readouterr().err
    assert code == 2 and "--lm cannot be exported" in err
    assert len(err.splitlines()) == 1
