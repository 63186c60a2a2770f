"""Typed configuration for GNMT models and training runs.

Configs are frozen dataclasses. Named presets live in :mod:`gnmt_tf.models.gnmt.presets`; the
CLI applies ``--set key=value`` overrides with :func:`apply_overrides`, which checks
every key and converts every value to the field's type, so a typo fails loudly.
"""

import dataclasses
import json
import typing

from gnmt_tf.checks import check_number


@dataclasses.dataclass(frozen=True)
class GNMTConfig:
    """Architecture of a GNMT encoder-decoder (Wu et al. 2016, arXiv:1609.08144).

    Attributes:
      vocabulary_size: int. Size of the shared source/target wordpiece vocabulary.
      num_encoder_layers: int. Encoder LSTM layers, the bidirectional bottom one
        included (the paper: 8).
      num_decoder_layers: int. Decoder LSTM layers (the paper: 8).
      hidden_dim: int. LSTM units per layer and embedding size (the paper: 1024).
      attention_dim: int. Hidden size of the additive attention's feed-forward net.
      dropout: float. Dropout on layer inputs during training.
      residual_start: int. 1-based index of the first layer that gets a residual
        connection (the paper: 3, i.e. from the third layer up).
      logit_clip: float or None. Clip softmax logits to [-gamma, gamma] (paper: 25).
      clip_cell: bool. Clip LSTM cell states and residual accumulators to
        [-delta, delta], delta annealed by `DeltaAnnealing` (quantization-friendly).
      tie_embeddings: bool. Share source, target and output embedding matrices.
      recompute: bool. Recompute each LSTM layer's activations in the backward
        pass instead of keeping them (`tf.recompute_grad`; less memory, about
        one more forward pass per step; see `gnmt_tf.layers.recompute` for
        its dropout caveat).
      input_feeding: bool. The bottom decoder LSTM also reads the previous
        step's attention context (as tensorflow/nmt's GNMT); False keeps the
        query a function of the target prefix alone.
      bidirectional_layers: int. Bottom encoder layers that are bidirectional
        (the paper: 1). Above layer 1 each direction has hidden_dim / 2 units.
      pad_id, unk_id, bos_id, eos_id: special token ids of the vocabulary.
    """

    vocabulary_size: int = 8000
    num_encoder_layers: int = 4
    num_decoder_layers: int = 4
    hidden_dim: int = 256
    attention_dim: int = 256
    dropout: float = 0.2
    residual_start: int = 3
    logit_clip: typing.Optional[float] = None
    clip_cell: bool = False
    tie_embeddings: bool = True
    recompute: bool = False
    input_feeding: bool = False
    bidirectional_layers: int = 1
    pad_id: int = 0
    unk_id: int = 1
    bos_id: int = 2
    eos_id: int = 3

    def __post_init__(self):
        for name in ("vocabulary_size", "num_encoder_layers", "hidden_dim",
                     "attention_dim"):
            check_number(name, getattr(self, name), integer=True, minimum=1)
        check_number("num_decoder_layers", self.num_decoder_layers,
                     integer=True, minimum=1)
        check_number("residual_start", self.residual_start, integer=True)
        check_number("bidirectional_layers", self.bidirectional_layers,
                     integer=True, minimum=1,
                     maximum=self.num_encoder_layers)
        if self.bidirectional_layers > 1 and self.hidden_dim % 2:
            raise ValueError("bidirectional upper encoder layers split "
                             f"hidden_dim in two; got {self.hidden_dim}")
        check_number("dropout", self.dropout, minimum=0, below=1)
        check_number("logit_clip", self.logit_clip, above=0, optional=True)
        specials = {"pad_id": self.pad_id, "unk_id": self.unk_id,
                    "bos_id": self.bos_id, "eos_id": self.eos_id}
        for name, value in specials.items():
            check_number(name, value, integer=True, minimum=0,
                         below=self.vocabulary_size)
        if len(set(specials.values())) != len(specials):
            raise ValueError(f"special ids must be distinct, got {specials}")
        if self.num_encoder_layers < 1 or self.num_decoder_layers < 2:
            # The attention context feeds the decoder layers above the bottom
            # one, so a decoder needs at least two layers.
            raise ValueError("GNMT needs >= 1 encoder and >= 2 decoder layers")
        if self.residual_start < 3:
            # Encoder layer 2 maps the 2H-wide bidirectional output to H.
            raise ValueError("residual_start must be >= 3")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")


PRECISIONS = ("float32", "mixed_bfloat16")


