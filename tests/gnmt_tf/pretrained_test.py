"""Shipped models: names resolve wherever a model directory is accepted,
and every model shipped in `gnmt_tf/pretrained/` loads and translates."""

import functools
import json

import pytest

from gnmt_tf import pretrained
from gnmt_tf.model_dir import load_model
from gnmt_tf.training.averaging import average_checkpoints
from gnmt_tf.translator import SearchOptions, Translator


@pytest.fixture(scope="module")
def shipped_dir(tiny_model_dir, tmp_path_factory):
    """A pretrained folder holding the tiny GNMT as `tiny-en-de`."""
    root = tmp_path_factory.mktemp("pretrained")
    average_checkpoints(tiny_model_dir, root / "tiny-en-de", last=2,
                        weights_only=True)
    (root / "tiny-en-de" / pretrained.SCORES_FILE).write_text(json.dumps(
        {"sacrebleu": {"en-de": {"test_2016_flickr": 12.345}}}))
    (root / "not-a-model").mkdir()
    return root


def test_names_resolve_and_translate(shipped_dir, monkeypatch, toy_corpus):
    monkeypatch.setattr(pretrained, "PRETRAINED_DIR", shipped_dir)
    assert pretrained.names() == ["tiny-en-de"]
    assert pretrained.locate("tiny-en-de") == shipped_dir / "tiny-en-de"
    info = pretrained.describe("tiny-en-de")
    assert info["model_type"] == "gnmt" and info["size_mb"] > 0
    assert info["scores"]["sacrebleu"]["en-de"]["test_2016_flickr"] == 12.345
    by_name = Translator.from_model_dir("tiny-en-de")
    by_path = Translator.from_model_dir(shipped_dir / "tiny-en-de")
    sources = [en for en, _ in toy_corpus[:4]]
    options = SearchOptions(beam_size=2)
    assert by_name.translate(sources, options) == by_path.translate(sources,
                                                                    options)


def test_a_local_directory_wins_over_a_name(shipped_dir, monkeypatch,
                                            tmp_path):
    monkeypatch.setattr(pretrained, "PRETRAINED_DIR", shipped_dir)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tiny-en-de").mkdir()
    assert pretrained.locate("tiny-en-de") == pretrained.pathlib.Path(
        "tiny-en-de")
    with pytest.raises(FileNotFoundError, match="not a model directory"):
        load_model("tiny-en-de")  # the empty local folder, not the shipped


@functools.lru_cache(maxsize=None)
def shipped_translator(name):
    """One loaded `Translator` per shipped model for this module's tests."""
    return Translator.from_model_dir(name)


@pytest.mark.parametrize("name", pretrained.names())
def test_every_shipped_model_translates(name):
    translator = shipped_translator(name)
    model = translator.model
    task = {}
    names = {t.name for t in model.task_inputs()}
    if "src_lang" in names:
        task = {"src_lang": "en", "tgt_lang": "de",
                "tags": model.default_task.get("tags", ())}
    out = translator.translate(["A man is riding a bicycle.", ""],
                               SearchOptions(beam_size=2), **task)
    assert out[0].strip() and out[1] == ""
    assert pretrained.describe(name)["scores"]["sacrebleu"]


# The first sentences of test_2016_flickr per direction a shipped model is
# checked on. Their BLEU must stay within QUALITY_MARGIN of the model's
# whole-test-set score in scores.json: a wrong weight, vocabulary or task
# encoding drops it to near zero, while another CPU's float rounding (which
# can flip a beam's choice here and there) moves 60 sentences by a few points.
QUALITY_SENTENCES = 60
QUALITY_MARGIN = 12.0


