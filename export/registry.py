"""The model types `export` declares (entry points in setup.py; light, no
TensorFlow): the quantization-aware variants of GNMT and the task-space
Transformer, which `gnmt-tf export qat` makes from float model directories."""

from gnmt_tf.model_types import ModelType

GNMT_QAT = ModelType(
    model_class="export.gnmt_qat:QATGNMT",
    config_class="gnmt_tf.config:GNMTConfig",
    quantized_from="gnmt",
    finetune_data="export.gnmt_qat:finetune_data")

TASK_SPACE_TRANSFORMER_QAT = ModelType(
    model_class="export.transformer_qat:QATTaskSpaceTransformer",
    config_class="task_space.config:TransformerConfig",
    quantized_from="task_space_transformer",
    finetune_data="export.transformer_qat:finetune_data")
