"""Checkpoint averaging and shippable weight files, on the tiny GNMT run
(checkpoints at steps 200, 400 and 600)."""

import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from gnmt_tf import model_dir as model_dir_lib
from gnmt_tf.training.averaging import average_checkpoints, checkpoint_paths
from gnmt_tf.weights_file import load_weights, save_weights


def _weights_at(model_dir, path):
    model, _ = model_dir_lib.build_model(model_dir)
    model(model.dummy_inputs())
    tf.train.Checkpoint(model=model).restore(path).expect_partial()
    return model.get_weights()


def _snapshot(directory):
    return {p: (p.stat().st_size, p.stat().st_mtime_ns)
            for p in directory.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def last_two(tiny_model_dir):
    paths = checkpoint_paths(tiny_model_dir, 2)
    assert [p.rsplit("-", 1)[1] for p in paths] == ["400", "600"]
    return [_weights_at(tiny_model_dir, p) for p in paths]


def test_average_is_the_mean_of_the_last_checkpoints(tiny_model_dir, tmp_path,
                                                     last_two):
    before = _snapshot(tiny_model_dir)
    out = tmp_path / "avg"
    average_checkpoints(tiny_model_dir, out, last=2)
    model, _, _ = model_dir_lib.load_model(out)
    expected = [(a.astype(np.float64) + b) / 2 for a, b in zip(*last_two)]
    for got, want in zip(model.get_weights(), expected):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    # Training moved the weights, so the mean is not the last checkpoint.
    assert any(not np.allclose(got, last) for got, last in
               zip(model.get_weights(), last_two[1]))
    assert _snapshot(tiny_model_dir) == before  # the run is only read
    assert not (out / "progress.json").exists()
    umask = os.umask(0)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o777 & ~umask  # not mkdtemp's 0700
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["averaged.json", "checkpoints", "config.json", "spm.model",
         "spm.vocab"])


def test_weights_only_output_loads_within_float16_rounding(
        tiny_model_dir, tmp_path, last_two):
    out = tmp_path / "shippable"
    average_checkpoints(tiny_model_dir, out, last=1, weights_only=True)
    assert (out / model_dir_lib.WEIGHTS_FILE).exists()
    assert not (out / model_dir_lib.CHECKPOINT_DIR).exists()
    model, _, _ = model_dir_lib.load_model(out)
    for got, want in zip(model.get_weights(), last_two[1]):
        # float16 keeps 11 significant bits (and flushes below ~6e-8).
        np.testing.assert_allclose(got, want, rtol=2.0**-11, atol=6e-8)


def test_existing_output_and_missing_checkpoints_are_refused(
        tiny_model_dir, tmp_path):
    with pytest.raises(FileExistsError, match="exists"):
        average_checkpoints(tiny_model_dir, tmp_path, last=2)
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "config.json").write_text(
        (tiny_model_dir / "config.json").read_text())
    with pytest.raises(FileNotFoundError, match="no checkpoints"):
        average_checkpoints(empty, tmp_path / "out")
    with pytest.raises(ValueError, match="last"):
        average_checkpoints(tiny_model_dir, tmp_path / "out2", last=0)


def test_weights_file_checks_what_it_loads(tiny_model_dir, tmp_path):
    model, _, _ = model_dir_lib.load_model(tiny_model_dir)
    path = tmp_path / "w.npz"
    save_weights(model, path)
    fewer = tf.keras.Sequential([tf.keras.layers.Dense(2)])
    fewer.build((None, 3))
    with pytest.raises(ValueError, match="holds .* weights, the model has"):
        load_weights(fewer, path)
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="not a weights file"):
        load_weights(model, tmp_path / "bad.npz")


def test_cli_average_and_models(tiny_model_dir, tmp_path):
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    cli = [sys.executable, "-m", "gnmt_tf.cli.main"]
    ok = subprocess.run(cli + ["average-checkpoints", "--model-dir",
                               str(tiny_model_dir), "--output",
                               str(tmp_path / "avg"), "--last", "3"],
                        capture_output=True, text=True, env=env)
    assert ok.returncode == 0, ok.stderr
    assert "averaged 3 checkpoints (ckpt-200, ckpt-400, ckpt-600)" in ok.stdout
    again = subprocess.run(cli + ["average-checkpoints", "--model-dir",
                                  str(tiny_model_dir), "--output",
                                  str(tmp_path / "avg")],
                           capture_output=True, text=True, env=env)
    assert again.returncode == 2
    assert again.stderr == ("gnmt-tf average-checkpoints: error: "
                            f"{tmp_path / 'avg'} exists; give a new "
                            "directory\n")
    listed = subprocess.run(cli + ["models"], capture_output=True, text=True,
                            env=env)
    assert listed.returncode == 0, listed.stderr


def test_unknown_model_name_lists_the_shipped_ones():
    with pytest.raises(FileNotFoundError,
                       match="not a model directory nor the name of a "
                             "shipped model"):
        model_dir_lib.load_model("no-such-model")
