"""task_space package of gnmt-tf: the multi-direction, multi-scene Transformer.

Importing the package is cheap (no TensorFlow); import the modules:

- `gnmt_tf.models.task_space.config.TransformerConfig` (+ `gnmt_tf.models.task_space.presets`)
- `gnmt_tf.models.task_space.task_space_transformer.TaskSpaceTransformer`
- layers: `task_space_encoding.TaskSpaceEncoding`,
  `transformer_encoder_layer.TransformerEncoderLayer`,
  `transformer_decoder_layer.TransformerDecoderLayer`,
  `cached_multi_head_attention.CachedMultiHeadAttention`,
  `shared_embedding.SharedEmbedding`,
  `sinusoidal_position_encoding.SinusoidalPositionEncoding`
"""

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)
