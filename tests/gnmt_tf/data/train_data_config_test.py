"""`gnmt-tf train --data-config`: a task-space Transformer and a GNMT
trained on prepared shards, end to end through the CLI."""

import json
import os
import subprocess
import sys

import pytest
import yaml

import parallel_corpora as pc

EN = ["A man rides a bike.", "Two cats sleep.", "A dog runs in the park.",
      "The child plays with a ball.", "Three women are talking."]
DE = ["Ein Mann fährt Fahrrad.", "Zwei Katzen schlafen.",
      "Ein Hund rennt im Park.", "Das Kind spielt mit einem Ball.",
      "Drei Frauen unterhalten sich."]


def _gnmt_tf(*args):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    return subprocess.run([sys.executable, "-m", "gnmt_tf.cli.main", *args],
                          capture_output=True, text=True, env=env)


def _train_tiny_transformer(model_dir, data_config, steps):
    """`gnmt-tf train` of a tiny Transformer on the shards, to `steps`
    (checkpoints every 2 steps; again with more steps: a resume)."""
    return _gnmt_tf("train", "--preset", "transformer_tiny",
                    "--model-dir", str(model_dir),
                    "--data-config", str(data_config),
                    "--set", "vocabulary_size=60",
                    "--set", f"train_steps={steps}",
                    "--set", "max_length=40",
                    "--set", "max_sequence_length=48",
                    "--set", "checkpoint_every=2", "--log-every", "1000")


@pytest.fixture(scope="module")
def data_config(tmp_path_factory):
    base = tmp_path_factory.mktemp("train_data")
    pc.write_text_pair(base, "a", list(zip(EN, DE)))
    pc.write_tsv(base / "b.tsv", list(zip(DE, EN)))
    path = base / "data.yaml"
    path.write_text(yaml.safe_dump({"prepared": "prepared", "corpora": [
        {"src_lang": "en", "tgt_lang": "de", "format": "text",
         "source": "a.en", "target": "a.de"},
        {"src_lang": "de", "tgt_lang": "en", "format": "tsv",
         "path": "b.tsv", "weight": 0.5}]}))
    result = _gnmt_tf("data", "prepare", "--data-config", str(path),
                      "--shard-size", "2")
    assert result.returncode == 0, result.stderr
    return path


def test_train_two_steps_writes_a_checkpoint(data_config, tmp_path):
    model_dir = tmp_path / "model"
    result = _train_tiny_transformer(model_dir, data_config, steps=2)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "trained to step 2" in result.stdout
    assert "training on 2 directions (en-de,de-en), 10 pairs" in result.stderr
    assert list((model_dir / "checkpoints").glob("*.index"))
    payload = json.loads((model_dir / "config.json").read_text())
    options = payload["task_space"]
    assert options["directions"] == "en-de,de-en"
    assert options["data"] == str((data_config.parent / "prepared").resolve())
    assert (model_dir / "spm.model").exists()
    # The input stream's position is saved with the checkpoint, and a
    # resumed run goes on from it (tests/gnmt_tf/training/input_position_test.py).
    assert "cannot save the input position" not in result.stderr
    assert (model_dir / "checkpoints" / "input" / "worker-0-2.index").exists()
    result = _train_tiny_transformer(model_dir, data_config, steps=4)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "input stream resumed at step 2" in result.stderr
    assert "trained to step 4" in result.stdout


def test_gnmt_refuses_corpora_of_other_directions(data_config, tmp_path):
    result = _gnmt_tf("train", "--preset", "gnmt_tiny", "--model-dir",
                      str(tmp_path / "m"), "--data-config", str(data_config))
    assert result.returncode == 2
    assert "corpora in de-en; a GNMT translates one direction (en-de" in \
        result.stderr
    assert not (tmp_path / "m").exists()


def test_gnmt_trains_on_shards(tmp_path):
    pc.write_text_pair(tmp_path, "a", list(zip(EN, DE)))
    path = tmp_path / "data.yaml"
    path.write_text(yaml.safe_dump({"prepared": "prepared", "corpora": [
        {"src_lang": "en", "tgt_lang": "de", "format": "text",
         "source": "a.en", "target": "a.de"}]}))
    assert _gnmt_tf("data", "prepare", "--data-config", str(path),
                    "--shard-size", "2").returncode == 0
    model_dir = tmp_path / "model"
    result = _gnmt_tf("train", "--preset", "gnmt_tiny", "--model-dir",
                      str(model_dir), "--data-config", str(path),
                      "--set", "vocabulary_size=60", "--set", "train_steps=2",
                      "--set", "checkpoint_every=2", "--log-every", "1000")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "trained to step 2" in result.stdout
    payload = json.loads((model_dir / "config.json").read_text())
    assert payload["model_type"] == "gnmt"
    assert payload["data"] == str((tmp_path / "prepared").resolve())
    assert (payload["src_lang"], payload["tgt_lang"]) == ("en", "de")
    assert list((model_dir / "checkpoints").glob("*.index"))


def test_unprepared_data_config(tmp_path):
    path = tmp_path / "data.yaml"
    (tmp_path / "x.tsv").write_text("a\tb\n")
    path.write_text(yaml.safe_dump({"prepared": "nowhere", "corpora": [
        {"src_lang": "en", "tgt_lang": "de", "format": "tsv",
         "path": "x.tsv"}]}))
    result = _gnmt_tf("train", "--preset", "transformer_tiny", "--model-dir",
                      str(tmp_path / "m"), "--data-config", str(path))
    assert result.returncode == 2
    assert "holds no prepared data" in result.stderr
    assert not (tmp_path / "m").exists()


def test_vocab_from_a_sample_of_the_shards(data_config, tmp_path):
    result = _gnmt_tf("vocab", "--data-config", str(data_config),
                      "--max-sentences", "8", "--vocab-size", "40",
                      "--model-prefix", str(tmp_path / "spm"))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "spm.model").exists()
    result = _gnmt_tf("vocab", "--data-config", str(data_config),
                      "--max-sentences", "0", "--model-prefix",
                      str(tmp_path / "x"))
    assert result.returncode == 2
    assert "argument --max-sentences: must be" in result.stderr
