"""gnmt-tf: a TensorFlow/Keras model zoo for neural machine translation.

Importing this package is cheap: it never imports TensorFlow itself. It only makes
sure that `tf.keras` resolves to Keras 2 (`tf_keras`), which
tensorflow-model-optimization requires, by setting `TF_USE_LEGACY_KERAS=1` before
any submodule imports TensorFlow.
"""

import os

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
# TensorFlow's C++ INFO/WARNING lines drown the CLI output; errors still show.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

__version__ = "0.1.0"
