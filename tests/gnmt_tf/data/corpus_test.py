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


def test_resolve_data_dir_finds_the_download_cache(tmp_path, monkeypatch):
    from gnmt_tf.data import download

    monkeypatch.delenv(corpus.ENV_DATA_DIR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    cache = tmp_path / "gnmt_tf" / "multi30k"
    cache.mkdir(parents=True)
    names = sorted(download.MULTI30K_SHA256)
    for name in names[:-1]:
        (cache / name).write_bytes(b"")
    # An incomplete cache (an interrupted download) is not used.
    with pytest.raises(FileNotFoundError,
                       match="gnmt-tf data download multi30k"):
        corpus.resolve_data_dir()
    (cache / names[-1]).write_bytes(b"")
    assert corpus.resolve_data_dir() == cache
    # An explicit directory and $GNMT_TF_DATA still come first.
    assert corpus.resolve_data_dir(tmp_path) == tmp_path
    monkeypatch.setenv(corpus.ENV_DATA_DIR, str(tmp_path / "gnmt_tf"))
    assert corpus.resolve_data_dir() == tmp_path / "gnmt_tf"
