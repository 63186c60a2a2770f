"""The model types of the GNMT family (entry points in setup.py; light, no
TensorFlow): GNMT and its quantization-aware variant, which `gnmt-tf export
qat` makes from a float GNMT model directory."""

from gnmt_tf.model_types import ModelType

GNMT = ModelType(
    model_class="gnmt_tf.models.gnmt.model:GNMT",
    config_class="gnmt_tf.config:GNMTConfig",
    presets=("gnmt_tiny", "gnmt_small", "gnmt_8x8"),
    train="gnmt_tf.cli.train:train_gnmt_from_args",
    finetune_data="gnmt_tf.training.finetune_data:gnmt_finetune_data")

GNMT_QAT = ModelType(
    model_class="gnmt_tf.models.gnmt.qat:QATGNMT",
    config_class="gnmt_tf.config:GNMTConfig",
    quantized_from="gnmt",
    finetune_data="gnmt_tf.models.gnmt.qat:finetune_data")
