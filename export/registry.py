"""The model types `export` declares (entry points in setup.py; light, no
TensorFlow): the quantization-aware variants of GNMT and the task-space
Transformer, which `gnmt-tf export qat` makes from float model directories."""

from gnmt_tf.model_types import ModelType

GNMT_QAT = ModelType(
    model_class="export.qat:QATGNMT",
    config_class="gnmt_tf.config:GNMTConfig",
    quantized_from="gnmt",
    finetune="export.qat:qat_finetune_gnmt")

TASK_SPACE_TRANSFORMER_QAT = ModelType(
    model_class="export.transformer_qat:QATTaskSpaceTransformer",
    config_class="task_space.config:TransformerConfig",
    quantized_from="task_space_transformer",
    finetune="export.transformer_qat:qat_finetune_transformer")
