"""Model types: what a model directory's ``model_type`` names.

Each package declares its model types as entry points of the group
``gnmt_tf.model_types`` in `setup.py` (name = the ``model_type`` string,
value = a `ModelType` object in a module that does not import TensorFlow).
`gnmt_tf` finds them through the installed package's metadata, so it never
imports `task_space` or `export`, and a new model family is added by
declaring it, not by editing `gnmt_tf`.

Example (setup.py):
```python
entry_points={"gnmt_tf.model_types": [
    "my_model = my_package.registry:MY_MODEL",
]}
```
"""

import dataclasses
import functools
import importlib
from importlib import metadata
from typing import Dict, Optional, Tuple

ENTRY_POINT_GROUP = "gnmt_tf.model_types"


@dataclasses.dataclass(frozen=True)
class ModelType:
    """One ``model_type`` of `config.json`.

    Attributes:
      model_class: ``"module:Class"`` of the model (a `Seq2SeqModel`).
      config_class: ``"module:Class"`` of its config (a dataclass, or a class
        with `from_dict`).
      presets: the preset names that train this type (`gnmt-tf train
        --preset`).
      train: ``"module:function"`` called as `function(args)` with the
        parsed `gnmt-tf train` arguments, for `presets`.
      train_arguments: ``"module:function"`` adding the type's own flags
        to the `gnmt-tf train` parser (a light module: it runs for
        `--help`).
      quantized_from: for a quantization-aware variant, the float type it
        is made from (`gnmt-tf export qat`).
      finetune_data: ``"module:function"`` giving the type's fine-tuning
        data: `function(model, subwords, payload, data_dir, train_config)`
        -> `(train_config, dataset)`, with `payload` the trained
        directory's `config.json`: for a quantization-aware variant, what
        `gnmt_tf.export.qat.qat_finetune` trains it on; for a float type, what
        RL refinement (`gnmt_tf.training.rl_refinement`) samples from.
    """

    model_class: str
    config_class: str
    presets: Tuple[str, ...] = ()
    train: Optional[str] = None
    train_arguments: Optional[str] = None
    quantized_from: Optional[str] = None
    finetune_data: Optional[str] = None


def load_object(path):
    """``"module:name"`` -> the object."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


@functools.lru_cache(maxsize=None)
def model_types() -> Dict[str, ModelType]:
    """Every declared model type by name (imports only the light modules
    the entry points name)."""
    return {entry.name: entry.load()
            for entry in metadata.entry_points(group=ENTRY_POINT_GROUP)}


def get_model_type(name) -> ModelType:
    """The `ModelType` called `name`.

    Raises:
      ValueError: no package declares it (naming the known ones).
    """
    types = model_types()
    if name not in types:
        raise ValueError(f"unknown model type {name!r}; known: "
                         f"{', '.join(sorted(types)) or '(none installed)'}")
    return types[name]


def quantized_variant(float_type) -> Tuple[str, ModelType]:
    """`(name, ModelType)` of the quantization-aware variant of the type
    `float_type`.

    Raises:
      ValueError: there is none (e.g. `float_type` is itself a QAT type).
    """
    for name, model_type in model_types().items():
        if model_type.quantized_from == float_type:
            return name, model_type
    floats = sorted(t.quantized_from for t in model_types().values()
                    if t.quantized_from)
    raise ValueError(f"model type {float_type!r} has no quantization-aware "
                     f"variant; float types that do: {', '.join(floats)}")


def model_type_of_preset(preset) -> Tuple[str, ModelType]:
    """`(name, ModelType)` whose presets include `preset`.

    Raises:
      ValueError: no model type has that preset (naming the known ones).
    """
    for name, model_type in model_types().items():
        if preset in model_type.presets:
            return name, model_type
    known = sorted(p for t in model_types().values() for p in t.presets)
    raise ValueError(f"unknown preset {preset!r}; known: {', '.join(known)}")
