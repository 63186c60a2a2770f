"""The shard bookkeeping of `translate-beam` (no Apache Beam needed): line
counts as `gnmt-tf translate` reads them, done-records that notice every
change, a manifest rewritten only when it changes."""

import gzip
import io
import json
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gnmt_tf.beam_translate import shards
from gnmt_tf.cli.streaming import iter_lines

SETTINGS = {"model": "/m", "kind": "model_dir", "search": {"beam_size": 2},
            "task": {"tags": ("a", "b")}}


@given(st.lists(st.sampled_from([b"a", b"\xc3\xa9", b"\n", b"\r", b" "]),
                max_size=40), st.integers(1, 7))
def test_digest_counts_the_lines_translate_reads(parts, block):
    data = b"".join(parts)
    stream = io.BytesIO(data)
    original = shards._READ_BYTES
    shards._READ_BYTES = block  # line ends across read blocks
    try:
        sha, lines = shards.digest_stream(stream)
    finally:
        shards._READ_BYTES = original
    expected = list(iter_lines(io.BytesIO(data), "x"))
    assert lines == len(expected)
    assert shards.split_lines(data, "x") == expected
    import hashlib
    assert sha == hashlib.sha256(data).hexdigest()


def test_split_lines_names_the_bad_line():
    with pytest.raises(ValueError, match=r"^f:2: invalid UTF-8"):
        shards.split_lines(b"ok\n\xff\n", "f")


def test_plan_sorts_the_matches_and_reads_gzip(tmp_path):
    (tmp_path / "b.txt").write_bytes(b"x\ny\n")
    with gzip.open(tmp_path / "a.txt.gz", "wb") as f:
        f.write(b"one\ntwo\nthree")
    (tmp_path / "sub").mkdir()
    planned = shards.plan(str(tmp_path / "*"), str(tmp_path / "out" / "de"))
    assert [os.path.basename(s.input) for s in planned] == ["a.txt.gz",
                                                           "b.txt"]
    assert [s.input_lines for s in planned] == [3, 2]
    assert [s.output for s in planned] == [
        str(tmp_path / "out" / "de-00000-of-00002"),
        str(tmp_path / "out" / "de-00001-of-00002")]
    with pytest.raises(ValueError, match="matched no file"):
        shards.plan(str(tmp_path / "*.none"), str(tmp_path / "o"))


def test_output_names_of_a_folder_prefix():
    assert shards.output_path("out/", 3, 12) == "out/part-00003-of-00012"
    assert shards.manifest_path("out/") == "out/part.manifest.json"


def _shard(tmp_path, text=b"a\nb\n"):
    source = tmp_path / "in.txt"
    source.write_bytes(text)
    return shards.plan(str(source), str(tmp_path / "out" / "x"))[0]


def test_a_written_shard_is_done_until_anything_changes(tmp_path):
    shard = _shard(tmp_path)
    assert shards.done_record(shard, SETTINGS) is None  # nothing written
    record = shards.write_shard(shard, SETTINGS, ["A", "B"])
    assert open(shard.output, "rb").read() == b"A\nB\n"
    assert shards.done_record(shard, SETTINGS) == record
    assert record["input_lines"] == record["output_lines"] == 2
    # Other settings, another input, or a changed output: not done.
    assert shards.done_record(shard, {**SETTINGS, "model": "/n"}) is None
    changed = _shard(tmp_path, b"a\nc\n")
    assert changed.input_sha256 != shard.input_sha256
    assert shards.done_record(changed, SETTINGS) is None
    with open(shard.output, "ab") as f:
        f.write(b"C\n")
    assert shards.done_record(shard, SETTINGS) is None
    os.remove(shard.output)
    assert shards.done_record(shard, SETTINGS) is None


def test_write_shard_refuses_lost_or_split_lines(tmp_path):
    shard = _shard(tmp_path)
    with pytest.raises(ValueError, match="1 translations for 2 lines"):
        shards.write_shard(shard, SETTINGS, ["A"])
    with pytest.raises(ValueError, match="in.txt:2: the translation spans"):
        shards.write_shard(shard, SETTINGS, ["A", "B\nC"])
    assert not os.path.exists(shard.output)


def test_manifest_is_rewritten_only_when_it_changes(tmp_path):
    shard = _shard(tmp_path)
    record = shards.write_shard(shard, SETTINGS, ["A", "B"])
    prefix = str(tmp_path / "out" / "x")
    path, written = shards.write_manifest(prefix, SETTINGS, [record])
    assert written
    before = os.stat(path)
    assert shards.write_manifest(prefix, SETTINGS, [record]) == (path, False)
    after = os.stat(path)
    assert (before.st_ino, before.st_mtime_ns) == (after.st_ino,
                                                   after.st_mtime_ns)
    manifest = json.loads(open(path).read())
    assert manifest["shards"] == [record]
    assert manifest["settings"]["task"] == {"tags": ["a", "b"]}


def test_read_shard_checks_the_content_planned(tmp_path):
    shard = _shard(tmp_path)
    assert shards.read_shard(shard) == ["a", "b"]
    (tmp_path / "in.txt").write_bytes(b"a\nc\n")
    with pytest.raises(ValueError, match="in.txt changed since the job "
                                         "started"):
        shards.read_shard(shard)
    bad = _shard(tmp_path, b"a\n\xff\n")
    with pytest.raises(ValueError, match=r"in.txt:2: invalid UTF-8"):
        shards.read_shard(bad)


def test_shard_translations_name_the_first_failed_line(tmp_path):
    shard = _shard(tmp_path, b"a\nb\nc\n")
    assert shards.shard_translations(
        shard, [(2, "C"), (0, "A"), (1, "B")]) == ["A", "B", "C"]
    failed = [(0, "A"), (1, shards.LineFailure("has 300 subwords")),
              (2, shards.LineFailure("x"))]
    with pytest.raises(ValueError, match=r"^.*in.txt:2: has 300 subwords "
                                         r"\(and 1 more line\(s\)\)$"):
        shards.shard_translations(shard, failed)
    with pytest.raises(ValueError, match="2 translations for line numbers "
                                         "2 distinct, expected 3"):
        shards.shard_translations(shard, [(0, "A"), (1, "B")])


def test_a_failure_is_recorded_read_and_cleared(tmp_path):
    shard = _shard(tmp_path)
    assert shards.read_failure(shard) is None
    shards.clear_failure(shard)  # nothing to clear
    shards.write_failure(shard, "in.txt:2: invalid UTF-8")
    assert shards.read_failure(shard) == "in.txt:2: invalid UTF-8"
    assert shards.done_record(shard, SETTINGS) is None
    shards.clear_failure(shard)
    assert shards.read_failure(shard) is None
    assert not os.path.exists(shard.output)


def test_the_manifest_lists_failed_shards(tmp_path):
    shard = _shard(tmp_path)
    record = shards.write_shard(shard, SETTINGS, ["A", "B"])
    prefix = str(tmp_path / "out" / "x")
    failed = [{"index": 1, "input": "b.txt", "error": "b.txt:1: bad"}]
    path, _ = shards.write_manifest(prefix, SETTINGS, [record], failed)
    manifest = json.loads(open(path).read())
    assert manifest["shards"] == [record] and manifest["failed"] == failed
    shards.write_manifest(prefix, SETTINGS, [record])
    assert "failed" not in json.loads(open(path).read())
