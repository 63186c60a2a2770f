"""Output files are complete or untouched (`gnmt_tf.io_utils`)."""

import os

import pytest

from gnmt_tf.io_utils import (atomic_write, check_output_file,
                              copy_file_atomic, write_text_atomic)


def _leftovers(folder, keep):
    return sorted(p.name for p in folder.iterdir() if p.name not in keep)


def test_atomic_write_replaces_on_success(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text("old\n")
    os.chmod(path, 0o640)
    with atomic_write(path) as f:
        f.write("new\n")
        assert path.read_text() == "old\n"  # not visible before the end
    assert path.read_text() == "new\n"
    assert path.stat().st_mode & 0o777 == 0o640  # the file keeps its mode
    assert _leftovers(tmp_path, {"out.txt"}) == []


def test_new_file_gets_the_umask_mode(tmp_path):
    write_text_atomic(tmp_path / "new.txt", "x")
    umask = os.umask(0)
    os.umask(umask)
    assert (tmp_path / "new.txt").stat().st_mode & 0o777 == 0o666 & ~umask


def test_failed_write_leaves_the_file_untouched(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text("precious\n")
    with pytest.raises(RuntimeError):
        with atomic_write(path) as f:
            f.write("partial")
            raise RuntimeError("bad input halfway")
    assert path.read_text() == "precious\n"
    assert _leftovers(tmp_path, {"out.txt"}) == []


def test_failed_write_creates_no_file(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        with atomic_write(tmp_path / "out.bin", "wb") as f:
            f.write(b"\x00")
            raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []


def test_output_that_is_an_input_is_refused(tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("data\n")
    link = tmp_path / "link.txt"
    link.symlink_to(source)
    for output in (source, link, tmp_path / "." / "in.txt"):
        with pytest.raises(ValueError, match="is the same file as --input"):
            check_output_file(output, {"--input": source})
    check_output_file(tmp_path / "other.txt", {"--input": source})
    check_output_file(None, {"--input": source})  # stdout
    assert source.read_text() == "data\n"


def test_output_folder_problems_are_named_before_any_work(tmp_path):
    with pytest.raises(IsADirectoryError):
        check_output_file(tmp_path)
    with pytest.raises(FileNotFoundError, match="no such folder"):
        check_output_file(tmp_path / "missing" / "out.txt")


def test_copy_onto_itself_keeps_the_file(tmp_path):
    path = tmp_path / "spm.model"
    path.write_bytes(b"model")
    copy_file_atomic(path, path)
    assert path.read_bytes() == b"model"
    copy_file_atomic(path, tmp_path / "copy.model")
    assert (tmp_path / "copy.model").read_bytes() == b"model"
