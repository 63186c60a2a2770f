"""Registers the `task_space_transformer` model type with `gnmt_tf`.

Light (no TensorFlow): `gnmt_tf.model_dir` maps model types to classes by
dotted path, so after `import task_space.registry` the generic
`gnmt_tf.model_dir.build_model` / `load_model` open task-space model
directories. `task_space.cli` (discovered by the `gnmt-tf` CLI),
`task_space.training` imports it.
"""

from gnmt_tf import model_dir as _model_dir

MODEL_TYPE = "task_space_transformer"
# Its quantization-aware variant (`export.transformer_qat`, registered in
# `gnmt_tf.model_dir`): same config, vocabulary and task options.
QAT_MODEL_TYPE = "task_space_transformer_qat"
MODEL_TYPES = (MODEL_TYPE, QAT_MODEL_TYPE)
MODEL_CLASS = ("task_space.task_space_translation_model:"
               "TaskSpaceTranslationModel")
CONFIG_CLASS = "task_space.config:TransformerConfig"

_model_dir.register_model_type(MODEL_TYPE, MODEL_CLASS, CONFIG_CLASS)


def is_task_space_model_dir(model_dir) -> bool:
    """True when `model_dir/config.json` names a task-space model type,
    float or QAT (False when there is no readable config)."""
    try:
        return _model_dir.read_config(model_dir).get("model_type") in MODEL_TYPES
    except (FileNotFoundError, ValueError):
        return False
