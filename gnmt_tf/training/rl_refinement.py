"""GNMT's RL refinement (Wu et al. 2016, §5): fine-tune an ML-trained model
on the expected sentence-level GLEU reward.

The paper's mixed objective is `O_mixed = alpha * O_ML + O_RL` with
`O_ML = sum_i log P(Y*_i | X_i)` and `O_RL = sum_i sum_Y P(Y | X_i) r(Y, Y*_i)`
(`alpha = 0.017`). Per batch, the loss minimised here is

    alpha * mean_i(-log P(Y*_i | X_i))
      - mean_{i,k}((r(Y_ik) - b_i) * log P(Y_ik | X_i))

where `Y_i1..Y_iK` are `K` hypotheses per source (drawn in the graph from
the model's own distribution, or its beam search's `K`-best), `r` is their
sentence GLEU against the reference on words (`gnmt_tf.evaluation.gleu`)
and the baseline `b_i` is the mean reward of sentence `i`'s hypotheses,
which keeps the REINFORCE gradient unbiased and lowers its variance.

It runs through `model.fit` for any model type (GNMT, the task-space
Transformer) whose `ModelType.finetune_data` names its training data:
`rl_train_step` replaces the model's `train_step`, and
`gnmt_tf.training.trainer.fit` gives the usual checkpoints, progress,
resume and `--minutes` budget. The ML model directory is never written:
`refine_rl` writes a new model directory (default `<model_dir>-rl`), which
every model-directory reader opens and which a rerun resumes.
"""

import dataclasses
import functools
import os
import pathlib
import sys

import numpy as np
import tensorflow as tf
import tf_keras as keras

from gnmt_tf import model_dir as model_dir_lib
from gnmt_tf import model_types
from gnmt_tf.checks import check_number
from gnmt_tf.config import TrainConfig, apply_overrides, from_dict
from gnmt_tf.decoding.beam_search import beam_search, flatten_beams, tile_beams
from gnmt_tf.decoding.sampling import sample_search
from gnmt_tf.evaluation.gleu import sentence_gleu
from gnmt_tf.io_utils import copy_file_atomic

ALPHA = 0.017  # the paper's weight of the ML objective
SAMPLERS = ("sample", "beam")
CONFIG_KEY = "rl_refinement"  # its entry in the refined directory's config


@dataclasses.dataclass(frozen=True)
class RLOptions:
    """How the RL objective is estimated.

    Attributes:
      alpha: float in [0, 1]. Weight of the ML objective (paper: 0.017;
        0 is pure RL).
      num_samples: int >= 2. Hypotheses per source sentence; the baseline
        is their mean reward, so one hypothesis would give no signal.
      sampler: "sample" (ancestral sampling from the model) or "beam" (the
        `num_samples`-best list of beam search).
      max_length_ratio: float > 0. A hypothesis may be at most this times
        its source's length in subwords (as in translation).
    """

    alpha: float = ALPHA
    num_samples: int = 4
    sampler: str = "sample"
    max_length_ratio: float = 2.0

    def __post_init__(self):
        check_number("alpha", self.alpha, minimum=0, maximum=1)
        check_number("num_samples", self.num_samples, integer=True, minimum=2)
        check_number("max_length_ratio", self.max_length_ratio, above=0)
        if self.sampler not in SAMPLERS:
            raise ValueError(f"sampler must be one of {', '.join(SAMPLERS)}, "
                             f"got {self.sampler!r}")


