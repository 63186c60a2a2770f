"""Model types declared as entry points (`gnmt_tf.model_types`)."""

import pytest

from gnmt_tf import model_types


def test_every_package_declares_its_types():
    assert set(model_types.model_types()) == {
        "gnmt", "gnmt_qat", "task_space_transformer",
        "task_space_transformer_qat"}


@pytest.mark.parametrize("name", sorted(model_types.model_types()))
def test_classes_load(name):
    from gnmt_tf.model_dir import model_classes

    model_cls, config_cls = model_classes(name)
    for method in ("task_inputs", "encode", "initial_state", "step"):
        assert callable(getattr(model_cls, method)), (name, method)
    assert isinstance(config_cls, type)


def test_presets_match_the_preset_modules():
    from gnmt_tf.models.gnmt.presets import PRESETS
    from gnmt_tf.models.task_space.presets import TRANSFORMER_PRESETS

    assert set(model_types.get_model_type("gnmt").presets) == set(PRESETS)
    assert set(model_types.get_model_type(
        "task_space_transformer").presets) == set(TRANSFORMER_PRESETS)
    assert model_types.model_type_of_preset("transformer_tiny")[0] == (
        "task_space_transformer")
    with pytest.raises(ValueError, match="known: gnmt_8x8"):
        model_types.model_type_of_preset("lstm_huge")


@pytest.mark.parametrize("family", ["gnmt", "task_space"])
def test_every_family_has_one_preset_format(family):
    """The family's `get_preset(name)`: the model config
    and the training settings together, for each of its model type's
    presets; an unknown name is an error naming the known ones."""
    import importlib

    from gnmt_tf.config import TrainConfig
    from gnmt_tf.model_dir import model_classes

    presets = importlib.import_module(
        {"gnmt": "gnmt_tf.models.gnmt.presets",
         "task_space": "gnmt_tf.models.task_space.training"}[family])
    type_name = {"gnmt": "gnmt", "task_space": "task_space_transformer"}[family]
    _, config_cls = model_classes(type_name)
    for name in model_types.get_model_type(type_name).presets:
        model_config, train_config = presets.get_preset(name)
        assert isinstance(model_config, config_cls)
        assert isinstance(train_config, TrainConfig)
    with pytest.raises(ValueError, match="unknown preset 'nope'"):
        presets.get_preset("nope")


def test_quantized_variants():
    assert model_types.quantized_variant("gnmt")[0] == "gnmt_qat"
    assert model_types.quantized_variant("task_space_transformer")[0] == (
        "task_space_transformer_qat")
    with pytest.raises(ValueError, match="float types that do: gnmt, "
                                         "task_space_transformer"):
        model_types.quantized_variant("gnmt_qat")


def test_unknown_type_names_the_known_ones():
    from gnmt_tf.model_dir import model_classes

    with pytest.raises(ValueError, match="known: gnmt, gnmt_qat"):
        model_classes("rnn_search")
