"""Model directories written before the one-model-interface redesign still
load and translate as they did (fixtures: tests/fixtures/model_dirs_7a4eda6,
and the QAT directories of tests/fixtures/qat_dirs_8e68767, written before
the two families' QAT modules were merged)."""

import json
import pathlib
import shutil

import pytest

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures"
FIXTURE = FIXTURES / "model_dirs_7a4eda6"
QAT_FIXTURE = FIXTURES / "qat_dirs_8e68767"
EXPECTED = {**json.loads((FIXTURE / "expected.json").read_text("utf-8")),
            **{key: value for key, value in json.loads(
                (QAT_FIXTURE / "expected.json").read_text("utf-8")).items()
               if key != "sentences"}}
EXPECTED["sentences"].update(json.loads(
    (QAT_FIXTURE / "expected.json").read_text("utf-8"))["sentences"])
TS_TASK = {"src_lang": "en", "tgt_lang": "fr", "tags": ["caption"]}
TASKS = {"gnmt_tiny": {}, "task_space_tiny": TS_TASK,
         "gnmt_tiny_qat": {}, "task_space_tiny_qat": TS_TASK}


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory):
    """A copy, so that loading can never change the fixtures."""
    copy = tmp_path_factory.mktemp("old") / "dirs"
    shutil.copytree(FIXTURE, copy)
    for path in QAT_FIXTURE.iterdir():
        if path.is_dir():
            shutil.copytree(path, copy / path.name)
    return copy


@pytest.mark.parametrize("name", sorted(TASKS))
@pytest.mark.parametrize("beam_size", [1, 2])
def test_translates_as_before(model_dirs, name, beam_size):
    from gnmt_tf.translator import SearchOptions, Translator

    translator = Translator.from_model_dir(model_dirs / name)
    got = translator.translate_nbest(EXPECTED["sentences"][name],
                                     SearchOptions(beam_size=beam_size),
                                     **TASKS[name])
    for (text, score), hyps in zip(EXPECTED[f"{name}/beam{beam_size}"], got):
        if name.endswith("_qat"):
            # Another CPU's float rounding can push a fake-quantized
            # activation across a rounding boundary: a whole int8 step
            # (1/255 of its range), which moves a score by far more than
            # float error but far less than a wrongly restored model.
            assert hyps[0].score == pytest.approx(score, rel=0.05, abs=0.1)
            continue
        assert hyps[0].score == pytest.approx(score, abs=1e-3)
        if hyps[0].text != text:  # another CPU broke an exact tie otherwise
            assert hyps[0].score == pytest.approx(score, abs=1e-5)


@pytest.mark.parametrize("name", ["gnmt_tiny_qat", "task_space_tiny_qat"])
def test_qat_checkpoints_restore_every_variable(model_dirs, name):
    import tensorflow as tf

    from gnmt_tf import model_dir as model_dir_lib

    model, _ = model_dir_lib.build_model(model_dirs / name)
    model(model.dummy_inputs())
    path = tf.train.latest_checkpoint(str(model_dirs / name / "checkpoints"))
    status = tf.train.Checkpoint(model=model).restore(path)
    status.assert_existing_objects_matched()  # every model variable found
    # ...and every saved model value used (the optimizer's slots aside).
    loaded = {key for key, _ in tf.train.list_variables(path)
              if key.startswith("model/") and ".OPTIMIZER_SLOT" not in key}
    assert len(loaded) == len(model.weights)
