"""`TransformerConfig`: the typed, validated config of `TaskSpaceTransformer`.

Imports no TensorFlow, so the CLI can read and override configs cheaply.
"""

import dataclasses
from typing import Iterable, Mapping, Sequence, Tuple

from gnmt_tf.checks import check_number
from gnmt_tf.seq2seq_model import TaskInput
from gnmt_tf.models.task_space.presets import TRANSFORMER_PRESETS

DEFAULT_LANGUAGES = ("en", "de", "fr", "cs")
DEFAULT_SCENE_TAGS = (
    "caption", "news", "conversation", "ecommerce", "social", "formal")


@dataclasses.dataclass(frozen=True)
class TransformerConfig:
    """Hyperparameters of the task-space Transformer (Ctrip-style).

    A *task* is a translation direction (source language, target language)
    plus a set of scene tags; see `gnmt_tf.models.task_space.task_space_encoding`.

    Args:
        vocabulary_size: int. Size of the shared source/target subword
            vocabulary, special ids included.
        num_layers: int. Number of encoder layers and of decoder layers.
        num_heads: int. Attention heads; must divide `hidden_dim`.
        hidden_dim: int. Model width d (embeddings, residual stream).
        intermediate_dim: int. Inner width of the feed-forward blocks.
        dropout: float. Dropout on embeddings and residual branches.
        max_sequence_length: int. Longest source or target (in subwords) the
            model is meant for; the default KV-cache length for decoding.
        languages: tuple of str. Language codes; the index of a code is its
            id in the `src_lang` / `tgt_lang` inputs.
        scene_tags: tuple of str. Scene tag names; the index of a tag is its
            column in the multi-hot `tags` input `[B, num_tags]`.
        use_task_space: bool. If False the model ignores the task inputs and
            is a plain (shared-vocabulary) Transformer.
        attention_dropout: float. Dropout on attention probabilities.
        recompute: bool. Recompute each encoder and decoder layer's
            activations in the backward pass instead of keeping them
            (`tf.recompute_grad`, see `gnmt_tf.layers.recompute`).
        layer_norm_epsilon: float. Epsilon of every layer normalization.
        pad_id, unk_id, bos_id, eos_id: int. Special token ids. `pad_id`
            marks padding in `source_ids` / `target_in_ids`; `bos_id` is the
            first decoder input; `eos_id` ends a hypothesis.

    Raises:
        ValueError: on inconsistent values (e.g. `hidden_dim` not divisible
            by `num_heads`, duplicated language codes).

    Example:
    ```python
    config = TransformerConfig.from_preset("transformer_small", dropout=0.2)
    features = config.task_features("en", "de", ["news", "formal"])
    ```
    """

    vocabulary_size: int
    num_layers: int
    num_heads: int
    hidden_dim: int
    intermediate_dim: int
    dropout: float = 0.1
    max_sequence_length: int = 256
    languages: Tuple[str, ...] = DEFAULT_LANGUAGES
    scene_tags: Tuple[str, ...] = DEFAULT_SCENE_TAGS
    use_task_space: bool = True
    attention_dropout: float = 0.0
    recompute: bool = False
    layer_norm_epsilon: float = 1e-6
    pad_id: int = 0
    unk_id: int = 1
    bos_id: int = 2
    eos_id: int = 3

    def __post_init__(self):
        # Lists (e.g. from JSON) become tuples so the config stays hashable.
        object.__setattr__(self, "languages", tuple(self.languages))
        object.__setattr__(self, "scene_tags", tuple(self.scene_tags))
        for name in ("vocabulary_size", "num_layers", "num_heads",
                     "hidden_dim", "intermediate_dim", "max_sequence_length"):
            if int(getattr(self, name)) < 1:
                raise ValueError(
                    f"{name} must be a positive integer, "
                    f"got {getattr(self, name)!r}")
        if self.hidden_dim % self.num_heads:
            raise ValueError(
                f"hidden_dim ({self.hidden_dim}) must be divisible by "
                f"num_heads ({self.num_heads})")
        check_number("layer_norm_epsilon", self.layer_norm_epsilon,
                     above=0)
        for name in ("dropout", "attention_dropout"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ValueError(
                    f"{name} must be in [0, 1), got {getattr(self, name)!r}")
        specials = {"pad_id": self.pad_id, "unk_id": self.unk_id,
                    "bos_id": self.bos_id, "eos_id": self.eos_id}
        if len(set(specials.values())) != len(specials):
            raise ValueError(f"special ids must be distinct, got {specials}")
        for name, value in specials.items():
            if not 0 <= value < self.vocabulary_size:
                raise ValueError(
                    f"{name}={value} is outside the vocabulary "
                    f"[0, {self.vocabulary_size})")
        for name in ("languages", "scene_tags"):
            values = getattr(self, name)
            if not values:
                raise ValueError(f"{name} must not be empty")
            if len(set(values)) != len(values):
                raise ValueError(f"{name} has duplicates: {values}")

    # --- Construction -----------------------------------------------------

    @classmethod
    def from_preset(cls, name: str, **overrides) -> "TransformerConfig":
        """The preset `name` (see `gnmt_tf.models.task_space.presets`), with overrides."""
        if name not in TRANSFORMER_PRESETS:
            raise ValueError(
                f"unknown preset {name!r}; known presets: "
                f"{sorted(TRANSFORMER_PRESETS)}")
        return cls.from_dict({**TRANSFORMER_PRESETS[name], **overrides})

    @classmethod
    def from_dict(cls, values: Mapping) -> "TransformerConfig":
        """Inverse of `to_dict`; unknown keys raise a ValueError."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(
                f"unknown TransformerConfig fields {unknown}; "
                f"known: {sorted(known)}")
        return cls(**values)

    def to_dict(self) -> dict:
        """JSON-serialisable dict of all fields (tuples become lists)."""
        values = dataclasses.asdict(self)
        values["languages"] = list(self.languages)
        values["scene_tags"] = list(self.scene_tags)
        return values

    def replace(self, **overrides) -> "TransformerConfig":
        """A copy with some fields changed (validated again)."""
        return self.from_dict({**self.to_dict(), **overrides})

    # --- Derived sizes ----------------------------------------------------

    @property
    def head_dim(self) -> int:
        return self.hidden_dim // self.num_heads

    @property
    def num_languages(self) -> int:
        return len(self.languages)

    @property
    def num_tags(self) -> int:
        return len(self.scene_tags)

    # --- Task names to model inputs ---------------------------------------

    def task_inputs(self) -> tuple:
        """The model's task inputs (`gnmt_tf.seq2seq_model.TaskInput`):
        source language, target language (not the source's), scene tags."""
        return (TaskInput("src_lang", self.languages, label="language"),
                TaskInput("tgt_lang", self.languages, label="language",
                          differs_from="src_lang"),
                TaskInput("tags", self.scene_tags, multi_hot=True,
                          label="scene tag"))

    def language_id(self, language: str) -> int:
        """Index of a language code, e.g. `"de"` -> 1."""
        return self.task_inputs()[0].to_ids(language)

    def tag_vector(self, tags: Iterable[str]) -> list:
        """Multi-hot list of length `num_tags` for a set of tag names."""
        return self.task_inputs()[2].to_ids(tags)

    def task_features(self, src_lang: str, tgt_lang: str,
                      tags: Sequence[str] = ()) -> dict:
        """The per-example task inputs of `TaskSpaceTransformer`.

        Returns:
            dict with `"src_lang"` (int), `"tgt_lang"` (int) and `"tags"`
            (list of `num_tags` ints, multi-hot); stack them to get the
            `[B]`, `[B]` and `[B, num_tags]` model inputs.
        """
        return {"src_lang": self.language_id(src_lang),
                "tgt_lang": self.language_id(tgt_lang),
                "tags": self.tag_vector(tags)}
