"""A model's final weights as one `.npz` file, for shipping trained models.

Training checkpoints hold the optimizer slots and every weight in float32;
a shipped model needs neither. `save_weights` writes `model.weights` in
order, cast to float16 by default (half the size; the weights are cast back
to the model's dtype on load), with their names, so `load_weights` can say
which weight does not fit instead of loading garbage.
"""

import numpy as np

from gnmt_tf.io_utils import atomic_path

NAMES_KEY = "__names__"


def save_weights(model, path, dtype="float16"):
    """Writes `model.weights` (built) to `path` (`.npz`), atomically."""
    arrays = {f"w{i:04d}": np.asarray(weight.numpy(), dtype=dtype)
              for i, weight in enumerate(model.weights)}
    arrays[NAMES_KEY] = np.array([weight.name for weight in model.weights])
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        np.savez(f, **arrays)


def load_weights(model, path):
    """Sets a built model's weights from a `save_weights` file.

    Raises:
      ValueError: the file does not hold this model's weights (count, name
        or shape differs), or is not a weights file.
    """
    try:
        with np.load(path, allow_pickle=False) as data:
            names = [str(name) for name in data[NAMES_KEY]]
            arrays = [data[f"w{i:04d}"] for i in range(len(names))]
    except (OSError, KeyError, ValueError) as e:
        raise ValueError(f"{path} is not a weights file: {e}") from None
    if len(names) != len(model.weights):
        raise ValueError(f"{path} holds {len(names)} weights, the model "
                         f"has {len(model.weights)}")
    for name, array, weight in zip(names, arrays, model.weights):
        if tuple(array.shape) != tuple(weight.shape):
            raise ValueError(f"{path}: weight {name} has shape {array.shape}, "
                             f"the model's {weight.name} {tuple(weight.shape)}")
    model.set_weights([np.asarray(array, dtype=weight.dtype.as_numpy_dtype)
                       for array, weight in zip(arrays, model.weights)])
