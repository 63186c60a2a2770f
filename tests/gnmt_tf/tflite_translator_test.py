"""`TFLiteTranslator.from_export_dir` opens what `gnmt-tf translate
--tflite` opens: a folder, a file or a shipped model's name; anything else
is a one-line `FileNotFoundError`."""

import pytest

from gnmt_tf.pretrained import tflite_path
from gnmt_tf.tflite_translator import TFLiteTranslator


@pytest.mark.parametrize("name", ["multi30k-transformer",
                                  "multi30k-gnmt-en-de"])
def test_a_shipped_model_name_opens_its_int8_export(name):
    translator = TFLiteTranslator.from_export_dir(name)
    assert translator.runtime.path == tflite_path(name)
    assert translator.vocabulary_path == tflite_path(name).parent / "spm.model"


def test_the_export_folder_and_file_open_too():
    path = tflite_path("multi30k-gnmt-en-de")
    for given in (path, path.parent):
        assert TFLiteTranslator.from_export_dir(given).runtime.path == path
    assert TFLiteTranslator.from_export_dir(path).translate(
        ["A dog runs."], beam_size=2) == ["Ein Hund rennt."]


@pytest.mark.parametrize("given", ["{tmp}/missing", "{tmp}/missing.tflite",
                                   "no-such-model"])
def test_a_wrong_path_is_one_line(given, tmp_path):
    path = given.format(tmp=tmp_path)
    with pytest.raises(FileNotFoundError) as raised:
        TFLiteTranslator.from_export_dir(path)
    message = str(raised.value)
    assert message.startswith(f"{path} is not a .tflite file nor the name "
                              "of a shipped model"), message
    assert "\n" not in message


def test_an_empty_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match=f"no .tflite file in "
                                                f"{tmp_path}$"):
        TFLiteTranslator.from_export_dir(tmp_path)