@pytest.mark.parametrize("name", pretrained.names())
def test_every_shipped_model_keeps_its_measured_quality(name, data_dir):
    from gnmt_tf.data import corpus
    from gnmt_tf.evaluation import score_corpus

    translator = shipped_translator(name)
    scores = pretrained.describe(name)["scores"]
    search = scores.get("search", {})
    options = SearchOptions(beam_size=search.get("beam_size", 4),
                            length_penalty=search.get("length_penalty", 0.6))
    names = {t.name for t in translator.model.task_inputs()}
    for direction in ("en-de", "en-fr"):
        if direction not in scores["sacrebleu"]:
            continue
        src, tgt = direction.split("-")
        task = ({"src_lang": src, "tgt_lang": tgt,
                 "tags": translator.model.default_task.get("tags", ())}
                if "src_lang" in names else {})
        read = lambda lang: corpus.read_lines(corpus.split_path(  # noqa: E731
            data_dir, "test_2016_flickr", lang))[:QUALITY_SENTENCES]
        out = translator.translate(read(src), options, 32, **task)
        bleu = score_corpus(out, read(tgt)).bleu
        expected = scores["sacrebleu"][direction]["test_2016_flickr"]
        assert bleu >= expected - QUALITY_MARGIN, (direction, bleu, expected)


def test_bfloat16_translation_keeps_the_shipped_quality(data_dir):
    """`precision="mixed_bfloat16"` computes in bfloat16 on the very same
    float32 weights, and keeps the model's measured quality (same margin as
    float32 on another CPU); GNMT refuses it."""
    import numpy as np

    from gnmt_tf.data import corpus
    from gnmt_tf.evaluation import score_corpus

    name = "multi30k-transformer"
    mixed = Translator.from_model_dir(name, precision="mixed_bfloat16")
    plain = shipped_translator(name)
    assert mixed.model.compute_dtype == "bfloat16"
    assert all(np.array_equal(a, b) for a, b in zip(
        mixed.model.get_weights(), plain.model.get_weights()))
    read = lambda lang: corpus.read_lines(corpus.split_path(  # noqa: E731
        data_dir, "test_2016_flickr", lang))[:QUALITY_SENTENCES]
    out = mixed.translate(read("en"), SearchOptions(beam_size=4), 32,
                          src_lang="en", tgt_lang="de", tags=("caption",))
    expected = pretrained.describe(name)["scores"]["sacrebleu"]["en-de"]
    assert score_corpus(out, read("de")).bleu >= \
        expected["test_2016_flickr"] - QUALITY_MARGIN
    with pytest.raises(ValueError, match="GNMT runs in float32"):
        load_model("multi30k-gnmt-en-de", precision="mixed_bfloat16")


@pytest.mark.parametrize("name", pretrained.names())
def test_cli_lists_and_translates_by_name(name, tmp_path, capsys):
    from gnmt_tf.cli.main import main

    assert main(["models"]) == 0
    listed = [line for line in capsys.readouterr().out.splitlines()
              if line.startswith(name + " ")]
    assert len(listed) == 1
    translator = shipped_translator(name)
    names = {t.name for t in translator.model.task_inputs()}
    task_flags, task = [], {}
    if "src_lang" in names:
        task = {"src_lang": "en", "tgt_lang": "de", "tags": ("caption",)}
        task_flags = ["--src-lang", "en", "--tgt-lang", "de", "--tags",
                      "caption"]
    sources = ["A dog runs on the beach.", "Two men play football."]
    (tmp_path / "src.txt").write_text("\n".join(sources) + "\n")
    assert main(["translate", "--model", name, "--beam-size", "4",
                 "--input", str(tmp_path / "src.txt"), "--output",
                 str(tmp_path / "hyp.txt"), *task_flags]) == 0
    expected = translator.translate(sources, SearchOptions(beam_size=4),
                                    **task)
    assert (tmp_path / "hyp.txt").read_text().splitlines() == expected


def test_qat_finetune_starts_from_a_shipped_name(shipped_dir, monkeypatch,
                                                 tmp_path, toy_data_dir):
    from gnmt_tf.export.qat import qat_finetune

    monkeypatch.setattr(pretrained, "PRETRAINED_DIR", shipped_dir)
    qat_finetune("tiny-en-de", tmp_path / "qat", toy_data_dir, steps=2,
                 calibration_batches=1)
    assert (tmp_path / "qat" / "spm.model").read_bytes() == (
        shipped_dir / "tiny-en-de" / "spm.model").read_bytes()
    assert list((tmp_path / "qat" / "checkpoints").glob("ckpt-2.index"))


@pytest.mark.parametrize("name", [n for n in pretrained.names()
                                  if (pretrained.locate(n)
                                      / "alignment_head.json").exists()])
