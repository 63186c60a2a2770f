"""benchmarks/zoo_exports.py: a model directory gets its alignment head,
float32 and int8 TFLite exports in one go, each usable as shipped."""

import json
import shutil

import pytest
import sacrebleu

from benchmark_scripts import load_benchmark

SENTENCES = ["a dog runs", "man sleeps", "big red ball park"]


@pytest.fixture(scope="module")
def zoo_exports():
    return load_benchmark("zoo_exports")


@pytest.fixture(scope="module")
def shipped(zoo_exports, ts_model_dir, multiway_dir, tmp_path_factory):
    """A copy of the tiny task-space model with its exports made (a few
    steps each), and what `ship_exports` returned."""
    model_dir = tmp_path_factory.mktemp("zoo") / "model"
    shutil.copytree(ts_model_dir, model_dir)
    settings = zoo_exports.ExportSettings(
        data_dir=str(multiway_dir), head_lines=60, head_steps=3,
        qat_steps=3, score_direction="en-fr", score_split="val")
    return model_dir, settings, zoo_exports.ship_exports(model_dir,
                                                         settings)


@pytest.mark.slow
def test_alignment_head_is_written_into_the_model(shipped):
    from gnmt_tf.alignment.head_files import has_head, load_model

    model_dir, _, result = shipped
    assert has_head(model_dir)
    info = json.loads((model_dir / "alignment_head.json").read_text())
    assert info == result["alignment_head"]
    assert info["trained_on"]["steps"] == 3
    assert info["model"] == "model"  # the folder's name, not a path
    assert {"en-fr", "fr-en", "de-cs", "cs-de"} <= set(
        info["trained_on"]["directions"])
    model, _, _ = load_model(model_dir)  # the head loads with the model
    assert model is not None


@pytest.mark.slow
def test_float32_export_is_found_and_translates_as_the_graph(shipped):
    from gnmt_tf import tflite_cache
    from gnmt_tf.translator import Translator

    model_dir, _, result = shipped
    assert tflite_cache.shipped(model_dir) == result["tflite_float32"]
    task = dict(src_lang="en", tgt_lang="fr", tags="caption")
    fast = Translator.from_model_dir(model_dir, engine="auto")
    assert fast.tflite_search is not None  # the export it carries
    graph = Translator.from_model_dir(model_dir, engine="graph")
    assert (fast.translate(SENTENCES, beam_size=4, **task)
            == graph.translate(SENTENCES, beam_size=4, **task))


@pytest.mark.slow
def test_int8_export_scores_as_its_scores_file_says(zoo_exports, shipped,
                                                    multiway_dir):
    from gnmt_tf.data.corpus import read_lines, split_path
    from gnmt_tf.host_translator import HostTranslator

    model_dir, settings, result = shipped
    folder = model_dir / "tflite_int8"
    recorded = json.loads((folder / "scores.json").read_text())
    assert recorded == result["tflite_int8"]
    assert recorded["split"] == "val" and recorded["direction"] == "en-fr"
    assert recorded["float_model"] is None  # the copy has no scores.json
    translator = HostTranslator.from_tflite(folder / "model_int8.tflite")
    task = dict(src_lang="en", tgt_lang="fr", tags="caption")
    pairs = list(zip(read_lines(split_path(multiway_dir, "val", "en")),
                     read_lines(split_path(multiway_dir, "val", "fr"))))
    fits, too_long = [], 0
    for source, reference in pairs:  # the tiny model takes 16 subwords
        try:
            translator.translate([source], **task)
            fits.append((source, reference))
        except ValueError:
            too_long += 1
    assert recorded["left_out_over_source_limit"] == too_long
    hypotheses = translator.translate([s for s, _ in fits], beam_size=4,
                                      length_penalty=0.6, **task)
    bleu = sacrebleu.corpus_bleu(hypotheses, [[r for _, r in fits]])
    assert recorded["val"] == round(bleu.score, 2)
    assert not list(model_dir.glob(".tflite_*"))  # no staging left behind


@pytest.mark.parametrize("field, value", [
    ("head_steps", 0), ("qat_steps", -1), ("qat_minutes", 0),
    ("qat_learning_rate", -0.1), ("score_direction", "en")])
def test_settings_refuse_bad_values(zoo_exports, field, value):
    with pytest.raises(ValueError, match=field):
        zoo_exports.ExportSettings(data_dir="d", **{field: value})


def test_a_folder_without_a_model_is_refused_before_any_work(zoo_exports,
                                                             tmp_path):
    with pytest.raises(FileNotFoundError, match="no config.json"):
        zoo_exports.ship_exports(tmp_path,
                                 zoo_exports.ExportSettings(data_dir="d"))
