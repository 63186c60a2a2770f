"""Model directories written before the one-model-interface redesign still
load and translate as they did (fixture: tests/fixtures/model_dirs_7a4eda6)."""

import json
import pathlib
import shutil

import pytest

FIXTURE = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / (
    "model_dirs_7a4eda6")
EXPECTED = json.loads((FIXTURE / "expected.json").read_text(encoding="utf-8"))
TASKS = {"gnmt_tiny": {},
         "task_space_tiny": {"src_lang": "en", "tgt_lang": "fr",
                             "tags": ["caption"]}}


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory):
    """A copy, so that loading can never change the fixture."""
    copy = tmp_path_factory.mktemp("old") / "dirs"
    shutil.copytree(FIXTURE, copy)
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
        assert hyps[0].score == pytest.approx(score, abs=1e-3)
        if hyps[0].text != text:  # another CPU broke an exact tie otherwise
            assert hyps[0].score == pytest.approx(score, abs=1e-5)
