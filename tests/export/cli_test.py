"""`gnmt-tf export`: argument handling and the unavailable back-ends."""

import subprocess
import sys

import pytest

from gnmt_tf.cli.main import main


def test_import_is_light():
    code = ("import sys, gnmt_tf.export.cli; "
            "assert 'tensorflow' not in sys.modules, 'TensorFlow imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_actions_are_registered(capsys):
    with pytest.raises(SystemExit):
        main(["export", "--help"])
    out = capsys.readouterr().out
    for action in ("savedmodel", "tflite", "tensorrt", "onnx"):
        assert action in out


def test_tensorrt_without_gpu_exits_2(capsys, tmp_path):
    from gnmt_tf.export.tensorrt import tensorrt_problem

    if tensorrt_problem() is None:
        pytest.skip("TF-TRT is available here (see tensorrt_test.py)")
    assert main(["export", "tensorrt", "--model", str(tmp_path),
                 "--out", str(tmp_path / "trt")]) == 2
    assert "TF-TRT needs" in capsys.readouterr().err


def test_savedmodel_bad_out_is_usage_error(capsys, tiny_model_dir, tmp_path):
    code = main(["export", "savedmodel", "--model", str(tiny_model_dir),
                 "--out", str(tmp_path / "tiny" / "latest")])
    assert code == 2
    assert "VERSION" in capsys.readouterr().err


def test_savedmodel_missing_model_is_usage_error(capsys, tmp_path):
    code = main(["export", "savedmodel", "--model", str(tmp_path / "nope"),
                 "--out", str(tmp_path / "out" / "1")])
    assert code == 2
    assert "not a model directory" in capsys.readouterr().err
