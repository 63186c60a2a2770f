"""Named GNMT presets: data, not subclasses.

- ``gnmt_8x8``: the paper's model (8+8 layers, 1024 units, 32k shared wordpieces,
  quantization-friendly clipping, gamma = 25).
- ``gnmt_small``: what trains on 2 CPU cores (Multi30k): input feeding,
  dropout 0.3 and a one-layer (bidirectional) encoder. With the paper's deeper
  encoder the attention never learns to align on Multi30k (Spearman -0.67
  between target and attended source position after 5,500 steps); with one
  bidirectional layer it aligns from the start (+0.89 at step 1,000) and
  validation BLEU at step 1,000 is 12.2 instead of 8.5
  (`benchmarks/gnmt_ablation.py`, `benchmarks/attention_alignment.py`).
- ``gnmt_tiny``: for tests.
"""

from gnmt_tf.config import GNMTConfig, TrainConfig

PRESETS = {
    "gnmt_8x8": (
        GNMTConfig(vocabulary_size=32000, num_encoder_layers=8,
                   num_decoder_layers=8, hidden_dim=1024, attention_dim=1024,
                   dropout=0.2, logit_clip=25.0, clip_cell=True),
        TrainConfig(max_tokens=8192, learning_rate=1e-3, warmup_steps=2000,
                    bleu_every=500),
    ),
    "gnmt_small": (
        GNMTConfig(vocabulary_size=8000, num_encoder_layers=1,
                   num_decoder_layers=3, hidden_dim=256, attention_dim=256,
                   dropout=0.3, input_feeding=True),
        TrainConfig(max_tokens=2048, learning_rate=2e-3, warmup_steps=400,
                    bleu_every=500),
    ),
    "gnmt_tiny": (
        GNMTConfig(vocabulary_size=64, num_encoder_layers=3,
                   num_decoder_layers=3, hidden_dim=16, attention_dim=8,
                   dropout=0.0),
        TrainConfig(max_tokens=256, max_length=32, learning_rate=1e-2,
                    warmup_steps=10, checkpoint_every=5, shuffle_buffer=64),
    ),
}


def get_preset(name: str):
    """Returns the `(GNMTConfig, TrainConfig)` pair named `name`."""
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(
            f"unknown preset {name!r}; known: {', '.join(sorted(PRESETS))}") from None
