"""Tests for gnmt_tf.alignment.pharaoh."""

import io
import re

import pytest

from gnmt_tf.alignment import pharaoh


def test_alignment_round_trip(tmp_path):
    alignments = [[(0, 0), (1, 2), (2, 1)], [], [(10, 3)]]
    path = tmp_path / "a.align"
    pharaoh.write_alignments(alignments, path)
    assert path.read_text() == "0-0 1-2 2-1\n\n10-3\n"
    assert list(pharaoh.read_alignments(path)) == alignments
    assert pharaoh.parse_alignment("  0-1\t2-3 ") == [(0, 1), (2, 3)]


def test_corpus_round_trip(tmp_path):
    pairs = [(["das", "Haus"], ["the", "house"]), (["ja"], ["yes", "!"])]
    path = tmp_path / "c.txt"
    pharaoh.write_corpus(pairs, path)
    assert path.read_text().splitlines()[0] == "das Haus ||| the house"
    assert list(pharaoh.read_corpus(path)) == pairs
    buffer = io.StringIO()
    pharaoh.write_corpus(pairs, buffer)
    buffer.seek(0)
    assert list(pharaoh.read_corpus(buffer)) == pairs


@pytest.mark.parametrize("line, message", [
    ("0-0 1_2", "bad alignment link '1_2'"),
    ("0-0 -1-2", "bad alignment link"),
    ("0-0 1-", "bad alignment link"),
    ("a-b", "bad alignment link"),
])
def test_bad_alignment_lines(tmp_path, line, message):
    path = tmp_path / "bad.align"
    path.write_text("0-0\n" + line + "\n")
    with pytest.raises(pharaoh.PharaohFormatError,
                       match="line 2: " + re.escape(message)):
        list(pharaoh.read_alignments(path))


@pytest.mark.parametrize("line, message", [
    ("no separator here", "exactly one '|||' separator, found 0"),
    ("a ||| b ||| c", "found 2"),
    (" ||| b", "empty source"),
    ("a |||", "empty target"),
    ("", "found 0"),
    ("a|||b", "found 0"),
])
def test_bad_corpus_lines(tmp_path, line, message):
    path = tmp_path / "bad.txt"
    path.write_text("x ||| y\nx ||| y\n" + line + "\n")
    with pytest.raises(pharaoh.PharaohFormatError,
                       match="line 3: .*" + re.escape(message)):
        list(pharaoh.read_corpus(path))
    assert issubclass(pharaoh.PharaohFormatError, ValueError)
