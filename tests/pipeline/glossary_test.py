import pytest

from gnmt_tf.pipeline.glossary import (Glossary, GlossaryError, GlossaryFile,
                                       as_glossary)

TSV = ("# term base\n"
       "dog\tHund\ten-de\n"
       "dog\tchien\ten-fr\n"
       "cat\tKatze\n"
       "\n"
       "mouse\tComputermaus\ten-de\tit, tech\n"
       "mouse\tMaus\ten-de\n")


def test_entries_are_selected_by_language_pair_and_tags(tmp_path):
    path = tmp_path / "terms.tsv"
    path.write_text(TSV, encoding="utf-8")
    terms = GlossaryFile.read(path)
    assert len(terms) == 5
    de = terms.select("en", "de")
    assert (de.target("dog"), de.target("cat"), de.target("mouse")) == (
        "Hund", "Katze", "Maus")
    assert terms.select("en", "fr").target("dog") == "chien"
    assert terms.select("en", "fr").target("mouse") is None
    assert terms.select("en", "de", ["tech"]).target("mouse") == \
        "Computermaus"
    assert Glossary.from_tsv(path, "en", "de", ["it"]).target("mouse") == \
        "Computermaus"
    # An entry for any pair applies to every pair; the exact pair wins.
    mixed = GlossaryFile.parse("dog\tAny\ndog\tHund\ten-de")
    assert mixed.select("en", "de").target("dog") == "Hund"
    assert mixed.select("en", "cs").target("dog") == "Any"


@pytest.mark.parametrize("text, message", [
    ("dog\tHund\nBuch\n",
     "terms.tsv:2: expected 2 to 4 tab-separated fields, got 1"),
    ("a\tb\ten-de\tt\textra\n",
     "terms.tsv:1: expected 2 to 4 tab-separated fields, got 5"),
    ("# c\n\ndog\t \n", "terms.tsv:3: empty target term"),
    ("\tHund\n", "terms.tsv:1: empty source term"),
    ("dog\tHund\ten_de\n", "terms.tsv:1: language pair 'en_de'"),
])
def test_errors_name_the_file_and_line(tmp_path, text, message):
    path = tmp_path / "terms.tsv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(GlossaryError) as error:
        GlossaryFile.read(path)
    assert message in str(error.value)
    assert str(error.value).startswith(str(path))


def test_invalid_utf8_and_missing_files_are_errors(tmp_path):
    path = tmp_path / "terms.tsv"
    path.write_bytes(b"dog\tHund\ncat\tK\xe4tze\n")
    with pytest.raises(GlossaryError, match=r"terms\.tsv:2: invalid UTF-8"):
        GlossaryFile.read(path)
    with pytest.raises(GlossaryError, match="missing.tsv"):
        GlossaryFile.read(tmp_path / "missing.tsv")


def test_as_glossary_accepts_paths_files_mappings(tmp_path):
    path = tmp_path / "terms.tsv"
    path.write_text(TSV, encoding="utf-8")
    assert as_glossary(str(path), "en", "fr").target("dog") == "chien"
    assert as_glossary(GlossaryFile.read(path), "en", "de").target(
        "dog") == "Hund"
    assert as_glossary({"Haus": "house"}).target("haus") == "house"
    assert as_glossary(None) is None
    glossary = Glossary({"a": "b"})
    assert as_glossary(glossary) is glossary
