"""Named `TransformerConfig` presets for the task-space Transformer.

Presets are data: each maps a name to the keyword arguments of
`gnmt_tf.models.task_space.config.TransformerConfig`. Names carry no sizes (keras-hub style).
Load one with `TransformerConfig.from_preset(name, **overrides)`.

- `transformer_tiny`: for unit tests; builds and runs in milliseconds.
- `transformer_small`: trains on a 2-core CPU (Multi30k-sized data).
- `transformer_base`: the base model of Vaswani et al. (2017), "Attention Is
  All You Need": 6+6 layers, d_model 512, 8 heads, FFN 2048, dropout 0.1.
"""

TRANSFORMER_PRESETS = {
    "transformer_tiny": {
        "vocabulary_size": 32,
        "num_layers": 2,
        "num_heads": 2,
        "hidden_dim": 16,
        "intermediate_dim": 32,
        "dropout": 0.0,
        "max_sequence_length": 16,
    },
    "transformer_small": {
        "vocabulary_size": 8000,
        "num_layers": 3,
        "num_heads": 4,
        "hidden_dim": 256,
        "intermediate_dim": 1024,
        "dropout": 0.1,
        "max_sequence_length": 128,
    },
    "transformer_base": {
        "vocabulary_size": 32000,
        "num_layers": 6,
        "num_heads": 8,
        "hidden_dim": 512,
        "intermediate_dim": 2048,
        "dropout": 0.1,
        "max_sequence_length": 256,
    },
}
