"""The model type `task_space` declares (an entry point in setup.py; light,
no TensorFlow): the task-space Transformer.
"""

from gnmt_tf.model_types import ModelType

MODEL_TYPE = "task_space_transformer"
# Its quantization-aware variant (declared by `export.registry`): same config,
# vocabulary and task options.
QAT_MODEL_TYPE = "task_space_transformer_qat"
MODEL_TYPES = (MODEL_TYPE, QAT_MODEL_TYPE)

TASK_SPACE_TRANSFORMER = ModelType(
    model_class=("task_space.task_space_translation_model:"
                 "TaskSpaceTranslationModel"),
    config_class="task_space.config:TransformerConfig",
    presets=("transformer_tiny", "transformer_small", "transformer_base"),
    train="task_space.cli:train_from_args",
    train_arguments="task_space.cli:add_train_arguments",
    finetune_data="task_space.training:finetune_data")
