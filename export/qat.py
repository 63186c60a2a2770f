"""Quantization-aware fine-tuning of a trained GNMT (`qat_finetune`).

`QATGNMT` is a `GNMT` whose LSTMs, attention, embeddings and softmax
projection fake-quantize weights and activations (`export.quantization`).
Its variables keep the float model's names (`copy_float_weights` fills them
from a float model); the quantizers' range variables are extra.

`qat_finetune(model_dir, out_model_dir, ...)` restores a float model
directory into a `QATGNMT`, sets weight ranges from the weights and
activation ranges from a few training batches (`calibrate`), fine-tunes with
`model.fit` (the project's trainer: checkpoints, resume, time budget) and
writes a model directory of type ``gnmt_qat``: `config.json`, `spm.model`,
`checkpoints/`. Everything that loads model directories
(`gnmt_tf.model_dir.load_model`, `export.tflite`, `export.savedmodel`)
reads it once this module is imported (it registers the model type); the
int8 TFLite export (`export.tflite_int8`) needs it.

GNMT's own quantization-friendly constraints stay in force: with
`clip_cell` the cell states and residual sums are clipped to the model's
`cell_clip` (delta), which is also the cell-state quantization range, and is
held fixed during fine-tuning at its trained value; with `logit_clip` the
logits' range is [-gamma, gamma].

`qat_finetune` on a task-space Transformer directory hands over to
`export.transformer_qat`, which reuses this module's model-independent
parts: `copy_float_weights`, `finetune_train_config`, `prepare_out_dir` and
`finetune` (ranges, calibration, `model.fit`).
"""

import dataclasses
import os
import pathlib
import sys

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

import tensorflow as tf
import tf_keras as keras

from export import quantization
from gnmt_tf import model_dir as model_dir_lib
from gnmt_tf import model_types
from gnmt_tf.config import GNMTConfig, TrainConfig, from_dict
from gnmt_tf.io_utils import copy_file_atomic
from gnmt_tf.layers.gnmt_encoder import GNMTEncoder
from gnmt_tf.models.gnmt import GNMT
from gnmt_tf.training.model_dir_guard import claim_model_dir

MODEL_TYPE = "gnmt_qat"  # declared in export.registry


class QATGNMT(GNMT):
    """`GNMT` with fake quantization (`export.quantization`).

    Same constructor, call, `encode` / `initial_state` / `step` and variable
    names as `GNMT`; the LSTMs are `QATLSTM`s, the attention a
    `QATAdditiveAttention`, the embeddings `QATEmbedding`s and the output
    projection (`QATDense` when untied) is followed by the logits quantizer
    of `OutputQuantizeConfig`.

    Args:
      config: `GNMTConfig`.
    """

    def __init__(self, config: GNMTConfig, **kwargs):
        super().__init__(config, **kwargs)
        # Swap in the QAT layers before anything is built: same attribute
        # names, so the same checkpoint paths.
        init = keras.initializers.RandomUniform(-0.1, 0.1)
        self.embedding = quantization.QATEmbedding(
            config.vocabulary_size, config.hidden_dim, name="embedding",
            embeddings_initializer=init)
        self.target_embedding = self.embedding
        if not config.tie_embeddings:
            self.target_embedding = quantization.QATEmbedding(
                config.vocabulary_size, config.hidden_dim,
                name="target_embedding", embeddings_initializer=init)
            self.output_dense = quantization.QATDense(
                config.vocabulary_size, use_bias=False, name="output")
        self.encoder = QATGNMTEncoder(
            config.num_encoder_layers, config.hidden_dim, config.dropout,
            config.residual_start, self.cell_clip, name="encoder")
        encoder, decoder, clip = self.encoder, self.decoder, self.cell_clip
        encoder.forward_lstm = quantization.QATLSTM(
            config.hidden_dim, clip, name="lstm_1_forward")
        encoder.backward_lstm = quantization.QATLSTM(
            config.hidden_dim, clip, name="lstm_1_backward")
        encoder.upper_lstms = [
            quantization.QATLSTM(config.hidden_dim, clip, name=f"lstm_{i}")
            for i in range(2, config.num_encoder_layers + 1)]
        decoder.lstms = [
            quantization.QATLSTM(config.hidden_dim, clip, name=f"lstm_{i}")
            for i in range(1, config.num_decoder_layers + 1)]
        decoder.attention = quantization.QATAdditiveAttention(
            config.attention_dim, name="attention")
        self.output_quantizers = OutputQuantizers(config.logit_clip)

    def _logits(self, outputs):
        fq = self.output_quantizers
        outputs = fq.fake_quant("decoder_output", outputs)
        if self.config.tie_embeddings:
            table = self.target_embedding.quantized_embeddings()
            logits = tf.matmul(outputs, table, transpose_b=True)
        else:
            logits = self.output_dense(outputs)
        logits = logits + self.output_bias
        if self.config.logit_clip:
            gamma = self.config.logit_clip
            logits = tf.clip_by_value(logits, -gamma, gamma)
        return fq.fake_quant("logits", logits)


