"""Tests for gnmt_tf.models.task_space.config.TransformerConfig and its presets."""

import json

import pytest

from gnmt_tf.models.task_space.config import TransformerConfig
from gnmt_tf.models.task_space.presets import TRANSFORMER_PRESETS


@pytest.mark.parametrize("name", sorted(TRANSFORMER_PRESETS))
def test_presets_are_valid(name):
    config = TransformerConfig.from_preset(name)
    assert config.hidden_dim % config.num_heads == 0
    assert (config.pad_id, config.unk_id, config.bos_id, config.eos_id) == (
        0, 1, 2, 3)


def test_base_preset_matches_vaswani():
    config = TransformerConfig.from_preset("transformer_base")
    assert (config.num_layers, config.hidden_dim, config.num_heads,
            config.intermediate_dim, config.dropout) == (6, 512, 8, 2048, 0.1)


def test_overrides_and_round_trip():
    config = TransformerConfig.from_preset("transformer_tiny", dropout=0.2)
    assert config.dropout == 0.2
    values = json.loads(json.dumps(config.to_dict()))
    assert TransformerConfig.from_dict(values) == config
    assert config.replace(num_layers=1).num_layers == 1


def test_task_features():
    config = TransformerConfig.from_preset("transformer_tiny")
    features = config.task_features("en", "de", ["news", "formal"])
    assert features == {"src_lang": 0, "tgt_lang": 1,
                        "tags": [0, 1, 0, 0, 0, 1]}
    assert config.tag_vector([]) == [0] * 6
    assert config.tag_vector("caption") == [1, 0, 0, 0, 0, 0]


@pytest.mark.parametrize("call, match", [
    (lambda: TransformerConfig.from_preset("transformer_huge"),
     "unknown preset 'transformer_huge'"),
    (lambda: TransformerConfig.from_preset("transformer_tiny").language_id(
        "xx"), "unknown language 'xx'"),
    (lambda: TransformerConfig.from_preset("transformer_tiny").task_features(
        "en", "de", ["news", "sports"]), "unknown scene tag 'sports'"),
    (lambda: TransformerConfig.from_preset("transformer_tiny", num_heads=3),
     "divisible by num_heads"),
    (lambda: TransformerConfig.from_preset("transformer_tiny", bos_id=0),
     "special ids must be distinct"),
    (lambda: TransformerConfig.from_preset("transformer_tiny",
                                           languages=("en", "en")),
     "duplicates"),
    (lambda: TransformerConfig.from_dict({"vocab_size": 3}),
     "unknown TransformerConfig fields"),
])
def test_bad_values_raise(call, match):
    with pytest.raises(ValueError, match=match):
        call()