def check_precision(precision):
    """Raises ValueError unless `precision` is one of `PRECISIONS`."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}"
                         f", not {precision!r}")


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """How a model is trained.

    Attributes:
      max_tokens: int. Target tokens per batch (token-based batching).
      max_length: int. Sentence pairs longer than this (in subwords) are dropped.
      learning_rate: float. Peak Adam learning rate.
      warmup_steps: int. Linear warm-up steps, then inverse square-root decay.
      label_smoothing: float. Label smoothing of the cross-entropy.
      clip_norm: float. Global gradient-norm clipping (GNMT: 5).
      train_steps: int. Upper bound on optimizer steps.
      max_minutes: float or None. Stop (and checkpoint) after this wall time.
      checkpoint_every: int. Save a checkpoint every N steps.
      keep_checkpoints: int. Most recent checkpoints kept (for averaging).
      delta_start, delta_end, delta_anneal_steps: cell-clipping delta schedule
        used when the model has `clip_cell`.
      shuffle_buffer: int. Sentence pairs in the shuffle buffer.
      seed: int. Random seed for shuffling and initialisation.
      bleu_every: int. Score BLEU of greedy translations of a validation
        sample every N steps (TensorBoard, `metrics.csv`); 0 = never.
      bleu_lines: int. Validation sentences in that sample (per direction
        for a multi-direction model).
      jit_compile: bool. Compile the training step with XLA. Batches are then
        padded to their length bucket's boundary, so that XLA compiles one
        program per bucket instead of one per batch shape.
      bucket_width: int. Batches hold sentence pairs whose longer side
        differs by less than this many subwords (1, as OpenNMT-tf: least
        padding), or 0: geometric buckets 25 % wide (more padding, fewer
        batch shapes for `jit_compile`).
      precision: str. `float32`, or `mixed_bfloat16` (Transformer models:
        bfloat16 compute, float32 weights, so checkpoints are the same;
        faster only where the CPU has bfloat16 matmuls, such as AVX-512
        BF16 or AMX).
    """

    max_tokens: int = 2048
    max_length: int = 64
    learning_rate: float = 2e-3
    warmup_steps: int = 400
    label_smoothing: float = 0.1
    clip_norm: float = 5.0
    train_steps: int = 100000
    max_minutes: typing.Optional[float] = None
    checkpoint_every: int = 500
    keep_checkpoints: int = 5
    delta_start: float = 8.0
    delta_end: float = 1.0
    delta_anneal_steps: int = 10000
    shuffle_buffer: int = 30000
    seed: int = 1234
    bleu_every: int = 0
    bleu_lines: int = 100
    jit_compile: bool = False
    bucket_width: int = 1
    precision: str = "float32"

    def __post_init__(self):
        check_precision(self.precision)
        for name in ("max_tokens", "max_length", "train_steps",
                     "checkpoint_every", "keep_checkpoints", "shuffle_buffer",
                     "delta_anneal_steps", "bleu_lines"):
            check_number(name, getattr(self, name), integer=True, minimum=1)
        for name in ("warmup_steps", "bleu_every", "bucket_width"):
            check_number(name, getattr(self, name), integer=True, minimum=0)
        check_number("seed", self.seed, integer=True, minimum=0)
        for name in ("learning_rate", "clip_norm", "delta_start",
                     "delta_end"):
            check_number(name, getattr(self, name), above=0)
        check_number("label_smoothing", self.label_smoothing, minimum=0,
                     below=1)
        check_number("max_minutes", self.max_minutes, above=0,
                     optional=True)

    def bucketing(self):
        """The bucketing arguments of `gnmt_tf.data.datasets.make_dataset`
        (and `batch_by_length`) that this config asks for."""
        return {"pad_to_bucket": self.jit_compile,
                "bucket_width": self.bucket_width}


def _convert(value: str, field_type):
    """Converts a --set string to a dataclass field's type."""
    if isinstance(field_type, str):  # postponed annotations
        field_type = eval(field_type, vars(typing))  # noqa: S307 (our own names)
    origin = typing.get_origin(field_type)
    if origin is typing.Union:
        args = [a for a in typing.get_args(field_type) if a is not type(None)]
        if value.lower() in ("none", "null"):
            return None
        return _convert(value, args[0])
    if field_type is bool:
        if value.lower() in ("1", "true", "yes", "on"):
            return True
        if value.lower() in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"not a boolean: {value!r}")
    return field_type(value)


def apply_overrides(config, overrides):
    """Returns `config` with `key=value` strings applied.

    Raises:
      ValueError: a key that is not a field, or a value of the wrong type.
    """
    fields = {f.name: f for f in dataclasses.fields(config)}
    changes = {}
    for item in overrides:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep:
            raise ValueError(f"override {item!r} is not key=value")
        if key not in fields:
            raise ValueError(
                f"unknown setting {key!r} for {type(config).__name__}; "
                f"known: {', '.join(sorted(fields))}")
        try:
            changes[key] = _convert(value.strip(), fields[key].type)
        except ValueError as e:
            raise ValueError(f"bad value for {key}: {e}") from None
    return dataclasses.replace(config, **changes)


def split_overrides(overrides, *configs):
    """Routes each `key=value` to the first config class that has the key."""
    routed = [[] for _ in configs]
    for item in overrides:
        key = item.partition("=")[0].strip()
        for i, config in enumerate(configs):
            if key in {f.name for f in dataclasses.fields(config)}:
                routed[i].append(item)
                break
        else:
            known = sorted({f.name for c in configs for f in dataclasses.fields(c)})
            raise ValueError(f"unknown setting {key!r}; known: {', '.join(known)}")
    return [apply_overrides(c, r) for c, r in zip(configs, routed)]


def to_json(config) -> str:
    return json.dumps(dataclasses.asdict(config), indent=2, sort_keys=True)


def from_dict(cls, values: dict):
    """Builds `cls` from a dict, rejecting unknown keys."""
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = set(values) - names
    if unknown:
        raise ValueError(f"unknown {cls.__name__} keys: {sorted(unknown)}")
    return cls(**values)
