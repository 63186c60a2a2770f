"""CPU settings chosen from measurements (gnmt_tf.cpu_settings)."""

import os
import subprocess
import sys

from gnmt_tf import cpu_settings

PROBE = """
import os
import gnmt_tf
from gnmt_tf import cpu_settings
first = cpu_settings.apply({batch}, {threads})
import tensorflow as tf
tf.constant(1.0) + 1.0  # the runtime starts: its pools are fixed now
late = cpu_settings.apply(1, 3)
print(first, tf.config.threading.get_intra_op_parallelism_threads(), late,
      os.environ["TF_ENABLE_ONEDNN_OPTS"])
"""


def _probe(batch, threads=None, env=None):
    environment = {k: v for k, v in os.environ.items()
                   if k != "TF_ENABLE_ONEDNN_OPTS"}
    environment.update(env or {})
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(batch=batch, threads=threads)],
        capture_output=True, text=True, env=environment, check=True)
    return out.stdout.split()


def test_thread_count_follows_the_batch_size():
    assert cpu_settings.intra_op_threads(1) == 1
    assert cpu_settings.intra_op_threads(32) is None
    assert cpu_settings.intra_op_threads(1, threads=2) == 2
    assert cpu_settings.intra_op_threads(32, threads=4) == 4


def test_apply_sets_the_pool_before_tensorflow_starts_only():
    # Batch 1: one thread; too late once TensorFlow has run an op.
    assert _probe(1) == ["1", "1", "None", "1"]
    # Batch 32: TensorFlow's default (0 = its own choice) is kept.
    assert _probe(32) == ["None", "0", "None", "1"]
    # A user's choice wins, for threads and for oneDNN.
    assert _probe(32, 2, {"TF_ENABLE_ONEDNN_OPTS": "0"}) == [
        "2", "2", "None", "0"]


def test_tflite_threads_are_the_process_cores_up_to_the_cap(monkeypatch):
    assert cpu_settings.tflite_threads(3) == 3  # given: kept
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    assert cpu_settings.tflite_threads() == 2
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)))
    assert cpu_settings.tflite_threads() == cpu_settings.MAX_TFLITE_THREADS
