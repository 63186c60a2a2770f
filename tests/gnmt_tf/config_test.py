import pytest

from gnmt_tf.config import GNMTConfig, TrainConfig, apply_overrides, split_overrides
from gnmt_tf.models.gnmt.presets import PRESETS, get_preset


def test_overrides_convert_types():
    config = apply_overrides(GNMTConfig(), [
        "hidden_dim=32", "dropout=0.5", "clip_cell=true", "logit_clip=none"])
    assert config.hidden_dim == 32 and config.dropout == 0.5
    assert config.clip_cell is True and config.logit_clip is None
    assert apply_overrides(GNMTConfig(), ["logit_clip=25"]).logit_clip == 25.0


def test_unknown_key_and_bad_value_are_errors():
    with pytest.raises(ValueError, match="unknown setting 'hiden_dim'"):
        apply_overrides(GNMTConfig(), ["hiden_dim=3"])
    with pytest.raises(ValueError, match="bad value for hidden_dim"):
        apply_overrides(GNMTConfig(), ["hidden_dim=big"])
    with pytest.raises(ValueError, match="not key=value"):
        apply_overrides(GNMTConfig(), ["hidden_dim"])


def test_split_overrides_routes_keys():
    model, train = split_overrides(
        ["hidden_dim=64", "max_tokens=100"], GNMTConfig(), TrainConfig())
    assert model.hidden_dim == 64 and train.max_tokens == 100
    with pytest.raises(ValueError, match="unknown setting"):
        split_overrides(["nope=1"], GNMTConfig(), TrainConfig())


def test_config_validation():
    with pytest.raises(ValueError):
        GNMTConfig(num_decoder_layers=1)
    with pytest.raises(ValueError):
        GNMTConfig(residual_start=2)


def test_presets():
    assert set(PRESETS) >= {"gnmt_8x8", "gnmt_small", "gnmt_tiny"}
    paper, _ = get_preset("gnmt_8x8")
    assert (paper.num_encoder_layers, paper.num_decoder_layers,
            paper.hidden_dim, paper.vocabulary_size) == (8, 8, 1024, 32000)
    assert paper.clip_cell and paper.logit_clip == 25.0
    with pytest.raises(ValueError, match="unknown preset"):
        get_preset("gnmt_huge")
