"""gnmt-tf: a TensorFlow/Keras model zoo for neural machine translation.

Importing this package is cheap: it never imports TensorFlow itself. It only makes
sure that `tf.keras` resolves to Keras 2 (`tf_keras`), which
tensorflow-model-optimization requires, by setting `TF_USE_LEGACY_KERAS=1` before
any submodule imports TensorFlow. The public names below are loaded on first
use (PEP 562), so TensorFlow is imported only when one of them is.

Example:
```python
from gnmt_tf import Translator

translator = Translator.from_model_dir("runs/en_de")
translator.translate(["A dog runs in the park."])
```
"""

import importlib
import os

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
# oneDNN measured 1.4-1.6x faster for decoding (gnmt_tf.cpu_settings), and
# TensorFlow leaves it off on some CPUs (AMD Zen 3); the user's value wins.
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")
# TensorFlow's C++ INFO/WARNING lines drown the CLI output; errors still show.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# Searches compile with XLA by default (`gnmt_tf.search_engine`): keep what
# XLA compiles on disk for the next process (a flag TensorFlow reads when
# it loads; nothing when it is loaded already or $GNMT_TF_XLA_CACHE=off).
from gnmt_tf import xla_cache as _xla_cache  # noqa: E402

_xla_cache.enable()

__version__ = "0.1.0"

# Public name -> the module that defines it.
_LAZY_NAMES = {
    "load_model": "gnmt_tf.model_dir",
    "Translator": "gnmt_tf.translator",
    "SearchOptions": "gnmt_tf.translator",
    "TFLiteTranslator": "gnmt_tf.tflite_translator",
}

__all__ = ["__version__", *_LAZY_NAMES]


def __getattr__(name):
    if name not in _LAZY_NAMES:
        raise AttributeError(f"module 'gnmt_tf' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY_NAMES[name]), name)
    globals()[name] = value  # later look-ups skip __getattr__
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY_NAMES))
