"""The model type `task_space` declares (an entry point in setup.py; light,
no TensorFlow): the task-space Transformer.
"""

from gnmt_tf.model_types import ModelType

MODEL_TYPE = "task_space_transformer"
# Its quantization-aware variant (TASK_SPACE_TRANSFORMER_QAT below): same
# config, vocabulary and task options.
QAT_MODEL_TYPE = "task_space_transformer_qat"
MODEL_TYPES = (MODEL_TYPE, QAT_MODEL_TYPE)

TASK_SPACE_TRANSFORMER = ModelType(
    model_class=("gnmt_tf.models.task_space.task_space_translation_model:"
                 "TaskSpaceTranslationModel"),
    config_class="gnmt_tf.models.task_space.config:TransformerConfig",
    presets=("transformer_tiny", "transformer_small", "transformer_base"),
    train="gnmt_tf.cli.task_space:train_from_args",
    train_arguments="gnmt_tf.cli.task_space:add_train_arguments",
    finetune_data="gnmt_tf.models.task_space.training:finetune_data")

TASK_SPACE_TRANSFORMER_QAT = ModelType(
    model_class="gnmt_tf.models.task_space.qat:QATTaskSpaceTransformer",
    config_class="gnmt_tf.models.task_space.config:TransformerConfig",
    quantized_from="task_space_transformer",
    finetune_data="gnmt_tf.models.task_space.qat:finetune_data")
