"""`gnmt-tf translate` streams: lazy input, output chunk by chunk."""

import io
import os
import select
import subprocess
import sys

import pytest

from gnmt_tf.cli import streaming
from gnmt_tf.cli.main import main


def test_iter_lines_is_lazy_and_splits_as_decode_lines():
    def source():
        yield b"one\r\n"
        yield b"two\n"
        raise AssertionError("read past what was asked for")

    lines = streaming.iter_lines(source(), "<test>")
    assert next(lines) == "one" and next(lines) == "two"
    raw = b"a\n\nlast without newline"
    assert list(streaming.iter_lines(io.BytesIO(raw), "x")) == [
        "a", "", "last without newline"]
    with pytest.raises(ValueError, match=r"^<in>:2: invalid UTF-8"):
        list(streaming.iter_lines(io.BytesIO(b"ok\n\xff\n"), "<in>"))


def test_chunks_and_their_sizes(tmp_path):
    assert list(streaming.chunks(iter("abcde"), 2)) == [
        (0, ["a", "b"]), (2, ["c", "d"]), (4, ["e"])]
    path = tmp_path / "in.txt"
    path.write_text("x\n")
    with open(path, "rb") as f:
        assert streaming.chunk_size(f, 4) == 4 * streaming.SORT_WINDOW_BATCHES
    read, write = os.pipe()
    with os.fdopen(read, "rb") as r, os.fdopen(write, "wb"):
        assert streaming.chunk_size(r, 4) == 4
    assert streaming.chunk_size(io.BytesIO(b""), 4) == 4


def test_positions_in_errors_count_from_the_whole_input():
    error = streaming.renumbered(ValueError("input 2 has 300 subwords"), 64)
    assert str(error) == "input 66 has 300 subwords"
    other = ValueError("something else")
    assert streaming.renumbered(other, 64) is other


class _Stdin:
    """stdin as a pipe would be (no file descriptor: one batch a chunk)."""

    def __init__(self, data):
        self.buffer = io.BytesIO(data)


def test_nbest_numbers_and_blank_lines_across_chunks(tiny_model_dir,
                                                     monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", _Stdin(b"A big dog runs.\n\nA cat.\n"))
    code = main(["translate", "--model", str(tiny_model_dir), "--batch-size",
                 "1", "--beam-size", "2", "--n-best", "2"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert [line.split(" ||| ")[0] for line in out.splitlines()] == [
        "0", "0", "1", "2", "2"]
    assert "1 empty input line(s)" in err


def test_a_long_line_is_named_by_its_place_in_the_input(
        tiny_model_dir, monkeypatch, capsys):
    long_line = " ".join(["dog"] * 300)
    monkeypatch.setattr(sys, "stdin", _Stdin(
        f"A dog.\nA cat.\n{long_line}\n".encode()))
    code = main(["translate", "--model", str(tiny_model_dir), "--batch-size",
                 "1", "--beam-size", "1"])
    out, err = capsys.readouterr()
    assert code == 2 and "error: input 3 has " in err
    assert len(out.splitlines()) == 2  # the chunks before it were written


def _read_lines(fd, count, timeout):
    """`count` lines from the file descriptor `fd`, unbuffered."""
    data = b""
    while data.count(b"\n") < count:
        ready, _, _ = select.select([fd], [], [], timeout)
        assert ready, f"no output within {timeout} s (got {data!r})"
        chunk = os.read(fd, 4096)
        assert chunk, f"output closed early (got {data!r})"
        data += chunk
    return data.splitlines(keepends=True)


def test_translations_appear_before_stdin_is_closed(tiny_model_dir):
    process = subprocess.Popen(
        [sys.executable, "-m", "gnmt_tf.cli.main", "translate", "--model",
         str(tiny_model_dir), "--batch-size", "2", "--beam-size", "1"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE)
    try:
        process.stdin.write(b"A big dog runs.\nA small cat sleeps.\n")
        process.stdin.flush()
        # stdin stays open: the first batch must come back on its own.
        first = _read_lines(process.stdout.fileno(), 2, 300)
        assert len(first) == 2
        process.stdin.write(b"An old man eats.\n")
        process.stdin.close()
        rest = _read_lines(process.stdout.fileno(), 1, 300)
        process.wait(timeout=300)
        err = process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err.decode()
    assert len(rest) == 1
