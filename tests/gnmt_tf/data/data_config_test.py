"""Validation of data configuration files."""

import json

import pytest

from gnmt_tf.data.data_config import load_data_config


def _write(tmp_path, config, name="data.yaml"):
    path = tmp_path / name
    if name.endswith(".json"):
        path.write_text(json.dumps(config))
    else:
        import yaml

        path.write_text(yaml.safe_dump(config))
    return path


@pytest.fixture
def files(tmp_path):
    for name in ("a.en", "a.de", "b.tsv", "c.tmx"):
        (tmp_path / name).write_text("x\n")
    return tmp_path


def test_reads_every_format(files):
    path = _write(files, {"prepared": "out", "corpora": [
        {"src_lang": "en", "tgt_lang": "de", "format": "text",
         "source": "a.en", "target": "a.de", "weight": 2},
        {"name": "news", "src_lang": "de", "tgt_lang": "en", "format": "tsv",
         "path": "b.tsv", "tags": ["news"]},
        {"src_lang": "en", "tgt_lang": "fr", "format": "tmx",
         "path": "c.tmx"}]})
    config = load_data_config(path)
    assert [c.name for c in config.corpora] == ["corpus0", "news", "corpus2"]
    assert config.corpora[0].files == (files / "a.en", files / "a.de")
    assert config.corpora[0].weight == 2.0
    assert config.corpora[1].tags == ("news",)
    assert config.corpora[2].direction == "en-fr"
    assert config.prepared == files / "out"
    assert config.languages() == ["en", "de", "fr"]


def test_reads_json(files):
    path = _write(files, {"corpora": [
        {"src_lang": "en", "tgt_lang": "de", "format": "tsv",
         "path": "b.tsv"}]}, "data.json")
    assert load_data_config(path).corpora[0].format == "tsv"


@pytest.mark.parametrize("entry, message", [
    ({"format": "csv", "path": "b.tsv"}, "unknown format 'csv'"),
    ({"format": "tsv", "path": "missing.tsv"}, "missing.tsv does not exist"),
    ({"format": "tsv", "path": "b.tsv", "weight": 0},
     "weight must be a finite number > 0, got 0"),
    ({"format": "tsv", "path": "b.tsv", "weight": "heavy"},
     "weight must be a finite number > 0"),
    ({"format": "tsv", "path": "b.tsv", "weight": float("nan")},
     "weight must be"),
    ({"format": "text", "source": "a.en"}, "format text needs 'target'"),
    ({"format": "tsv", "source": "a.en", "path": "b.tsv"},
     "format tsv takes path, not source"),
    ({"format": "tsv", "path": "b.tsv", "colour": 1},
     "unknown key(s) colour"),
    ({"format": "tsv", "path": "b.tsv", "tgt_lang": "en"},
     "src_lang and tgt_lang are both 'en'"),
    ({"format": "tsv", "path": "b.tsv", "src_lang": 3},
     "src_lang must be a language code"),
])
def test_bad_entries_name_the_corpus(files, entry, message):
    corpus = {"src_lang": "en", "tgt_lang": "de", **entry}
    path = _write(files, {"corpora": [corpus]})
    with pytest.raises((ValueError, FileNotFoundError)) as error:
        load_data_config(path)
    text = str(error.value)
    assert message in text and "corpus" in text and "\n" not in text


@pytest.mark.parametrize("config, message", [
    ({"corpora": []}, "'corpora' must be a non-empty list"),
    ([1, 2], "expected a mapping"),
    ({"corpora": [{"src_lang": "en", "tgt_lang": "de", "format": "tsv",
                   "path": "b.tsv", "name": "x"}] * 2},
     "duplicated corpus name(s) x"),
    ({"corpus": []}, "unknown key(s) corpus"),
])
def test_bad_files(files, config, message):
    with pytest.raises(ValueError, match=None) as error:
        load_data_config(_write(files, config))
    assert message in str(error.value)


def test_unparsable_file(tmp_path):
    path = tmp_path / "data.yaml"
    path.write_text("corpora: [\n")
    with pytest.raises(ValueError, match="not valid YAML"):
        load_data_config(path)
