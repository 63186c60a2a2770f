"""The model types `gnmt_tf` declares (entry points in setup.py; light, no
TensorFlow): GNMT."""

from gnmt_tf.model_types import ModelType

GNMT = ModelType(
    model_class="gnmt_tf.models.gnmt:GNMT",
    config_class="gnmt_tf.config:GNMTConfig",
    presets=("gnmt_tiny", "gnmt_small", "gnmt_8x8"),
    train="gnmt_tf.cli.train:train_gnmt_from_args",
    finetune_data="gnmt_tf.training.finetune_data:gnmt_finetune_data")
