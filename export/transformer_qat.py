"""Quantization-aware fine-tuning of a trained task-space Transformer.

`QATTaskSpaceTransformer` is a `TaskSpaceTranslationModel` built from the
QAT layers of `export.transformer_quantization`, with the same constructor,
config, call, `encode` / `initial_state` / `step` and variable names, so a
float checkpoint restores into it (`copy_float_weights`) and
`gnmt_tf.translator.Translator` decodes with it (fake quant in
inference mode inside the in-graph search).

`qat_finetune_transformer(model_dir, out_model_dir, data_dir, ...)` (also
reached through `export.qat.qat_finetune` and `gnmt-tf export qat`)
restores a float ``task_space_transformer`` directory into it, sets the
weight ranges from the weights and the activation ranges from a few
training batches, fine-tunes with `model.fit` through the project's trainer
(checkpoints, resume, time budget) on the directions and scene tags the
float model was trained on (its `config.json`), and writes a model
directory of type ``task_space_transformer_qat``: `config.json` (the float
model's `model` and `task_space` entries, the fine-tuning `train` config and
a `qat` entry), `spm.model`, `checkpoints/`. `gnmt_tf.model_dir.load_model`,
`Translator.from_model_dir` and the `gnmt-tf translate` /
`task-space` commands open it like a float one.
"""

import dataclasses

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

import tf_keras as keras

from export import qat
from export import quantization
from export import transformer_quantization as tq
from gnmt_tf import model_dir as model_dir_lib
from gnmt_tf.config import TrainConfig, from_dict
from gnmt_tf.training.model_dir_guard import claim_model_dir
from task_space import registry
from task_space.task_space_translation_model import TaskSpaceTranslationModel

MODEL_TYPE = registry.QAT_MODEL_TYPE


class QATTaskSpaceTransformer(quantization.FakeQuantMixin,
                              TaskSpaceTranslationModel):
    """`TaskSpaceTranslationModel` with fake quantization.

    Its shared embedding, encoder and decoder layers and final LayerNorms
    are the QAT layers of `export.transformer_quantization`; the model
    itself fake-quantizes the encoder and decoder input embeddings
    (`TransformerInputQuantizeConfig`). Everything else, variable names
    included, is `TaskSpaceTransformer`'s.

    Args: as `TaskSpaceTransformer`.

    Example:
    ```python
    model, subwords, payload = load_qat_from_float("runs/ts")
    quantization.init_weight_ranges(model)
    quantization.calibrate(model, batches)  # feature dicts
    ```
    """

    embedding_class = tq.QATSharedEmbedding
    encoder_layer_class = tq.QATTransformerEncoderLayer
    decoder_layer_class = tq.QATTransformerDecoderLayer
    layer_norm_class = tq.QATLayerNormalization

    def __init__(self, config, **kwargs):
        super().__init__(config, **kwargs)
        self._build_quantizers(tq.TransformerInputQuantizeConfig())


def load_qat_from_float(model_dir):
    """A `QATTaskSpaceTransformer` with a float task-space model
    directory's weights (ranges unset).

    Returns:
      `(model, subwords, payload)` as `gnmt_tf.model_dir.load_model`.

    Raises:
      ValueError: not a float task-space model directory.
    """
    from task_space.training import read_task_space_config

    config, _ = read_task_space_config(model_dir, (registry.MODEL_TYPE,))
    float_model, subwords, payload = model_dir_lib.load_model(model_dir)
    model = QATTaskSpaceTransformer(config)
    qat.copy_float_weights(float_model, model)
    return model, subwords, payload


def training_dataset(subwords, data_dir, config, options, train_config,
                     split="train"):
    """The mixed-direction batches `task_space.training` trained on.

    Args:
      subwords: the model's `Subwords`.
      data_dir: the Multi30k directory.
      config: `TransformerConfig`.
      options: `task_space.training.TaskSpaceOptions` of the float run
        (directions, tags, target-language token, line limit).
      train_config: `TrainConfig` (batch size, length limit, shuffling).
    """
    from task_space import data as data_lib

    examples = data_lib.load_multi30k(
        data_dir, split,
        data_lib.parse_directions(options.directions, config.languages),
        data_lib.parse_tags(options.tags), options.max_lines,
        config.languages)
    encoded = data_lib.encode_examples(
        examples, subwords, config, options.target_language_token)
    return data_lib.make_task_dataset(
        encoded, train_config.max_tokens, train_config.max_length,
        shuffle_buffer=train_config.shuffle_buffer, seed=train_config.seed)


def qat_finetune_transformer(model_dir, out_model_dir, data_dir, steps=1000,
                             minutes=None, learning_rate=None,
                             calibration_batches=20, log_every=100):
    """Fine-tunes a float task-space Transformer with fake quantization.

    Args: as `export.qat.qat_finetune`; `model_dir` is a float
    ``task_space_transformer`` directory, whose saved task options
    (directions, scene tags, target-language token) select the data.

    Returns:
      `gnmt_tf.training.trainer.TrainResult`.

    Raises:
      ValueError: not a float task-space model directory.
    """
    from task_space.training import read_task_space_config

    _, options = read_task_space_config(model_dir, (registry.MODEL_TYPE,))
    model, subwords, payload = load_qat_from_float(model_dir)
    train_config = qat.finetune_train_config(
        from_dict(TrainConfig, payload["train"]), steps, minutes,
        learning_rate)
    with claim_model_dir(out_model_dir):
        out = qat.prepare_out_dir(model_dir, out_model_dir)
        model_dir_lib.write_config(
            out, MODEL_TYPE, model.config, train_config,
            {"task_space": dataclasses.asdict(options),
             "qat": {"float_model_dir": str(model_dir),
                     "steps": int(steps)}})
        keras.utils.set_random_seed(train_config.seed)  # before the shuffle
        dataset = training_dataset(subwords, data_dir, model.config, options,
                                   train_config)
        return qat.finetune(model, train_config, dataset, out,
                            calibration_batches, log_every)
