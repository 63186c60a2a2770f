"""Training a model directory with `model.fit`: vocabulary, data, strategy,
checkpoints every N steps, resume after a kill, wall-time budget."""

import dataclasses
import json
import math
import pathlib
import sys

import tensorflow as tf
import tf_keras as keras

from gnmt_tf import model_dir as model_dir_lib
from gnmt_tf.io_utils import copy_file_atomic
from gnmt_tf.text.subword import Subwords, train_sentencepiece
from gnmt_tf.training import callbacks as callbacks_lib
from gnmt_tf.training import init_from as init_lib
from gnmt_tf.training import workers
from gnmt_tf.training.input_position import INPUT_DIR, InputPosition
from gnmt_tf.training.losses import MaskedAccuracy, MaskedCrossEntropy, TargetTokens
from gnmt_tf.training.schedules import WarmupRsqrtDecay
from gnmt_tf.training.summaries import TrainingRecord
from gnmt_tf.training.validation_bleu import ValidationBleu

STRATEGIES = ("default", "mirrored", "multi_worker_mirrored")


def make_strategy(name="default"):
    """Returns the `tf.distribute` strategy named `name` (or `name` itself
    when it is already a strategy).

    `multi_worker_mirrored` reads the cluster from the `TF_CONFIG` environment
    variable, so the same command scales past one machine; it must be made
    before the process runs any TensorFlow op, and only its chief writes the
    model directory (`gnmt_tf.training.workers`).
    """
    if isinstance(name, tf.distribute.Strategy):
        return name
    if name == "default":
        return tf.distribute.get_strategy()
    if name == "mirrored":
        return tf.distribute.MirroredStrategy()
    if name == "multi_worker_mirrored":
        return tf.distribute.MultiWorkerMirroredStrategy()
    raise ValueError(f"unknown strategy {name!r}; known: {', '.join(STRATEGIES)}")


@dataclasses.dataclass
class TrainResult:
    """What a training run did."""

    steps: int
    seconds: float
    target_tokens_per_s: float
    resumed_from: str = None


def prepare_vocabulary(model_dir, sentences, vocabulary_size, vocab=None,
                       user_defined_symbols=(), write=True):
    """Puts a SentencePiece model at `model_dir/spm.model` (copy or train).

    With `write=False` (a worker other than the multi-worker chief) it only
    reads the one the chief put there.
    """
    target = pathlib.Path(model_dir) / model_dir_lib.VOCAB_FILE
    if target.exists():
        return Subwords(target)
    if not write:
        raise FileNotFoundError(
            f"{target} is missing after the chief prepared it: every worker "
            "must see the same model directory (a shared file system)")
    target.parent.mkdir(parents=True, exist_ok=True)
    if vocab:
        copy_file_atomic(vocab, target)
    else:
        print(f"training a {vocabulary_size}-piece SentencePiece vocabulary",
              file=sys.stderr)
        train_sentencepiece(sentences, target.with_suffix(""), vocabulary_size,
                            user_defined_symbols=user_defined_symbols)
    return Subwords(target)


def compile_model(model, train_config, pad_id=0):
    optimizer = keras.optimizers.Adam(
        WarmupRsqrtDecay(train_config.learning_rate, train_config.warmup_steps),
        clipnorm=train_config.clip_norm)
    model.compile(
        optimizer=optimizer,
        loss=MaskedCrossEntropy(train_config.label_smoothing, pad_id),
        metrics=[MaskedAccuracy(pad_id), TargetTokens(pad_id)],
        jit_compile=train_config.jit_compile)
    return optimizer


def fit(model, train_config, dataset, model_dir, validation_data=None,
        extra_callbacks=(), log_every=100, bleu_sample=None, subwords=None,
        init_weights=None):
    """Runs `model.fit` with checkpoints and resume; the model must be compiled.

    Training loss, learning rate and tokens/s (every `log_every` steps),
    the loss on `validation_data` (every checkpoint interval) and the BLEU
    of `bleu_sample` (every `train_config.bleu_every` steps, given the
    model's `subwords`) are printed and recorded in `model_dir/logs`
    (TensorBoard) and `model_dir/metrics.csv`
    (`gnmt_tf.training.summaries`).
    `init_weights`, a function returning `model.get_weights()`-ordered
    arrays, gives the starting weights of a run with no checkpoint yet
    (`gnmt_tf.training.init_from`).

    Returns:
      `TrainResult`.
    """
    strategy = model.distribute_strategy
    chief = workers.is_chief(strategy)
    with workers.worker_scratch_dir(model_dir, chief) as write_dir:
        return _fit(model, train_config, dataset, model_dir, write_dir, chief,
                    validation_data, extra_callbacks, log_every, bleu_sample,
                    subwords, init_weights)


