"""`train_gnmt` with `multi_worker_mirrored`: two worker processes on
127.0.0.1 (`TF_CONFIG`) train one tiny model directory; they end with the
same weights and only the chief (worker 0) writes the directory."""

import json
import os
import pathlib
import socket
import subprocess
import sys

import numpy as np
import pytest

from gnmt_tf.training import workers

ROOT = pathlib.Path(__file__).resolve().parents[3]

# One worker: trains, then saves its final weights to argv[3] (the scratch
# checkpoints of worker 1 are gone by then, so they are read off the model).
_WORKER = """
import sys

import numpy as np

from gnmt_tf.config import apply_overrides
from gnmt_tf.models.gnmt.presets import get_preset
from gnmt_tf.models.gnmt import training as gnmt_training
from gnmt_tf.training import trainer

model_dir, data_dir, weights_path = sys.argv[1:4]
fit = trainer.fit


def fit_and_save(model, *args, **kwargs):
    result = fit(model, *args, **kwargs)
    np.savez(weights_path, *model.get_weights())
    return result


trainer.fit = fit_and_save
model_config, train_config = get_preset("gnmt_tiny")
model_config = apply_overrides(model_config, ["vocabulary_size=100"])
train_config = apply_overrides(train_config, [
    "train_steps=6", "checkpoint_every=3", "bleu_every=3", "bleu_lines=4"])
result = gnmt_training.train_gnmt(model_dir, data_dir, "en", "de", model_config,
                                     train_config, strategy="multi_worker_mirrored",
                                     log_every=3)
print("steps", result.steps, flush=True)
"""


def _free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for sock in sockets:
        sock.bind(("127.0.0.1", 0))
    ports = [sock.getsockname()[1] for sock in sockets]
    for sock in sockets:
        sock.close()
    return ports


def test_one_process_is_its_own_chief():
    import tensorflow as tf

    strategy = tf.distribute.get_strategy()
    assert not workers.is_multi_worker(strategy)
    assert workers.is_chief(strategy)
    assert workers.any_worker(strategy, True)
    assert not workers.any_worker(strategy, False)
    workers.barrier(strategy)  # returns at once


def test_worker_scratch_dir_is_removed(tmp_path):
    with workers.worker_scratch_dir(tmp_path, chief=True) as where:
        assert where == tmp_path
    with workers.worker_scratch_dir(tmp_path, chief=False) as where:
        assert where != tmp_path and where.is_dir()
        (where / "checkpoint").write_text("x")
    assert not where.exists() and tmp_path.exists()


@pytest.mark.slow
def test_two_workers_share_weights_and_only_the_chief_writes(
        toy_data_dir, tmp_path):
    model_dir = tmp_path / "model"
    cluster = {"worker": [f"127.0.0.1:{p}" for p in _free_ports(2)]}
    procs = []
    for index in range(2):
        scratch = tmp_path / f"tmp{index}"  # each worker's TMPDIR
        scratch.mkdir()
        env = dict(os.environ, TMPDIR=str(scratch),
                   PYTHONPATH=os.pathsep.join(
                       filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
                   TF_CONFIG=json.dumps({"cluster": cluster, "task": {
                       "type": "worker", "index": index}}),
                   CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="2")
        procs.append(subprocess.Popen(
            [sys.executable, "-c", _WORKER, str(model_dir),
             str(toy_data_dir), str(tmp_path / f"weights{index}.npz")],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True))
    outputs = []
    try:
        for proc in procs:
            outputs.append(proc.communicate(timeout=600)[0])
    finally:
        for proc in procs:
            proc.kill()
    for proc, output in zip(procs, outputs):
        assert proc.returncode == 0, output[-3000:]
        assert "steps 6" in output, output[-3000:]

    chief, other = (np.load(tmp_path / f"weights{i}.npz") for i in range(2))
    assert len(chief.files) == len(other.files) > 0
    for name in chief.files:
        np.testing.assert_array_equal(chief[name], other[name])

    # The model directory is the chief's: one run's files, once each.
    names = sorted(p.name for p in model_dir.iterdir())
    assert names == [".lock", "checkpoints", "config.json", "logs",
                     "metrics.csv", "progress.json", "spm.model", "spm.vocab"]
    checkpoints = sorted(p.name for p in (model_dir / "checkpoints").iterdir()
                         if p.suffix == ".index")
    assert checkpoints == ["ckpt-3.index", "ckpt-6.index"]
    assert json.loads((model_dir / "progress.json").read_text())["step"] == 6
    # BLEU and progress rows appear once per step: one writer.
    rows = (model_dir / "metrics.csv").read_text().splitlines()[1:]
    assert len(rows) == len(set(rows)) and rows
    # Worker 1's scratch checkpoints were deleted; the BLEU is the chief's.
    assert list((tmp_path / "tmp1").iterdir()) == []
    assert "BLEU" in outputs[0] and "BLEU" not in outputs[1]
