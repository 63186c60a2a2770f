import gzip

import pytest

from gnmt_tf.data import corpus


def test_read_plain_and_gzip(tmp_path):
    (tmp_path / "train.en").write_text("a\nb c\n", encoding="utf-8")
    with gzip.open(tmp_path / "train.de.gz", "wt", encoding="utf-8") as f:
        f.write("x\ny z\n")
    src, tgt = corpus.read_parallel(tmp_path, "train", "en", "de")
    assert src == ["a", "b c"] and tgt == ["x", "y z"]


def test_invalid_utf8_names_the_line(tmp_path):
    path = tmp_path / "bad.en"
    path.write_bytes(b"fine\n\xff\xfe broken\n")
    with pytest.raises(ValueError, match=r"bad.en:2: invalid UTF-8"):
        corpus.read_lines(path)


def test_mismatched_sides_and_missing_files(tmp_path):
    (tmp_path / "train.en").write_text("a\nb\n")
    (tmp_path / "train.de").write_text("a\n")
    with pytest.raises(ValueError, match="2 en lines but 1 de lines"):
        corpus.read_parallel(tmp_path, "train", "en", "de")
    with pytest.raises(FileNotFoundError, match="no train.fr"):
        corpus.read_parallel(tmp_path, "train", "en", "fr")
    with pytest.raises(FileNotFoundError):
        corpus.resolve_data_dir(tmp_path / "missing")


def test_real_multi30k_is_four_way_parallel(data_dir):
    lines = {lang: corpus.read_lines(corpus.split_path(data_dir, "val", lang))
             for lang in ("en", "de", "fr", "cs")}
    assert {len(v) for v in lines.values()} == {1014}