def _fit(model, train_config, dataset, model_dir, write_dir, chief,
         validation_data, extra_callbacks, log_every, bleu_sample, subwords,
         init_weights):
    """`fit`, writing checkpoints and progress into `write_dir` (the model
    directory on the chief, a scratch directory on other workers)."""
    optimizer = model.optimizer
    model(model.dummy_inputs())
    optimizer.build(model.trainable_variables)
    checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)
    manager = tf.train.CheckpointManager(
        checkpoint, str(pathlib.Path(write_dir) / model_dir_lib.CHECKPOINT_DIR),
        max_to_keep=train_config.keep_checkpoints if chief else 1)
    # Every worker resumes from the chief's checkpoint.
    resumed = model_dir_lib.restore_latest(checkpoint, model_dir,
                                           expect_partial=False)
    if resumed is None and init_weights is not None:
        model.set_weights(init_weights())
    step = int(optimizer.iterations.numpy())
    previous = callbacks_lib.read_progress(
        pathlib.Path(model_dir) / "progress.json")
    progress_path = pathlib.Path(write_dir) / "progress.json"
    if not chief:  # the scratch copy starts from the chief's totals
        progress_path.write_text(json.dumps(previous) + "\n")
    if train_config.max_minutes and previous["train_seconds"] >= 60 * train_config.max_minutes:
        print(f"time budget of {train_config.max_minutes} min already spent",
              file=sys.stderr)
        return TrainResult(step, 0.0, 0.0, resumed)
    if resumed:
        print(f"resuming from {resumed} (step {step})", file=sys.stderr)
    if step >= train_config.train_steps:
        print(f"already trained {step} steps", file=sys.stderr)
        return TrainResult(step, 0.0, 0.0, resumed)

    steps_per_epoch = train_config.checkpoint_every
    epochs = math.ceil(train_config.train_steps / steps_per_epoch)
    record = TrainingRecord(model_dir, resume_step=step) if chief else None
    progress = callbacks_lib.ProgressLogger(
        every=log_every, record=record.record if record else None)
    callbacks = [progress,
                 callbacks_lib.StepCheckpoint(manager, train_config.checkpoint_every,
                                              progress_path, progress),
                 InputPosition(
                     pathlib.Path(model_dir) / model_dir_lib.CHECKPOINT_DIR
                     / INPUT_DIR, train_config.checkpoint_every, step,
                     worker=workers.data_position(model.distribute_strategy)[0],
                     keep=train_config.keep_checkpoints),
                 callbacks_lib.StopAtStep(train_config.train_steps),
                 callbacks_lib.ValidationReport(
                     record.record if record else None),
                 *extra_callbacks]
    if chief and train_config.bleu_every and bleu_sample and len(bleu_sample):
        callbacks.append(ValidationBleu(
            bleu_sample, subwords, train_config.bleu_every, record.record,
            payload=model_dir_lib.read_config(model_dir)))
    if train_config.max_minutes:
        callbacks.append(callbacks_lib.TimeBudget(
            train_config.max_minutes, previous["train_seconds"]))
    if model.cell_clip is not None:
        callbacks.append(callbacks_lib.DeltaAnnealing(
            model.cell_clip, train_config.delta_start, train_config.delta_end,
            train_config.delta_anneal_steps))
    try:
        model.fit(dataset, epochs=epochs, initial_epoch=step // steps_per_epoch,
                  steps_per_epoch=steps_per_epoch, callbacks=callbacks,
                  validation_data=validation_data, verbose=0)
    finally:
        if record is not None:
            record.close()
    final_step = int(optimizer.iterations.numpy())
    total = callbacks_lib.read_progress(progress_path)
    rate = total["target_tokens"] / max(total["train_seconds"], 1e-9)
    return TrainResult(final_step, total["train_seconds"], rate, resumed)


def init_weights_of(payload):
    """The `fit(init_weights=...)` of a run whose config records an
    `--init-from` source, else None."""
    record = payload.get(init_lib.INIT_KEY)
    if record is None:
        return None
    return lambda: init_lib.initial_weights(record)
