"""End to end: train a tiny task-space model, load it, translate, CLI."""

import json

import numpy as np
import pytest

import gnmt_tf  # noqa: F401

import tensorflow as tf

from gnmt_tf import model_dir as model_dir_lib
from gnmt_tf.config import apply_overrides
from gnmt_tf.text.subword import Subwords
from gnmt_tf.translator import SearchOptions
from gnmt_tf.data import multiway as data_lib
from gnmt_tf.models.task_space.training import TaskSpaceOptions
from gnmt_tf.models.task_space.training import get_preset
from gnmt_tf.models.task_space.training import read_task_space_config
from gnmt_tf.models.task_space.training import train_task_space
from gnmt_tf.translator import Translator

GREEDY = SearchOptions(beam_size=1)
BEAM = SearchOptions(beam_size=2, num_hypotheses=2)


def _tiny_configs(steps=2, **model_overrides):
    model_config, train_config = get_preset("transformer_tiny")
    model_config = model_config.replace(vocabulary_size=60, **model_overrides)
    train_config = apply_overrides(
        train_config, [f"train_steps={steps}", "checkpoint_every=2"])
    return model_config, train_config


@pytest.fixture(scope="module")
def trained(multiway_dir, tmp_path_factory):
    """A transformer_tiny trained 2 steps on all 12 directions."""
    model_dir = tmp_path_factory.mktemp("task_space_model")
    model_config, train_config = _tiny_configs()
    train_config = apply_overrides(train_config,
                                   ["bleu_every=2", "bleu_lines=2"])
    result = train_task_space(
        model_dir, multiway_dir, "all", model_config, train_config,
        TaskSpaceOptions(validation_lines=5), log_every=1000)
    return model_dir, result


@pytest.fixture(scope="module")
def translator(trained):
    return Translator.from_model_dir(trained[0])


def test_model_dir_contents(trained):
    model_dir, result = trained
    assert result.steps == 2
    payload = json.loads((model_dir / "config.json").read_text())
    assert payload["model_type"] == "task_space_transformer"
    assert len(payload["task_space"]["directions"].split(",")) == 12
    config, options = read_task_space_config(model_dir)
    assert options.tags == "caption" and not options.target_language_token
    # The config takes the trained vocabulary's real size.
    assert config.vocabulary_size == Subwords(
        model_dir / "spm.model").vocabulary_size
    assert tf.train.latest_checkpoint(str(model_dir / "checkpoints"))


def test_validation_loss_and_bleu_are_recorded(trained):
    from gnmt_tf.training.metrics_log import read_metrics

    rows = read_metrics(trained[0])
    assert [(r.step, r.metric) for r in rows if r.split == "validation"] \
        == [(2, "bleu"), (2, "loss")]


def test_generic_load_model_opens_it(trained, translator):
    model, subwords, payload = model_dir_lib.load_model(trained[0])
    assert type(model).__name__ == "TaskSpaceTranslationModel"
    assert payload["model_type"] == "task_space_transformer"
    # The <2xx> tokens are single pieces of the shared vocabulary.
    ids = data_lib.target_language_token_ids(subwords, ("en", "de", "fr",
                                                        "cs"))
    assert len(set(ids)) == 4
    # Restored, not fresh: same weights as the translator's model.
    np.testing.assert_array_equal(model.embedding.embeddings.numpy(),
                                  translator.model.embedding.embeddings.numpy())


def test_translate_round_trip(translator):
    out = translator.translate(["a dog runs", "", "the big cat sleeps"],
                               GREEDY, src_lang="en", tgt_lang="fr",
                               tags=["caption"])
    assert len(out) == 3 and out[1] == ""
    assert all(isinstance(s, str) for s in out)
    nbest = translator.translate_nbest(["ein Hund"], BEAM, src_lang="de",
                                       tgt_lang="cs", tags="caption")
    assert len(nbest[0]) == 2 and nbest[0][0].score >= nbest[0][1].score


