"""Untrained directions of a task-space model are refused
(`gnmt_tf.cli.task_flags`, `gnmt-tf translate`)."""

import argparse
import json
import shutil
import types

import pytest

from gnmt_tf.cli.task_flags import task_arguments
from gnmt_tf.seq2seq_model import TaskInput

LANGUAGES = ("en", "de", "fr", "cs")


def _model(trained):
    """What `task_arguments` reads of a task-space model trained on the
    directions `trained` ("en-de,en-fr"; None: not recorded)."""
    pairs = None if trained is None else [
        dict(zip(("src_lang", "tgt_lang"), p.split("-")))
        for p in trained.split(",")]
    inputs = (TaskInput("src_lang", LANGUAGES), TaskInput("tgt_lang", LANGUAGES),
              TaskInput("tags", ("caption",), multi_hot=True))
    return types.SimpleNamespace(task_inputs=lambda: inputs, fixed_task={},
                                 default_task={"tags": ("caption",)},
                                 trained_tasks=pairs)


def _args(src, tgt, allow_zero_shot=False):
    return argparse.Namespace(src_lang=src, tgt_lang=tgt, tags=None,
                              allow_zero_shot=allow_zero_shot)


def test_trained_direction_passes(capsys):
    assert task_arguments(_args("en", "fr"), _model("en-de,en-fr"), "m") == {
        "src_lang": "en", "tgt_lang": "fr", "tags": ("caption",)}
    assert capsys.readouterr().err == ""


def test_untrained_direction_is_refused():
    with pytest.raises(ValueError, match="not trained on en-cs .only "
                                         "en-de,en-fr.*--allow-zero-shot"):
        task_arguments(_args("en", "cs"), _model("en-de,en-fr"), "runs/m")


def test_zero_shot_when_asked_warns(capsys):
    task_arguments(_args("en", "cs", allow_zero_shot=True),
                   _model("en-de,en-fr"), "m")
    assert "en-cs is zero-shot" in capsys.readouterr().err


def test_no_record_warns_only(capsys):
    task_arguments(_args("en", "cs"), _model(None), "old/model")
    assert "old/model does not record its training directions" in \
        capsys.readouterr().err


def test_missing_language_is_refused():
    with pytest.raises(ValueError, match="--tgt-lang required"):
        task_arguments(_args("en", None), _model("en-de"), "m")


def test_a_fixed_direction_accepts_only_itself():
    gnmt = types.SimpleNamespace(task_inputs=lambda: (), default_task={},
                                 trained_tasks=None,
                                 fixed_task={"src_lang": "en",
                                             "tgt_lang": "de"})
    assert task_arguments(_args("en", "de"), gnmt, "runs/gnmt") == {}
    with pytest.raises(ValueError, match="translates en->de only; it cannot "
                                         "honour --tgt-lang fr"):
        task_arguments(_args("en", "fr"), gnmt, "runs/gnmt")


def _translate(model_dir, tmp_path, capsys, *flags):
    from gnmt_tf.cli.main import main

    source = tmp_path / "in.txt"
    source.write_text("a dog runs\n")
    code = main(["translate", "--model", str(model_dir), "-i", str(source),
                 "--beam-size", "1", *flags])
    return code, capsys.readouterr()


def test_translate_refuses_an_untrained_direction(ts_model_dir, tmp_path,
                                                  capsys):
    code, captured = _translate(ts_model_dir, tmp_path, capsys,
                                "--src-lang", "en", "--tgt-lang", "cs")
    assert code == 2 and captured.out == ""
    assert captured.err.strip().endswith(
        "not trained on en-cs (only de-cs,en-fr); pass --allow-zero-shot to "
        "translate it anyway")


def test_translate_zero_shot_on_request(ts_model_dir, tmp_path, capsys):
    code, captured = _translate(ts_model_dir, tmp_path, capsys,
                                "--src-lang", "en", "--tgt-lang", "cs",
                                "--allow-zero-shot")
    assert code == 0 and captured.out.count("\n") == 1
    assert "en-cs is zero-shot" in captured.err


def test_model_dir_without_a_record_still_translates(ts_model_dir, tmp_path,
                                                     capsys):
    old = tmp_path / "old_model"
    shutil.copytree(ts_model_dir, old)
    payload = json.loads((old / "config.json").read_text())
    del payload["task_space"]["directions"]
    (old / "config.json").write_text(json.dumps(payload))
    code, captured = _translate(old, tmp_path, capsys,
                                "--src-lang", "en", "--tgt-lang", "cs")
    assert code == 0 and captured.out.count("\n") == 1
    assert "does not record its training directions" in captured.err
