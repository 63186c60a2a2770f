"""Tests for gnmt_tf.cli.task_space: discovery, hooks, early argument errors."""

import argparse
import subprocess
import sys

import pytest

from gnmt_tf.cli import task_space as cli


def test_cli_module_is_light_and_the_model_type_is_declared():
    code = ("import sys, gnmt_tf.cli.task_space, gnmt_tf.model_types as m; "
            "assert 'task_space_transformer' in m.model_types(); "
            "assert 'tensorflow' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_discovered_by_gnmt_tf_cli():
    from gnmt_tf.cli.main import build_parser

    args = build_parser().parse_args(
        ["task-space", "translate", "--model", "m", "--src-lang", "en",
         "--tgt-lang", "fr", "--tags", "caption,news"])
    from gnmt_tf.cli import translate

    # The old spelling runs the same command, after a deprecation line.
    assert args.func.__wrapped__ is translate.run
    assert (args.src_lang, args.tgt_lang, args.tags) == ("en", "fr",
                                                        "caption,news")
    args = build_parser().parse_args(
        ["task-space", "train", "--model-dir", "d", "--directions",
         "all-except:fr-cs,cs-fr"])
    assert args.func.__wrapped__ is cli.train_from_args
    assert args.preset == "transformer_small"


def test_presets_name_the_model_type():
    from gnmt_tf.model_types import model_type_of_preset

    assert model_type_of_preset("transformer_small")[1].train == (
        "gnmt_tf.cli.task_space:train_from_args")
    assert model_type_of_preset("gnmt_small")[0] == "gnmt"


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