def reverse_sequence(x, lengths):
    """`tf.reverse_sequence(x, lengths, seq_axis=1, batch_axis=0)` as a
    Gather: TFLite's REVERSE_SEQUENCE has no int8 kernel, its GATHER has."""
    steps = tf.range(tf.shape(x)[1])[None, :]
    lengths = lengths[:, None]
    indices = tf.where(steps < lengths, lengths - 1 - steps, steps)
    return tf.gather(x, indices, batch_dims=1)


class QATGNMTEncoder(GNMTEncoder):
    """`GNMTEncoder` whose two sequence reversals are int8-friendly Gathers
    (same results)."""

    def reverse(self, x, lengths):
        return reverse_sequence(x, lengths)


class OutputQuantizers(quantization.FakeQuantMixin, keras.layers.Layer):
    """Holds `OutputQuantizeConfig`'s range variables (a weightless layer)."""

    def __init__(self, logit_clip=None, **kwargs):
        super().__init__(name="output_quantizers", **kwargs)
        self.logit_clip = logit_clip
        self._build_quantizers(quantization.OutputQuantizeConfig(logit_clip))

    def call(self, inputs):
        return inputs


def variables_by_name(model):
    """`{variable name without the model's name: variable}` of `model`.

    GNMT's variables start with the model's name, the task-space
    Transformer's (built at construction, outside the model's name scope)
    do not.

    Raises:
      ValueError: two variables with one name.
    """
    prefix = model.name + "/"
    variables = {}
    for variable in model.variables:
        name = variable.name
        name = name[len(prefix):] if name.startswith(prefix) else name
        if name in variables:
            raise ValueError(f"{model.name} has two variables named {name}")
        variables[name] = variable
    return variables


def copy_float_weights(float_model, qat_model):
    """Assigns every variable of `float_model` to its namesake in
    `qat_model` (the range variables keep their values).

    Copying, rather than restoring the float checkpoint into the QAT model,
    keeps the float run's optimizer out: a `tf.train.Checkpoint` restore
    would later restore it (deferred) into the fine-tuning optimizer.

    Raises:
      ValueError: a float variable has no namesake of the same shape.
    """
    targets = variables_by_name(qat_model)
    for name, variable in variables_by_name(float_model).items():
        target = targets.get(name)
        if target is None or target.shape != variable.shape:
            raise ValueError(f"QAT model has no variable like {variable.name} "
                             f"{variable.shape}")
        target.assign(variable)


def load_qat_from_float(model_dir):
    """A `QATGNMT` with a float model directory's weights (ranges unset).

    Returns:
      `(model, subwords, payload)` as `gnmt_tf.model_dir.load_model`.
    """
    payload = model_dir_lib.read_config(model_dir)
    if payload.get("model_type", "gnmt") != "gnmt":
        raise ValueError(f"{model_dir} holds a {payload['model_type']!r} "
                         "model; quantization-aware training needs a float "
                         "GNMT")
    float_model, subwords, payload = model_dir_lib.load_model(model_dir)
    model = QATGNMT(from_dict(GNMTConfig, payload["model"]))
    model(model.dummy_inputs())
    copy_float_weights(float_model, model)
    return model, subwords, payload


def training_dataset(subwords, data_dir, src_lang, tgt_lang, train_config,
                     split="train"):
    from gnmt_tf.data import corpus
    from gnmt_tf.data.pipeline import make_dataset

    src, tgt = corpus.read_parallel(corpus.resolve_data_dir(data_dir), split,
                                    src_lang, tgt_lang)
    return make_dataset(subwords.encode(src), subwords.encode(tgt),
                        train_config.max_tokens, train_config.max_length,
                        shuffle_buffer=train_config.shuffle_buffer,
                        seed=train_config.seed)


