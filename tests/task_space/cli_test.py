"""Tests for task_space.cli: discovery, hooks, early argument errors."""

import argparse
import subprocess
import sys

import pytest

from gnmt_tf import model_dir as model_dir_lib
from task_space import cli


def test_cli_module_is_light_and_registers_the_model_type():
    code = ("import sys, task_space.cli, gnmt_tf.model_dir as m; "
            "assert 'tensorflow' not in sys.modules; "
            "assert 'task_space_transformer' in m.MODEL_TYPES")
    subprocess.run([sys.executable, "-c", code], check=True)
    assert "task_space_transformer" in model_dir_lib.MODEL_TYPES


def test_discovered_by_gnmt_tf_cli():
    from gnmt_tf.cli.main import build_parser

    args = build_parser().parse_args(
        ["task-space", "translate", "--model", "m", "--src-lang", "en",
         "--tgt-lang", "fr", "--tags", "caption,news"])
    assert args.func is cli.translate_from_args
    assert (args.src_lang, args.tgt_lang, args.tags) == ("en", "fr",
                                                        "caption,news")
    args = build_parser().parse_args(
        ["task-space", "train", "--model-dir", "d", "--directions",
         "all-except:fr-cs,cs-fr"])
    assert args.func is cli.train_from_args
    assert args.preset == "transformer_small"


def test_hook_helpers(tmp_path):
    assert cli.is_task_space_preset("transformer_small")
    assert not cli.is_task_space_preset("gnmt_small")
    assert not cli.is_task_space_model_dir(tmp_path)
    (tmp_path / "config.json").write_text(
        '{"model_type": "task_space_transformer"}')
    assert cli.is_task_space_model_dir(tmp_path)


def _gnmt_style_train_args(argv):
    """Parses as `gnmt-tf train` does (it adds the task-space options)."""
    from gnmt_tf.cli import train

    parser = argparse.ArgumentParser()
    train.register(parser.add_subparsers())
    return parser.parse_args(["train"] + argv)


@pytest.mark.parametrize("argv, message", [
    (["--set", "no_such_key=1"], "unknown setting 'no_such_key'"),
    (["--set", "num_heads=3"], "divisible by num_heads"),
    (["--tags", "poetry"], "unknown scene tag 'poetry'"),
    (["--directions", "en-xx"], "unknown language 'xx'"),
    (["--set", "languages=en,de", "--directions", "en-fr"],
     "unknown language 'fr'"),
])
def test_train_from_args_rejects_bad_settings_early(tmp_path, argv, message):
    args = _gnmt_style_train_args(
        ["--preset", "transformer_tiny", "--model-dir", str(tmp_path / "m"),
         "--data-dir", str(tmp_path)] + argv)
    with pytest.raises(ValueError, match=message):
        cli.train_from_args(args)
    assert not (tmp_path / "m" / "config.json").exists()


def test_translate_from_args_needs_languages(tmp_path):
    (tmp_path / "config.json").write_text(
        '{"model_type": "task_space_transformer", "model": '
        '{"vocabulary_size": 32, "num_layers": 1, "num_heads": 1, '
        '"hidden_dim": 4, "intermediate_dim": 4}, "task_space": {}}')
    from gnmt_tf.cli.main import main

    assert main(["task-space", "translate", "--model", str(tmp_path),
                 "--src-lang", "en"]) == 2
    with pytest.raises(ValueError, match="--src-lang and --tgt-lang"):
        cli.translate_from_args(argparse.Namespace(
            model=str(tmp_path), src_lang="en", tgt_lang=None, tags=None,
            beam_size=4, alpha=0.6, beta=0.0, beam_width=None,
            early_stopping="gnmt", n_best=1))
