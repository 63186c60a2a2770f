"""Who writes what when several workers train one model
(`--strategy multi_worker_mirrored`).

Conventions of the TensorFlow multi-worker guide, applied to a model
directory:

- The *chief* is the `TF_CONFIG` task of type `chief`, or worker 0 when the
  cluster has no chief. A run without `TF_CONFIG` (one process) is its own
  chief. Only the chief claims `MODEL_DIR/.lock`
  (`gnmt_tf.training.model_dir_guard`), trains or copies the vocabulary and
  writes `config.json`, `spm.model`, `progress.json`, `metrics.csv`, `logs/`
  and `checkpoints/`; the other workers would deadlock on the lock, or race
  the chief's writes.
- Saving a checkpoint may run collective ops, so every worker saves at the
  same steps: the chief into `MODEL_DIR/checkpoints`, the others into a
  temporary directory of their own (`worker_scratch_dir`) that is deleted
  when training ends.
- `MODEL_DIR` must be one directory every worker sees (one machine, or a
  shared file system): the workers read the chief's `config.json` and
  `spm.model` after a `barrier`, and every worker restores the chief's
  latest checkpoint on resume. That restore is the preemption handling: a
  preempted cluster restarts every worker with the same command and they
  continue from the last checkpoint interval, which is what
  `keras.callbacks.BackupAndRestore` does with its backup directory.
- Decisions to stop early must be the same on every worker, or the others
  wait forever in the next step's all-reduce: `any_worker` agrees on one.
"""

import contextlib
import pathlib
import shutil
import tempfile

import tensorflow as tf


def is_multi_worker(strategy) -> bool:
    """Whether `strategy` spans more than one worker process."""
    extended = getattr(strategy, "extended", None)
    check = getattr(extended, "_in_multi_worker_mode", None)
    return bool(check and check())


def is_chief(strategy) -> bool:
    """Whether this process writes the model directory (see the module doc)."""
    if not is_multi_worker(strategy):
        return True
    resolver = strategy.cluster_resolver
    if resolver.task_type == "chief":
        return True
    cluster = resolver.cluster_spec().as_dict()
    return (resolver.task_type == "worker" and resolver.task_id == 0
            and "chief" not in cluster)


def data_position(strategy) -> tuple:
    """`(index, count)`: this process's place among the worker processes
    that read training data (`(0, 1)` on one machine). Chief first, then
    the workers in task order, so every process computes the same split."""
    if not is_multi_worker(strategy):
        return 0, 1
    resolver = strategy.cluster_resolver
    cluster = resolver.cluster_spec().as_dict()
    order = [(job, index) for job in ("chief", "worker") if job in cluster
             for index in range(len(cluster[job]))]
    return order.index((resolver.task_type, resolver.task_id)), len(order)


def _all_reduce_sum(strategy, value):
    """The sum of `value` (a float) over all workers."""
    per_replica = strategy.run(lambda: tf.constant(float(value)))
    return float(strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica,
                                 axis=None))


def barrier(strategy):
    """Returns once every worker has called it (a no-op for one worker)."""
    if is_multi_worker(strategy):
        _all_reduce_sum(strategy, 0.0)


def any_worker(strategy, flag) -> bool:
    """`flag` or-ed over all workers: the same answer on each of them."""
    if not is_multi_worker(strategy):
        return bool(flag)
    return _all_reduce_sum(strategy, 1.0 if flag else 0.0) > 0.0


@contextlib.contextmanager
def worker_scratch_dir(model_dir, chief):
    """Yields where this worker writes checkpoints and progress: `model_dir`
    for the chief, else a temporary directory removed afterwards."""
    if chief:
        yield pathlib.Path(model_dir)
        return
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="gnmt_tf_worker_"))
    try:
        yield scratch
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def claim_for_training(model_dir, chief):
    """`claim_model_dir(model_dir)` on the chief; a plain context elsewhere
    (the chief holds the lock for the whole cluster)."""
    from gnmt_tf.training.model_dir_guard import claim_model_dir

    if chief:
        return claim_model_dir(model_dir)
    return contextlib.nullcontext(pathlib.Path(model_dir))
