"""One writer per model directory; no half-made directory after a failed
start (`gnmt_tf.training.model_dir_guard`)."""

import pytest

from gnmt_tf.training.model_dir_guard import (ModelDirBusyError,
                                              claim_model_dir)

def test_second_writer_is_refused(locked_dir):
    with pytest.raises(ModelDirBusyError, match="in use by another training"):
        with claim_model_dir(locked_dir):
            pytest.fail("entered a locked model directory")
    assert locked_dir.is_dir()  # the other run's directory stays


def test_lock_is_released_after_the_run(tmp_path):
    with claim_model_dir(tmp_path / "m"):
        (tmp_path / "m" / "config.json").write_text("{}")
    with claim_model_dir(tmp_path / "m"):
        pass
    assert (tmp_path / "m" / "config.json").exists()


def test_failed_run_removes_the_directory_it_created(tmp_path):
    path = tmp_path / "new" / "model"
    with pytest.raises(ValueError):
        with claim_model_dir(path):
            (path / "config.json").write_text("{}")
            (path / "spm.model").write_bytes(b"x")
            raise ValueError("vocabulary training failed")
    assert not (tmp_path / "new").exists()  # parents it made go too


def test_failed_run_keeps_a_user_directory_and_its_files(tmp_path):
    path = tmp_path / "model"
    path.mkdir()
    (path / "notes.txt").write_text("mine")
    with pytest.raises(KeyboardInterrupt):
        with claim_model_dir(path):
            (path / "config.json").write_text("{}")
            (path / "checkpoints").mkdir()
            raise KeyboardInterrupt
    assert sorted(p.name for p in path.iterdir()) == ["notes.txt"]


def test_failed_run_after_a_checkpoint_keeps_everything(tmp_path):
    path = tmp_path / "model"
    with pytest.raises(RuntimeError):
        with claim_model_dir(path):
            (path / "config.json").write_text("{}")
            (path / "checkpoints").mkdir()
            (path / "checkpoints" / "checkpoint").write_text(
                'model_checkpoint_path: "ckpt-5"\n')
            raise RuntimeError("killed at step 7")
    assert (path / "config.json").exists()  # resumable


def test_a_file_is_not_a_model_directory(tmp_path):
    path = tmp_path / "file"
    path.write_text("x")
    with pytest.raises(NotADirectoryError):
        with claim_model_dir(path):
            pass
    assert path.read_text() == "x"
