"""Fixtures for the export tests: the exports of the model families' tiny
models, as the harness makes them (`model_families.FamilyArtifacts`, through
the `model_families` fixture of `tests/conftest.py`), so that each is built
once per session for the harness and these tests together.
"""

import types

import pytest

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)
from model_families import FAMILIES_BY_NAME

GNMT = FAMILIES_BY_NAME["gnmt"]
TASK_SPACE = FAMILIES_BY_NAME["task_space_transformer"]


@pytest.fixture(scope="session")
def settings():
    """The GNMT family's example sentences and export options."""
    export = GNMT.savedmodel
    return types.SimpleNamespace(
        sentences=GNMT.sentences, beam_size=export["beam_size"],
        alpha=export["length_penalty"], beta=export["coverage_penalty"],
        extra_beam_sizes=export["beam_sizes"])


@pytest.fixture(scope="session")
def gnmt(model_families):
    return model_families(GNMT.name)


@pytest.fixture(scope="session")
def task_space(model_families):
    return model_families(TASK_SPACE.name)


@pytest.fixture(scope="session")
def export_dir(gnmt):
    """The tiny GNMT exported through `gnmt-tf export savedmodel`
    (`<tmp>/gnmt/1`)."""
    return gnmt.savedmodel


@pytest.fixture(scope="session")
def fresh_process(gnmt):
    """What a fresh Python process sees of `export_dir` (see
    `tests/harness/savedmodel_probe.py`)."""
    return gnmt.fresh


@pytest.fixture
def translator(gnmt):
    """An in-process `Translator` for the tiny GNMT (function-scoped: see
    `FamilyArtifacts.translator`)."""
    return gnmt.translator


@pytest.fixture(scope="session")
def ts_export_dir(task_space):
    """The tiny task-space Transformer through `gnmt-tf export savedmodel`
    (beam 2 only; `<tmp>/task_space_transformer/1`)."""
    return task_space.savedmodel


@pytest.fixture(scope="session")
def ts_fresh(task_space):
    """What a fresh Python process sees of `ts_export_dir`."""
    return task_space.fresh


@pytest.fixture
def ts_translator(task_space):
    return task_space.translator


# --- host-side exports (TFLite, ONNX) of both families ---


@pytest.fixture(scope="session")
def tflite_float32(tmp_path_factory, tiny_model_dir):
    """`(model_path, vocabulary_path)` of the tiny GNMT as float32 TFLite
    (no `model.json`: a GNMT export needs none)."""
    import shutil

    from gnmt_tf.export.tflite import convert
    from gnmt_tf.model_dir import load_model

    out = tmp_path_factory.mktemp("tflite")
    model_path = out / "model_float32.tflite"
    model_path.write_bytes(convert(load_model(tiny_model_dir)[0], "float32"))
    shutil.copyfile(tiny_model_dir / "spm.model", out / "spm.model")
    return model_path, out / "spm.model"


@pytest.fixture(scope="session")
def onnx_dir(tiny_model_dir, tmp_path_factory):
    """The tiny GNMT through `gnmt-tf export onnx`."""
    from gnmt_tf.cli.main import main

    out = tmp_path_factory.mktemp("onnx")
    assert main(["export", "onnx", "--model", str(tiny_model_dir),
                 "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="session")
def ts_tflite_dir(task_space):
    """The task-space model's float32 TFLite export, through `gnmt-tf
    export tflite` (a growing KV cache, the default), as the harness made
    it."""
    return task_space.tflite_dir


@pytest.fixture(scope="session")
def ts_onnx_paths(ts_model_dir, tmp_path_factory):
    """`export_onnx`'s paths for the task-space model."""
    from gnmt_tf.export.onnx_export import export_onnx

    return export_onnx(ts_model_dir, tmp_path_factory.mktemp("ts_onnx"))