def test_greedy_search_matches_full_forward_argmax(translator):
    """The KV-cached step search gives what the teacher-forced model gives."""
    model, config = translator.model, translator.model.config
    sentence = "a red ball"
    task = translator.task_ids(src_lang="en", tgt_lang="de", tags=["caption"])
    src, tgt, tags = task["src_lang"], task["tgt_lang"], task["tags"]
    source_ids = translator.subwords.encode([sentence])[0] + [config.eos_id]
    max_length = int(np.ceil(GREEDY.max_length_ratio * len(source_ids)))
    ids = [config.bos_id]
    for _ in range(max_length):
        logits = model({"source_ids": tf.constant([source_ids]),
                        "target_in_ids": tf.constant([ids]),
                        "src_lang": tf.constant([src]),
                        "tgt_lang": tf.constant([tgt]),
                        "tags": tf.constant([tags])})
        ids.append(int(tf.argmax(logits[0, -1])))
        if ids[-1] == config.eos_id:
            break
    expected = translator.subwords.decode(
        [[i for i in ids[1:] if i != config.eos_id]])[0]
    assert translator.translate([sentence], GREEDY, src_lang="en",
                                tgt_lang="de", tags="caption") == [expected]


@pytest.mark.parametrize("args, message", [
    (("xx", "de", ()), "unknown language 'xx'"),
    (("en", "klingon", ()), "unknown language 'klingon'"),
    (("en", "de", ["poetry"]), "unknown scene tag 'poetry'"),
    (("en", "en", ()), "must differ"),
])
def test_unknown_language_or_tag(translator, args, message):
    with pytest.raises(ValueError, match=message):
        translator.translate(["a dog"], **dict(
            zip(("src_lang", "tgt_lang", "tags"), args)))


def test_resume_keeps_directions(trained, multiway_dir):
    model_config, train_config = _tiny_configs()
    with pytest.raises(ValueError, match="was trained on directions"):
        train_task_space(trained[0], multiway_dir, "en-de", model_config,
                         train_config)


def test_cli_translate_and_errors(trained, tmp_path, capsys):
    from gnmt_tf.cli.main import build_parser, main

    source = tmp_path / "src.txt"
    source.write_text("a dog runs\n\nbig cat\n", encoding="utf-8")
    output = tmp_path / "out.txt"
    args = build_parser().parse_args(
        ["task-space", "translate", "--model", str(trained[0]),
         "--src-lang", "en", "--tgt-lang", "fr", "--tags", "caption",
         "--beam-size", "1", "-i", str(source), "-o", str(output)])
    assert args.func(args) == 0
    lines = output.read_text(encoding="utf-8").split("\n")
    assert len(lines) == 4 and lines[1] == "" and lines[3] == ""
    assert main(["task-space", "translate", "--model", str(trained[0]),
                 "--src-lang", "en", "--tgt-lang", "xx",
                 "-i", str(source)]) == 2
    assert "unknown language 'xx'" in capsys.readouterr().err
    assert main(["task-space", "translate", "--model", str(trained[0]),
                 "--src-lang", "en", "--tgt-lang", "fr", "--tags", "poetry",
                 "-i", str(source)]) == 2
    assert "unknown scene tag 'poetry'" in capsys.readouterr().err


def test_baseline_with_target_language_token(multiway_dir, tmp_path):
    """Johnson et al. baseline: no task space, `<2xx>` prepended."""
    from gnmt_tf.cli.main import main

    model_dir = tmp_path / "baseline"
    assert main(["task-space", "train", "--preset", "transformer_tiny",
                 "--model-dir", str(model_dir), "--data-dir",
                 str(multiway_dir), "--directions", "all-except:fr-cs,cs-fr",
                 "--set", "use_task_space=false",
                 "--set", "target_language_token=true",
                 "--set", "vocabulary_size=60", "--set", "train_steps=2",
                 "--set", "validation_lines=0", "--set", "max_lines=50"]) == 0
    config, options = read_task_space_config(model_dir)
    assert not config.use_task_space and options.target_language_token
    assert len(options.directions.split(",")) == 10
    translator = Translator.from_model_dir(model_dir)
    assert translator.model.language_token_ids is not None
    source_ids, lengths = translator.tokenize(
        tf.constant(["a dog"]), {"tgt_lang": tf.constant(
            [config.language_id("cs")])})
    token = data_lib.target_language_token_ids(translator.subwords, ["cs"])[0]
    assert int(source_ids[0, 0]) == token
    assert int(source_ids[0, lengths[0] - 1]) == config.eos_id
    # Zero-shot direction fr->cs was held out but still translates.
    out = translator.translate(["un chien"], GREEDY, src_lang="fr",
                               tgt_lang="cs")
    assert isinstance(out[0], str)