def test_a_shipped_alignment_head_aligns_better_than_attention(name,
                                                               data_dir):
    """Against fast_align links of held-out test_2016_flickr pairs, the
    shipped head's alignment error is below its model's raw attention's
    (as `alignment_head.json` records for the whole split)."""
    from gnmt_tf.alignment import head_files, head_training
    from gnmt_tf.data import corpus

    def read(split, lang, count):
        return corpus.read_lines(corpus.split_path(data_dir, split,
                                                   lang))[:count]

    src, tgt = "en", "de"
    held_out = 40
    examples = head_training.make_examples(
        src, tgt, read("test_2016_flickr", src, held_out)
        + read("train", src, 3000),
        read("test_2016_flickr", tgt, held_out) + read("train", tgt, 3000))
    model, subwords, _ = head_files.load_model(name)
    tags = model.default_task.get("tags", ())
    scores = head_training.score_head(model, subwords, examples[:held_out],
                                      tags)
    assert scores["aer_head"] < scores["aer_attention_argmax"], scores


def test_a_shipped_int8_export_is_found_by_name(shipped_dir, monkeypatch,
                                                model_families, tmp_path,
                                                toy_corpus, capsys):
    """`--tflite NAME` and `HostTranslator.from_tflite(NAME)` use the int8
    TFLite export shipped in `<name>/tflite_int8/`."""
    import shutil

    from gnmt_tf.cli.main import main
    from gnmt_tf.host_translator import HostTranslator

    monkeypatch.setattr(pretrained, "PRETRAINED_DIR", shipped_dir)
    int8_dir = model_families("gnmt").int8_dir
    assert pretrained.tflite_path("tiny-en-de") is None
    with pytest.raises(FileNotFoundError, match="shipped: none"):
        pretrained.locate_tflite("tiny-en-de")
    target = shipped_dir / "tiny-en-de" / pretrained.TFLITE_DIR
    shutil.copytree(int8_dir, target)
    try:
        assert pretrained.locate_tflite("tiny-en-de") == (
            target / pretrained.TFLITE_FILE)
        assert pretrained.describe("tiny-en-de")["tflite_int8_mb"] > 0
        sources = [en for en, _ in toy_corpus[:3]]
        expected = HostTranslator.from_tflite(
            int8_dir / pretrained.TFLITE_FILE).translate(sources,
                                                         beam_size=2)
        assert HostTranslator.from_tflite("tiny-en-de").translate(
            sources, beam_size=2) == expected
        (tmp_path / "src.txt").write_text("\n".join(sources) + "\n")
        assert main(["translate", "--tflite", "tiny-en-de", "--beam-size",
                     "2", "--input", str(tmp_path / "src.txt"), "--output",
                     str(tmp_path / "hyp.txt")]) == 0
        assert (tmp_path / "hyp.txt").read_text().splitlines() == expected
        assert main(["translate", "--tflite", "no-such-model", "--input",
                     str(tmp_path / "src.txt")]) == 2
        assert "not a .tflite file" in capsys.readouterr().err
    finally:
        shutil.rmtree(target)


@pytest.mark.parametrize("name", [n for n in pretrained.names()
                                  if pretrained.tflite_path(n)])
def test_every_shipped_int8_export_keeps_its_measured_quality(name,
                                                              data_dir):
    """As the float model's check, for its int8 TFLite export (whose own
    test_2016_flickr BLEU is in `tflite_int8/scores.json`)."""
    from gnmt_tf.data import corpus
    from gnmt_tf.evaluation import score_corpus
    from gnmt_tf.host_translator import HostTranslator

    path = pretrained.tflite_path(name)
    scores = json.loads((path.parent / pretrained.SCORES_FILE).read_text())
    translator = HostTranslator.from_tflite(name)
    src, tgt = scores["direction"].split("-")
    read = lambda lang: corpus.read_lines(corpus.split_path(  # noqa: E731
        data_dir, "test_2016_flickr", lang))[:QUALITY_SENTENCES]
    task = {}
    if translator.task_inputs():
        task = {"src_lang": src, "tgt_lang": tgt,
                "tags": scores.get("tags", "")}
    out = translator.translate(read(src), beam_size=scores["beam_size"],
                               **task)
    bleu = score_corpus(out, read(tgt)).bleu
    assert bleu >= scores["test_2016_flickr"] - QUALITY_MARGIN, (bleu,
                                                                 scores)
