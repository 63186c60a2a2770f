"""Named `TransformerConfig` presets for the task-space Transformer.

Presets are data: each maps a name to the keyword arguments of
`gnmt_tf.models.task_space.config.TransformerConfig`. Names carry no sizes (keras-hub style).
`gnmt_tf.models.task_space.training.get_preset(name)` gives the model config
and the training settings that go with it (`TRAIN_PRESETS`), as
`gnmt_tf.models.gnmt.presets.get_preset` gives a GNMT's;
`TransformerConfig.from_preset(name, **overrides)` gives the model config
alone.

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


def _train_presets():
    from gnmt_tf.config import TrainConfig

    return {
        "transformer_tiny": TrainConfig(
            max_tokens=256, max_length=16, learning_rate=1e-2, warmup_steps=10,
            checkpoint_every=5, shuffle_buffer=64),
        "transformer_small": TrainConfig(
            max_tokens=4096, max_length=64, learning_rate=1e-3,
            warmup_steps=800, label_smoothing=0.1, clip_norm=1.0,
            bleu_every=500, bleu_lines=20),
        "transformer_base": TrainConfig(
            max_tokens=8192, max_length=128, learning_rate=7e-4,
            warmup_steps=4000, label_smoothing=0.1, clip_norm=1.0,
            bleu_every=500, bleu_lines=20),
    }


# Training settings that go with each model preset above.
TRAIN_PRESETS = _train_presets()
