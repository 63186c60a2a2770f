"""`gnmt_tf.data.prepare` and `gnmt-tf data prepare` on tiny corpora."""

import gzip
import io
import json
import subprocess
import sys

import pytest

import parallel_corpora as pc
from gnmt_tf.data.corpus_readers import BadInputError
from gnmt_tf.data.data_config import parse_data_config
from gnmt_tf.data.prepare import PrepareOptions, prepare, read_manifest

OPTIONS = PrepareOptions(max_length_chars=pc.MAX_LENGTH_CHARS, max_ratio=3)


def _config(tmp_path, *corpora):
    return parse_data_config({"corpora": list(corpora)}, tmp_path)


def _shard_pairs(out, manifest, index=0):
    pairs = []
    for name in manifest["corpora"][index]["shards"]:
        with gzip.open(out / name, "rt", encoding="utf-8") as f:
            pairs += [tuple(line.rstrip("\n").split("\t")) for line in f]
    return pairs


def _corpus(tmp_path, fmt, pairs=pc.PAIRS, **extra):
    entry = {"src_lang": "en", "tgt_lang": "de", "format": fmt, **extra}
    if fmt in ("text", "text.gz"):
        source, target = pc.write_text_pair(tmp_path, "train", pairs,
                                            gz=fmt == "text.gz")
        return {**entry, "format": "text", "source": source.name,
                "target": target.name}
    if fmt == "tsv":
        return {**entry, "path": pc.write_tsv(tmp_path / "c.tsv",
                                              pairs).name}
    return {**entry, "path": pc.write_tmx(tmp_path / "c.tmx", pairs).name}


@pytest.mark.parametrize("fmt", ["text", "text.gz", "tsv", "tmx"])
def test_counts_every_reason(tmp_path, fmt):
    out = tmp_path / "out"
    manifest = prepare(_config(tmp_path, _corpus(tmp_path, fmt)), out,
                       OPTIONS, stream=io.StringIO())
    assert manifest["corpora"][0]["counts"] == pc.COUNTS
    assert manifest["counts"] == pc.COUNTS
    assert _shard_pairs(out, manifest) == pc.KEPT
    assert read_manifest(out) == manifest
    assert not list(out.glob(".*"))  # no temporary files left


def test_shard_size(tmp_path):
    out = tmp_path / "out"
    manifest = prepare(
        _config(tmp_path, _corpus(tmp_path, "text", name="a", weight=2)),
        out, PrepareOptions(shard_size=1,
                            max_length_chars=pc.MAX_LENGTH_CHARS),
        stream=io.StringIO())
    (corpus,) = manifest["corpora"]
    assert corpus["shards"] == ["a.00000.tsv.gz", "a.00001.tsv.gz"]
    assert corpus["weight"] == 2.0
    assert _shard_pairs(out, manifest) == pc.KEPT


def test_all_filtered_corpus_fails_and_removes_shards(tmp_path):
    text = _corpus(tmp_path, "text", name="a")
    tsv = _corpus(tmp_path, "tsv", name="b")
    out = tmp_path / "out"
    with pytest.raises(ValueError, match=r"corpus 'b': all 7 pairs were "
                       r"dropped \(1 empty, 1 too_long, 1 length_ratio, "
                       r"1 source_is_target, 3 duplicate\)"):
        prepare(_config(tmp_path, text, tsv), out, OPTIONS,
                stream=io.StringIO())
    assert list(out.iterdir()) == []


def test_empty_corpus(tmp_path):
    (tmp_path / "e.tsv").write_text("")
    entry = {"src_lang": "en", "tgt_lang": "de", "format": "tsv",
             "path": "e.tsv"}
    with pytest.raises(ValueError, match="corpus 'corpus0': no sentence "
                                         "pairs in .*e.tsv"):
        prepare(_config(tmp_path, entry), tmp_path / "out", OPTIONS)


def test_refuses_a_prepared_directory(tmp_path):
    config = _config(tmp_path, _corpus(tmp_path, "tsv"))
    prepare(config, tmp_path / "out", OPTIONS, stream=io.StringIO())
    with pytest.raises(ValueError, match="already holds prepared data"):
        prepare(config, tmp_path / "out", OPTIONS)


def _bad_tsv(tmp_path):
    path = tmp_path / "bad.tsv"
    path.write_bytes(b"A man.\tEin Mann.\n"
                     b"no tab here\n"
                     b"Bad \xff byte.\tSchlecht.\n"
                     b"Two dogs.\tZwei Hunde.\n")
    return {"src_lang": "en", "tgt_lang": "de", "format": "tsv",
            "path": path.name}