def gleu_rewards(hypotheses, references, num_samples, subwords, eos_id,
                 pad_id=0):
    """Sentence GLEU of each hypothesis against its source's reference, on
    the detokenised words (NumPy; `tf.numpy_function` calls it in the graph).

    Args:
      hypotheses: int `[B * K, T]` ids; row `b * K + k` is hypothesis `k`
        of sentence `b`; a row ends at its first end token or pad.
      references: int `[B, T']` reference ids (labels: end token, pads).
      num_samples: int `K`.
      subwords: the model's `Subwords`.
      eos_id, pad_id: ints.

    Returns:
      float32 `[B * K]` rewards in [0, 1].
    """
    def words(row):
        row = [int(i) for i in row]
        for stop in (eos_id, pad_id):
            if stop in row:
                row = row[:row.index(stop)]
        return row

    hyp_text = subwords.decode([words(r) for r in hypotheses])
    ref_text = subwords.decode([words(r) for r in references])
    return np.array([sentence_gleu(h, ref_text[i // num_samples])
                     for i, h in enumerate(hyp_text)], np.float32)


def draw_hypotheses(model, features, options: RLOptions):
    """`K` hypotheses per source of a training batch, without gradients.

    Args:
      model: a `gnmt_tf.seq2seq_model.Seq2SeqModel`.
      features: the batch's features: `source_ids [B, S]` and the model's
        task inputs by name.
      options: `RLOptions`.

    Returns:
      `(ids [B * K, T], lengths [B * K])`: row `b * K + k` is hypothesis
      `k` of sentence `b`, ids 0-padded after its end token; length 0 marks
      an empty slot of a short beam n-best list.
    """
    config = model.config
    source_ids = tf.cast(features["source_ids"], tf.int32)
    task = {t.name: features[t.name] for t in model.task_inputs()}
    source_lengths = tf.reduce_sum(
        tf.cast(tf.not_equal(source_ids, config.pad_id), tf.int32), axis=1)
    max_lengths = tf.cast(tf.math.ceil(options.max_length_ratio * tf.cast(
        source_lengths, tf.float32)), tf.int32)
    if model.max_target_length:
        max_lengths = tf.minimum(max_lengths, model.max_target_length)
    max_lengths = tf.maximum(max_lengths, 1)
    encoded = model.encode(source_ids, **task)
    state = model.initial_state(encoded, tf.reduce_max(max_lengths))
    batch = tf.shape(source_ids)[0]
    k = options.num_samples
    if options.sampler == "sample":
        result = sample_search(model.step, tile_beams(state, k),
                               tf.fill([batch * k], config.bos_id),
                               config.eos_id, tf.repeat(max_lengths, k))
        ids, lengths = result.ids[:, 0], result.lengths[:, 0]
    else:
        result = beam_search(model.step, state, tf.fill([batch], config.bos_id),
                             config.eos_id, k, max_lengths,
                             source_lengths=source_lengths, num_hypotheses=k)
        ids, lengths = flatten_beams(result.ids), flatten_beams(result.lengths)
    return tf.stop_gradient(ids), tf.stop_gradient(lengths)


def sequence_log_probs(logits, ids, lengths):
    """`log P(ids | ...)` per row: the log-softmax of `logits [N, T, V]` at
    `ids [N, T]`, summed over the first `lengths [N]` positions -> `[N]`."""
    log_probs = tf.nn.log_softmax(tf.cast(logits, tf.float32))
    token = tf.gather(log_probs, ids, batch_dims=2)                  # [N, T]
    mask = tf.sequence_mask(lengths, tf.shape(ids)[1], tf.float32)
    return tf.reduce_sum(token * mask, axis=1)


def mixed_loss(alpha, reference_log_probs, hypothesis_log_probs, rewards,
               valid, num_samples):
    """The mixed objective's loss (see the module doc).

    Args:
      alpha: float. Weight of the ML term.
      reference_log_probs: `[B]` log P(Y* | X) (with gradient).
      hypothesis_log_probs: `[B * K]` log P(Y_k | X) (with gradient).
      rewards: `[B * K]` rewards (constants).
      valid: bool `[B * K]`: False for empty n-best slots (no reward, no
        part in the baseline).
      num_samples: int `K`.

    Returns:
      `(loss, ml_loss, rl_loss)` scalars.
    """
    valid = tf.reshape(tf.cast(valid, tf.float32), [-1, num_samples])
    rewards = tf.reshape(rewards, [-1, num_samples]) * valid
    count = tf.maximum(tf.reduce_sum(valid, axis=1, keepdims=True), 1.0)
    baseline = tf.reduce_sum(rewards, axis=1, keepdims=True) / count
    advantage = tf.stop_gradient((rewards - baseline) * valid)       # [B, K]
    log_probs = tf.reshape(hypothesis_log_probs, [-1, num_samples])
    rl_loss = -tf.reduce_sum(advantage * log_probs) / tf.maximum(
        tf.reduce_sum(valid), 1.0)
    ml_loss = -tf.reduce_mean(reference_log_probs)
    return alpha * ml_loss + rl_loss, ml_loss, rl_loss


def rl_train_step(model, options: RLOptions, reward_fn, data):
    """One optimizer step on the mixed objective (a Keras `train_step`).

    Args:
      model: a compiled `Seq2SeqModel` whose `call` takes the features dict.
      options: `RLOptions`.
      reward_fn: NumPy `(hypotheses [B*K, T], references [B, T']) ->
        float32 [B*K]` (`gleu_rewards` with the vocabulary bound).
      data: the batch, `(features, labels[, sample_weight])`.

    Returns:
      The logs: `loss`, `ml_loss`, `rl_loss`, `reward` (mean hypothesis
      GLEU) and the compiled metrics (token accuracy, target tokens).
    """
    features, labels, _ = keras.utils.unpack_x_y_sample_weight(data)
    labels = tf.cast(labels, tf.int32)
    k = options.num_samples
    ids, lengths = draw_hypotheses(model, features, options)
    rewards = tf.numpy_function(reward_fn, [ids, labels], tf.float32,
                                stateful=False)
    rewards.set_shape([None])
    bos = tf.fill([tf.shape(ids)[0], 1], model.config.bos_id)
    tiled = {name: tf.repeat(value, k, axis=0)
             for name, value in features.items() if name != "target_in_ids"}
    tiled["target_in_ids"] = tf.concat([bos, ids[:, :-1]], axis=1)
    label_lengths = tf.reduce_sum(tf.cast(
        tf.not_equal(labels, model.config.pad_id), tf.int32), axis=1)
    with tf.GradientTape() as tape:
        logits = model(features, training=True)
        hypothesis_logits = model(tiled, training=True)
        loss, ml_loss, rl_loss = mixed_loss(
            options.alpha, sequence_log_probs(logits, labels, label_lengths),
            sequence_log_probs(hypothesis_logits, ids, lengths), rewards,
            lengths > 0, k)
    model.optimizer.minimize(loss, model.trainable_variables, tape=tape)
    model.compiled_metrics.update_state(labels, logits)
    logs = {m.name: m.result() for m in model.metrics}
    logs.update(loss=loss, ml_loss=ml_loss, rl_loss=rl_loss,
                reward=tf.reduce_mean(tf.boolean_mask(rewards, lengths > 0)))
    return logs


def use_rl_train_step(model, options: RLOptions, subwords):
    """Makes `model.fit` train `model` on the mixed objective: sets the
    model's `train_step` to `rl_train_step` (on the instance, so the
    model's class, variables and checkpoints stay those of its type).
    Evaluation (`test_step`, validation loss) stays the ML loss."""
    reward_fn = functools.partial(
        gleu_rewards, num_samples=options.num_samples, subwords=subwords,
        eos_id=model.config.eos_id, pad_id=model.config.pad_id)
    # No autograph: the searches are explicit tf.while_loops, and
    # converting the whole model call tree makes tracing several times
    # slower (as `gnmt_tf.translator.Translator.search_fn`).
    model.train_step = tf.autograph.experimental.do_not_convert(
        functools.partial(rl_train_step, model, options, reward_fn))
    model.train_function = None  # made again, with the new step


def refine_train_config(train_config, minutes=None, overrides=()):
    """The ML run's `TrainConfig` made a refinement's: a tenth of its peak
    learning rate after 20 warm-up steps, no label smoothing, a checkpoint
    every 50 steps, no BLEU sampling during training; then `overrides`
    (`key=value`, as `--set`) and the `minutes` budget."""
    config = dataclasses.replace(
        train_config, learning_rate=train_config.learning_rate / 10,
        warmup_steps=20, label_smoothing=0.0, checkpoint_every=50,
        bleu_every=0, max_minutes=None)
    config = apply_overrides(config, list(overrides))
    if minutes is not None:
        config = dataclasses.replace(config, max_minutes=minutes)
    return config


def default_output_dir(model_dir) -> pathlib.Path:
    """`<model_dir>-rl`, beside the ML model directory."""
    return pathlib.Path(str(model_dir).rstrip("/\\") + "-rl")


def _check_output_dir(model_dir, out, saved):
    """Refuses to write the ML directory itself, or a directory that holds
    another model than a refinement of `model_dir`."""
    if out.exists() and os.path.samefile(out, model_dir):
        raise ValueError(f"the output directory {out} is the ML model "
                         "directory; refinement keeps that one and writes "
                         "another (--output-dir)")
    if saved is None:
        if (out / model_dir_lib.CHECKPOINT_DIR).exists():
            raise ValueError(f"{out} holds checkpoints but no config.json; "
                             "give another --output-dir")
        return
    source = saved.get(CONFIG_KEY, {}).get("from_model_dir")
    if source is None or not (pathlib.Path(source).exists()
                              and os.path.samefile(source, model_dir)):
        raise ValueError(f"{out} holds another model (not an RL refinement "
                         f"of {model_dir}); give another --output-dir")


def refine_rl(model_dir, output_dir=None, data_dir=None, options=RLOptions(),
              minutes=None, overrides=(), log_every=10):
    """RL-refines a trained model directory into `output_dir`.

    A fresh run copies the ML model's weights, its vocabulary and
    `config.json` (with the refinement's `train` config and an
    `rl_refinement` entry) into `output_dir`; a rerun on the same
    `output_dir` resumes it from its last checkpoint with the options it
    was started with (the `--minutes` budget counts the whole refinement).

    Example:
      >>> refine_rl("runs/en-de", "runs/en-de-rl", "data/multi30k",
      ...           RLOptions(alpha=0.017, num_samples=4), minutes=10)
      >>> Translator.from_model_dir("runs/en-de-rl").translate(["A dog."])

    Args:
      model_dir: a trained model directory (or a shipped model's name).
      output_dir: where the refined model goes; default `<model_dir>-rl`.
      data_dir: directory with the `train.*` files (as `gnmt-tf train`).
      options: `RLOptions`.
      minutes: float or None. Wall-time budget of the refinement.
      overrides: `key=value` training settings (`TrainConfig` fields).
      log_every: int. A progress line every N steps.

    Returns:
      `gnmt_tf.training.trainer.TrainResult`.

    Raises:
      FileNotFoundError: `model_dir` is no model directory or has no
        trained weights.
      ValueError: a bad option, an output directory that is the ML one or
        holds another model, a model type without training data.
    """
    from gnmt_tf.training import trainer
    from gnmt_tf.training.model_dir_guard import claim_model_dir

    out = pathlib.Path(output_dir) if output_dir else default_output_dir(
        model_dir)
    model_dir = model_dir_lib.locate(model_dir)
    payload = model_dir_lib.read_config(model_dir)
    model_type = payload.get("model_type", "gnmt")
    declared = model_types.get_model_type(model_type)
    if not declared.finetune_data:
        raise ValueError(f"model type {model_type!r} declares no training "
                         "data (finetune_data) to refine on")
    saved = None
    if (out / model_dir_lib.CONFIG_FILE).exists():
        saved = model_dir_lib.read_config(out)
    _check_output_dir(model_dir, out, saved)
    if saved is not None:  # resume with the options it started with
        options = RLOptions(**saved[CONFIG_KEY]["options"])
        train_config = from_dict(TrainConfig, saved["train"])
        train_config = dataclasses.replace(
            apply_overrides(train_config, list(overrides)),
            max_minutes=minutes if minutes is not None
            else train_config.max_minutes)
    else:
        train_config = refine_train_config(
            from_dict(TrainConfig, payload["train"]), minutes, overrides)

    ml_model, subwords, _ = model_dir_lib.load_model(model_dir)
    # A fresh model with the ML weights: restoring the ML checkpoint into
    # the model to train would later restore (deferred) the ML run's
    # optimizer state into the refinement's optimizer.
    model, _ = model_dir_lib.build_model(model_dir)
    model(model.dummy_inputs())
    model.set_weights(ml_model.get_weights())
    del ml_model
    model.attach_model_dir(subwords, payload)
    keras.utils.set_random_seed(train_config.seed)  # before the shuffle
    train_config, dataset = model_types.load_object(declared.finetune_data)(
        model, subwords, payload, data_dir, train_config)
    extra = {k: v for k, v in payload.items()
             if k not in ("model_type", "model", "train", CONFIG_KEY)}
    with claim_model_dir(out):
        copy_file_atomic(model_dir / model_dir_lib.VOCAB_FILE,
                         out / model_dir_lib.VOCAB_FILE)
        model_dir_lib.write_config(
            out, model_type, model.config, train_config,
            {**extra, CONFIG_KEY: {"from_model_dir": str(model_dir.resolve()),
                                   "options": dataclasses.asdict(options)}})
        trainer.compile_model(model, train_config, model.config.pad_id)
        use_rl_train_step(model, options, subwords)
        result = trainer.fit(model, train_config, dataset, out,
                             log_every=log_every)
    print(f"RL refinement: {result.steps} steps in {result.seconds / 60:.1f} "
          f"min (alpha {options.alpha}, {options.num_samples} "
          f"{options.sampler} hypotheses per sentence); model in {out}",
          file=sys.stderr)
    return result

