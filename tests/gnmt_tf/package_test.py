"""The top-level API: `import gnmt_tf` stays cheap, its names load lazily."""

import subprocess
import sys

import pytest

import gnmt_tf


def test_import_does_not_import_tensorflow():
    code = ("import gnmt_tf, sys; assert 'tensorflow' not in sys.modules; "
            "assert 'Translator' in dir(gnmt_tf); "
            "assert 'tensorflow' not in sys.modules")
    result = subprocess.run([sys.executable, "-c", code],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def test_public_names_resolve_to_their_modules():
    from gnmt_tf import SearchOptions, Translator, load_model
    from gnmt_tf.model_dir import load_model as model_dir_load_model
    from gnmt_tf.tflite_translator import TFLiteTranslator
    from gnmt_tf.translator import SearchOptions as translator_options
    from gnmt_tf.translator import Translator as translator_class

    assert Translator is translator_class and gnmt_tf.Translator is Translator
    assert load_model is model_dir_load_model
    assert SearchOptions is translator_options
    assert gnmt_tf.TFLiteTranslator is TFLiteTranslator
    assert set(gnmt_tf.__all__) >= {"Translator", "load_model",
                                    "TFLiteTranslator", "SearchOptions"}


def test_unknown_names_raise_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'Translater'"):
        gnmt_tf.Translater  # noqa: B018
