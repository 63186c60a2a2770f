"""The host translators (TFLite, ONNX) and their NumPy search load no
TensorFlow: a device or a light client translates without it."""

import subprocess
import sys


def test_host_translation_imports_no_tensorflow():
    code = ("import sys\n"
            "import gnmt_tf.host_translator, gnmt_tf.tflite_translator\n"
            "import gnmt_tf.decoding.host_beam_search\n"
            "import gnmt_tf.cli.translate_backends, gnmt_tf.flags.search\n"
            "loaded = sorted(m for m in sys.modules if m == 'tensorflow' "
            "or m.startswith('tensorflow.'))\n"
            "assert not loaded, loaded[:5]\n")
    result = subprocess.run([sys.executable, "-c", code],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