def test_tsv_line_without_tab_names_file_and_line(tmp_path):
    with pytest.raises(BadInputError, match=r"bad.tsv:2: expected 2 "
                                            r"tab-separated columns"):
        prepare(_config(tmp_path, _bad_tsv(tmp_path)), tmp_path / "out",
                OPTIONS)
    assert list((tmp_path / "out").iterdir()) == []


def test_skip_bad_lines_counts_them(tmp_path):
    manifest = prepare(_config(tmp_path, _bad_tsv(tmp_path)),
                       tmp_path / "out",
                       PrepareOptions(skip_bad_lines=True),
                       stream=io.StringIO())
    counts = manifest["counts"]
    assert (counts["read"], counts["bad_input"], counts["kept"]) == (4, 2, 2)


def test_invalid_utf8_in_text_corpus(tmp_path):
    (tmp_path / "x.en").write_bytes(b"A man.\nA \xc3\x28 dog.\n")
    (tmp_path / "x.de").write_text("Ein Mann.\nEin Hund.\n")
    entry = {"src_lang": "en", "tgt_lang": "de", "format": "text",
             "source": "x.en", "target": "x.de"}
    with pytest.raises(BadInputError, match=r"x.en:2: invalid UTF-8"):
        prepare(_config(tmp_path, entry), tmp_path / "out", OPTIONS)


def test_unaligned_text_corpus(tmp_path):
    (tmp_path / "x.en").write_text("A man.\nA dog.\n")
    (tmp_path / "x.de").write_text("Ein Mann.\n")
    entry = {"src_lang": "en", "tgt_lang": "de", "format": "text",
             "source": "x.en", "target": "x.de"}
    with pytest.raises(BadInputError, match=r"x.de:2: ends before"):
        prepare(_config(tmp_path, entry), tmp_path / "out", OPTIONS)


def test_broken_tmx(tmp_path):
    path = pc.write_tmx(tmp_path / "b.tmx", pc.KEPT, broken=True)
    entry = {"src_lang": "en", "tgt_lang": "de", "format": "tmx",
             "path": path.name}
    with pytest.raises(BadInputError, match=r"b.tmx:\d+: broken TMX"):
        prepare(_config(tmp_path, entry), tmp_path / "out", OPTIONS)
    manifest = prepare(_config(tmp_path, entry), tmp_path / "out",
                       PrepareOptions(skip_bad_lines=True),
                       stream=io.StringIO())
    assert manifest["counts"]["kept"] == 2
    assert manifest["counts"]["bad_input"] == 1


def test_tmx_unit_without_a_language(tmp_path):
    path = tmp_path / "m.tmx"
    path.write_text('<tmx><body><tu><tuv xml:lang="en"><seg>Hi there.</seg>'
                    '</tuv></tu></body></tmx>')
    entry = {"src_lang": "en", "tgt_lang": "de", "format": "tmx",
             "path": path.name}
    with pytest.raises(BadInputError, match=r'm.tmx:1: <tu> has no '
                                            r'<tuv xml:lang="de">'):
        prepare(_config(tmp_path, entry), tmp_path / "out", OPTIONS)


def test_language_check(tmp_path):
    pytest.importorskip("lingua")
    pairs = [("A man is riding a bicycle down the street.",
              "Ein Mann fährt mit dem Fahrrad die Straße entlang."),
             ("A man is riding a bicycle down the street.",
              "A woman is walking her dog in the park today.")]
    manifest = prepare(
        _config(tmp_path, _corpus(tmp_path, "tsv", pairs)), tmp_path / "out",
        PrepareOptions(check_language=True), stream=io.StringIO())
    assert manifest["counts"]["wrong_language"] == 1
    assert manifest["counts"]["kept"] == 1


def _cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "gnmt_tf.cli.main", "data", "prepare", *args],
        capture_output=True, text=True)


def test_cli(tmp_path):
    import yaml

    config = tmp_path / "data.yaml"
    config.write_text(yaml.safe_dump({"prepared": "prep", "corpora": [
        _corpus(tmp_path, "tmx")]}))
    result = _cli("--data-config", str(config), "--max-length-chars",
                  str(pc.MAX_LENGTH_CHARS))
    assert result.returncode == 0, result.stderr
    assert "2 of 7 pairs in 1 shards" in result.stdout
    manifest = json.loads((tmp_path / "prep" / "manifest.json").read_text())
    assert manifest["counts"] == pc.COUNTS
    for flag, value in (("--shard-size", "0"), ("--max-ratio", "0.5"),
                        ("--max-length-chars", "-1"), ("--max-ratio", "nan")):
        result = _cli("--data-config", str(config), flag, value)
        assert result.returncode == 2
        assert f"argument {flag}: must be" in result.stderr
    result = _cli("--data-config", str(config))  # already prepared
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "already holds" in result.stderr
