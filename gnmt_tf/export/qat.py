"""Quantization-aware fine-tuning of a trained model directory, any family.

`qat_finetune` looks up the float model type's quantization-aware variant
(`gnmt_tf.model_types.quantized_variant`: ``gnmt`` -> ``gnmt_qat``,
``task_space_transformer`` -> ``task_space_transformer_qat``), copies the
float weights into the variant's model class (`gnmt_tf.models.gnmt.qat`,
`gnmt_tf.models.task_space.qat`), sets its ranges and fine-tunes it on the data its
`finetune_data` gives, writing a model directory of the variant's type that
every model-directory reader opens and `gnmt-tf export tflite --int8`
converts.
"""

import dataclasses
import os
import pathlib
import sys

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

import tensorflow as tf
import tf_keras as keras

from gnmt_tf import quantization
from gnmt_tf import model_dir as model_dir_lib
from gnmt_tf import model_types
from gnmt_tf.config import TrainConfig, from_dict
from gnmt_tf.io_utils import copy_file_atomic
from gnmt_tf.training.model_dir_guard import claim_model_dir


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
    for float_variable, qat_variable in _namesakes(float_model, qat_model):
        qat_variable.assign(float_variable)


def _namesakes(float_model, qat_model):
    """`(float variable, its QAT namesake)` for every float variable.

    Raises:
      ValueError: a float variable has no namesake of the same shape.
    """
    qat_variables = variables_by_name(qat_model)
    pairs = []
    for name, variable in variables_by_name(float_model).items():
        namesake = qat_variables.get(name)
        if namesake is None or namesake.shape != variable.shape:
            raise ValueError(f"QAT model has no variable like {variable.name} "
                             f"{variable.shape}")
        pairs.append((variable, namesake))
    return pairs


def load_float_from_qat(model_dir):
    """The float model of a QAT model directory, holding its fine-tuned
    weights with the ranges dropped: for exports that quantize the weights
    only (``dynamic_range``), whose int8 weights were then trained for
    quantization.

    Returns:
      `(model, subwords, payload)` as `gnmt_tf.model_dir.load_model`.

    Raises:
      ValueError: `model_dir` is not a QAT model directory, or a float
        variable has no namesake of the same shape.
    """
    qat_model, subwords, payload = model_dir_lib.load_model(model_dir)
    model_type = model_types.get_model_type(payload.get("model_type", "gnmt"))
    if not model_type.quantized_from:
        raise ValueError(f"{model_dir} is not a QAT model directory")
    float_type = model_types.get_model_type(model_type.quantized_from)
    model = model_types.load_object(float_type.model_class)(qat_model.config)
    model(model.dummy_inputs())
    for float_variable, qat_variable in _namesakes(model, qat_model):
        float_variable.assign(qat_variable)
    model.attach_model_dir(subwords, payload)
    return model, subwords, payload


def load_qat_from_float(model_dir):
    """The quantization-aware variant of a float model directory's model,
    with its weights (ranges unset).

    Returns:
      `(model, subwords, payload)` as `gnmt_tf.model_dir.load_model`.

    Raises:
      ValueError: the model type has no quantization-aware variant.
    """
    model_type = model_dir_lib.read_config(model_dir).get("model_type", "gnmt")
    _, variant = model_types.quantized_variant(model_type)
    float_model, subwords, payload = model_dir_lib.load_model(model_dir)
    model = model_types.load_object(variant.model_class)(float_model.config)
    model(model.dummy_inputs())
    copy_float_weights(float_model, model)
    return model, subwords, payload


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

    The QAT directory holds the float one's vocabulary, its `config.json`
    entries (with the fine-tuning `train` config and a `qat` entry) and its
    own `checkpoints/`.

    Example:
      >>> qat_finetune("runs/en-de", "runs/en-de-qat", "data/multi30k",
      ...              steps=2000)
      >>> gnmt_tf.export.tflite.export_tflite("runs/en-de-qat", "out/", "int8")

    Args:
      model_dir: a trained float model directory.
      out_model_dir: the QAT model directory to write (or resume).
      data_dir: directory with `train.<lang>` files; the languages (GNMT) or
        directions and tags (task space) are the model's (`config.json`).
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
    model_dir = model_dir_lib.locate(model_dir)  # a shipped model's name too
    model, subwords, payload = load_qat_from_float(model_dir)
    name, variant = model_types.quantized_variant(
        payload.get("model_type", "gnmt"))
    train_config = finetune_train_config(
        from_dict(TrainConfig, payload["train"]), steps, minutes,
        learning_rate)
    keras.utils.set_random_seed(train_config.seed)  # before the shuffle
    train_config, dataset = model_types.load_object(variant.finetune_data)(
        model, subwords, payload, data_dir, train_config)
    extra = {k: v for k, v in payload.items()
             if k not in ("model_type", "model", "train")}
    with claim_model_dir(out_model_dir):
        out = prepare_out_dir(model_dir, out_model_dir)
        model_dir_lib.write_config(
            out, name, model.config, train_config,
            {**extra, "qat": {"float_model_dir": str(model_dir),
                              "steps": int(steps)}})
        return finetune(model, train_config, dataset, out,
                        calibration_batches, log_every)