def test_cli_evaluate_per_direction(trained, multiway_dir, tmp_path, capsys):
    """`gnmt-tf evaluate --model` scores every direction of a split; the old
    `task-space evaluate --json` spelling writes the same rows, after a
    deprecation line."""
    from gnmt_tf.cli.main import main

    common = ["--model", str(trained[0]), "--data-dir", str(multiway_dir),
              "--split", "test_2017_flickr", "--max-lines", "3",
              "--beam-size", "1"]
    scores = tmp_path / "scores.json"
    assert main(["evaluate", *common, "--scores-json", str(scores)]) == 0
    rows = json.loads(scores.read_text())
    # test_2017_flickr has no Czech: the 6 directions between en, de, fr.
    assert sorted(r["direction"] for r in rows) == sorted(
        ["en-de", "en-fr", "de-en", "de-fr", "fr-en", "fr-de"])
    assert all(r["sentences"] == 3 and r["tags"] == ["caption"]
               for r in rows)
    captured = capsys.readouterr()
    assert "mean BLEU over 6 tasks" in captured.out
    assert "deprecated" not in captured.err

    old_spelling = tmp_path / "old.json"
    assert main(["task-space", "evaluate", *common,
                 "--json", str(old_spelling)]) == 0
    assert json.loads(old_spelling.read_text()) == rows
    assert "'task-space evaluate' is deprecated" in capsys.readouterr().err


def test_cli_evaluate_needs_one_mode(trained):
    from gnmt_tf.cli.main import main

    assert main(["evaluate"]) == 2
    assert main(["evaluate", "--model", str(trained[0]),
                 "--hyp", "h.txt", "--ref", "r.txt"]) == 2


def test_bfloat16_training_keeps_float32_weights(multiway_dir, tmp_path):
    """`precision=mixed_bfloat16` trains in bfloat16 and checkpoints float32
    variables that a float32 model loads and translates with; two Adam steps
    move its weights from the float32 run's by less than the steps can."""
    runs = {}
    for precision in ("float32", "mixed_bfloat16"):
        model_config, train_config = _tiny_configs()
        train_config = apply_overrides(train_config, [
            f"precision={precision}", "warmup_steps=0"])
        model_dir = tmp_path / precision
        train_task_space(model_dir, multiway_dir, "en-de", model_config,
                         train_config, TaskSpaceOptions(validation_lines=0),
                         log_every=1000)
        reader = tf.train.load_checkpoint(
            tf.train.latest_checkpoint(str(model_dir / "checkpoints")))
        runs[precision] = {
            name: reader.get_tensor(name)
            for name, dtype in reader.get_variable_to_dtype_map().items()
            if "/.ATTRIBUTES/" in name and "optimizer" not in name
            and dtype.is_floating}
        assert {reader.get_variable_to_dtype_map()[name]
                for name in runs[precision]} == {tf.float32}
    assert runs["float32"].keys() == runs["mixed_bfloat16"].keys()
    gaps = [np.abs(runs["float32"][n] - runs["mixed_bfloat16"][n]).max()
            for n in runs["float32"]]
    # bfloat16 gradients differ, so the weights do; but an Adam step moves a
    # weight by at most about 1.5 learning rates in its first steps, so two
    # steps of each run cannot part them by more than ~6 (bound: 10).
    assert max(gaps) > 0
    assert max(gaps) < 10 * train_config.learning_rate
    loaded = Translator.from_model_dir(tmp_path / "mixed_bfloat16")
    out = loaded.translate(["a dog"], GREEDY, src_lang="en", tgt_lang="de")
    assert isinstance(out[0], str)
    assert loaded.model.compute_dtype == "float32"


def test_bad_precision_is_refused():
    _, train_config = get_preset("transformer_tiny")
    with pytest.raises(ValueError, match="precision must be one of"):
        apply_overrides(train_config, ["precision=float16"])
    # GNMT's hand-written LSTM cells keep float32 state: refused up front.
    from gnmt_tf.models.gnmt.presets import get_preset as gnmt_preset
    from gnmt_tf.models.gnmt.training import train_gnmt

    model_config, train_config = gnmt_preset("gnmt_tiny")
    with pytest.raises(ValueError, match="GNMT trains in float32"):
        train_gnmt("unused", "unused", "en", "de", model_config,
                   apply_overrides(train_config,
                                   ["precision=mixed_bfloat16"]))