def finetune_train_config(train_config, steps, minutes=None,
                          learning_rate=None):
    """The float run's `TrainConfig` adapted to QAT fine-tuning: `steps`
    steps within `minutes`, a checkpoint at least every 500 steps, peak
    learning rate `learning_rate` (default a tenth of the float run's) after
    a short warm-up."""
    steps = int(steps)
    return dataclasses.replace(
        train_config, train_steps=steps, max_minutes=minutes,
        checkpoint_every=max(1, min(steps, 500)),
        learning_rate=learning_rate or train_config.learning_rate / 10,
        warmup_steps=max(1, min(100, steps // 10)))


def prepare_out_dir(model_dir, out_model_dir):
    """Creates the QAT model directory with the float model's vocabulary.

    Raises:
      ValueError: `out_model_dir` is the float model directory itself.
    """
    out = pathlib.Path(out_model_dir)
    if out.exists() and os.path.samefile(out, model_dir):
        raise ValueError(f"the QAT model directory {out} is the float model "
                         "directory; write it to another one")
    out.mkdir(parents=True, exist_ok=True)
    copy_file_atomic(pathlib.Path(model_dir) / model_dir_lib.VOCAB_FILE,
                     out / model_dir_lib.VOCAB_FILE)
    return out


def finetune(model, train_config, dataset, out, calibration_batches=20,
             log_every=100):
    """Sets ranges, then fine-tunes `model` with the project's trainer.

    A fresh run sets the weight ranges from the weights and the activation
    ranges from `calibration_batches` batches of `dataset`; a resumed run
    (a checkpoint in `out`) restores them instead. Training is
    `gnmt_tf.training.trainer.fit`: checkpoints, resume, time budget.

    Args:
      model: a QAT model with the float weights, built.
      train_config: `TrainConfig` (`finetune_train_config`).
      dataset: `(features, labels)` training batches.
      out: the QAT model directory (`config.json` already written).
      calibration_batches: int (0: keep tfmot's initial [-6, 6]).
      log_every: int. Progress line every N steps.

    Returns:
      `gnmt_tf.training.trainer.TrainResult`.
    """
    from gnmt_tf.training import trainer

    resuming = tf.train.latest_checkpoint(
        str(pathlib.Path(out) / model_dir_lib.CHECKPOINT_DIR)) is not None
    if not resuming:
        quantization.init_weight_ranges(model)
        if calibration_batches:
            quantization.calibrate(
                model, (features for features, _ in
                        dataset.take(calibration_batches)))
    trainer.compile_model(model, train_config, model.config.pad_id)
    result = trainer.fit(model, train_config, dataset, out, log_every=log_every)
    print(f"QAT fine-tuning: {result.steps} steps in {result.seconds:.0f} s",
          file=sys.stderr)
    return result


def qat_finetune(model_dir, out_model_dir, data_dir, steps=1000, minutes=None,
                 learning_rate=None, calibration_batches=20, log_every=100):
    """Fine-tunes a float model with fake quantization; writes a QAT model dir.

    The float directory's model type names its quantization-aware variant
    (`gnmt_tf.model_types.quantized_variant`: ``gnmt`` -> ``gnmt_qat``,
    ``task_space_transformer`` -> ``task_space_transformer_qat``), whose
    `finetune` function does the work.

    Example:
      >>> qat_finetune("runs/en-de", "runs/en-de-qat", "data/multi30k",
      ...              steps=2000)
      >>> export.tflite.export_tflite("runs/en-de-qat", "out/", "int8")

    Args:
      model_dir: a trained float model directory.
      out_model_dir: the QAT model directory to write (or resume).
      data_dir: directory with `train.<src>` / `train.<tgt>` (and `val.*`);
        the languages (GNMT) or directions and tags (task space) are the
        model's (`config.json`).
      steps: int. Fine-tuning optimizer steps.
      minutes: float or None. Wall-time budget (stops and checkpoints).
      learning_rate: float or None. Peak learning rate; default a tenth of
        the float run's.
      calibration_batches: int. Training batches that set the initial
        activation ranges (0: keep tfmot's initial [-6, 6]).
      log_every: int. Progress line every N steps.

    Returns:
      `gnmt_tf.training.trainer.TrainResult`.

    Raises:
      ValueError: the model type has no quantization-aware variant.
    """
    model_type = model_dir_lib.read_config(model_dir).get("model_type", "gnmt")
    _, variant = model_types.quantized_variant(model_type)
    return model_types.load_object(variant.finetune)(
        model_dir, out_model_dir, data_dir, steps, minutes, learning_rate,
        calibration_batches, log_every)


def qat_finetune_gnmt(model_dir, out_model_dir, data_dir, steps=1000,
                      minutes=None, learning_rate=None,
                      calibration_batches=20, log_every=100):
    """`qat_finetune` for a float GNMT: writes a ``gnmt_qat`` directory."""
    model, subwords, payload = load_qat_from_float(model_dir)
    src_lang, tgt_lang = payload.get("src_lang"), payload.get("tgt_lang")
    if not (src_lang and tgt_lang):
        raise ValueError(f"{model_dir}/config.json names no src_lang/tgt_lang")
    train_config = from_dict(TrainConfig, payload["train"])
    delta = (float(model.cell_clip.numpy()) if model.cell_clip is not None
             else train_config.delta_end)
    train_config = dataclasses.replace(
        finetune_train_config(train_config, steps, minutes, learning_rate),
        # delta stays where the float training left it.
        delta_start=delta, delta_end=delta, delta_anneal_steps=1)

    with claim_model_dir(out_model_dir):
        out = prepare_out_dir(model_dir, out_model_dir)
        model_dir_lib.write_config(
            out, MODEL_TYPE, model.config, train_config,
            {"src_lang": src_lang, "tgt_lang": tgt_lang,
             "qat": {"float_model_dir": str(model_dir), "steps": int(steps)}})
        keras.utils.set_random_seed(train_config.seed)  # before the shuffle
        dataset = training_dataset(subwords, data_dir, src_lang, tgt_lang,
                                   train_config)
        return finetune(model, train_config, dataset, out,
                        calibration_batches, log_every)
