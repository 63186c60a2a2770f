import pytest

from serving import request_batching
from pipeline.sentence_split import split_document
from pipeline.sentence_split import split_sentences


@pytest.mark.parametrize("language", ["en", "de", "cs", None])
def test_reported_wrong_splits(language):
    """Issue 11: both were split after the abbreviation."""
    assert split_sentences("Das Haus Nr. 5 ist rot.", language) == [
        "Das Haus Nr. 5 ist rot."]
    assert split_sentences("Wir kamen bzw. gingen.", language) == [
        "Wir kamen bzw. gingen."]


@pytest.mark.parametrize("language, text, expected", [
    ("de", "Das Haus Nr. 5 ist rot. Wir kamen bzw. Karl ging. Gut.",
     ["Das Haus Nr. 5 ist rot.", "Wir kamen bzw. Karl ging.", "Gut."]),
    ("de", "Er kam am 3. Juli. Dr. Müller kam z. B. nicht. Das kostet "
           "ca. 5 Euro inkl. Steuer.",
     ["Er kam am 3. Juli.", "Dr. Müller kam z. B. nicht.",
      "Das kostet ca. 5 Euro inkl. Steuer."]),
    ("en", "Dr. Smith arrived at 3 p.m. today. Did he? Yes!  See Fig. 3 "
           "and No. 5 here. Mr. Brown met Mrs. Green.",
     ["Dr. Smith arrived at 3 p.m. today.", "Did he?", "Yes!",
      "See Fig. 3 and No. 5 here.", "Mr. Brown met Mrs. Green."]),
    ("fr", "M. Dupont est arrivé. Mme. Durand et Dr. Martin aussi. Voir le "
           "chap. 3. Fin.",
     ["M. Dupont est arrivé.", "Mme. Durand et Dr. Martin aussi.",
      "Voir le chap. 3.", "Fin."]),
    ("cs", "Přišel tzv. hrdina, tj. Karel. Prof. Novák přišel. Bydlím v "
           "ul. Dlouhá, popř. jinde. Konec.",
     ["Přišel tzv. hrdina, tj. Karel.", "Prof. Novák přišel.",
      "Bydlím v ul. Dlouhá, popř. jinde.", "Konec."]),
])
def test_abbreviations_per_language(language, text, expected):
    assert split_sentences(text, language) == expected


def test_language_selects_the_abbreviations():
    text = "Wir kamen bzw. Karl ging."
    assert split_sentences(text, "de") == [text]
    assert split_sentences(text, "en") == ["Wir kamen bzw.", "Karl ging."]


def test_documented_limits_miss_rather_than_invent_boundaries():
    """See the module docstring: ambiguous periods are not boundaries."""
    assert split_sentences("Es war 1999. Karl kam.", "de") == [
        "Es war 1999. Karl kam."]
    assert split_sentences("Hunde, Katzen usw. Dann kam Karl.", "de") == [
        "Hunde, Katzen usw. Dann kam Karl."]


def test_punctuation_quotes_cjk_and_blanks():
    assert split_sentences('He said "stop." Then left.') == [
        'He said "stop."', "Then left."]
    assert split_sentences("你好。谢谢！再见", "zh") == ["你好。", "谢谢！", "再见"]
    assert split_sentences("J. R. Smith came. He left.") == [
        "J. R. Smith came.", "He left."]
    assert split_sentences("   ") == [] and split_sentences("") == []


def test_split_document_keeps_paragraphs_and_is_re_exported():
    assert split_document("Nr. 5 ist rot. Gut.\n\nEnde.", "de") == [
        ["Nr. 5 ist rot.", "Gut."], [], ["Ende."]]
    assert request_batching.split_sentences is split_sentences


@pytest.mark.parametrize("language", ["de", "fr", "cs", "en"])
def test_a_sentence_may_start_with_a_number(language):
    """sentencex leaves "<word>. 2 ..." unsplit in de, fr and cs."""
    assert split_sentences("Sechs Leute fahren Rad. 2 blonde Mädchen "
                           "sitzen.", language) == [
        "Sechs Leute fahren Rad.", "2 blonde Mädchen sitzen."]


@pytest.mark.parametrize("language, text", [
    ("de", "Das Haus Nr. 5 ist rot, siehe S. 10 und Abb. 3 bzw. 4."),
    ("de", "Es kostet ca. 5 Euro, im Jahr 1999. 5 Leute kamen."),
    ("fr", "Voir le chap. 3 et la fig. 2 au n° 5 de la rue."),
    ("cs", "Viz č. 5 a str. 10, čl. 3 odst. 2 zákona."),
    ("en", "See Fig. 3 and No. 5 on pp. 10 to 12."),
])
def test_abbreviations_before_numbers_are_no_boundary(language, text):
    assert split_sentences(text, language) == [text]


@pytest.mark.parametrize("language, text, expected", [
    ("en", "It was 1999. Then it rained.", ["It was 1999.",
                                            "Then it rained."]),
    ("fr", "Le numéro 10. Un homme parle.", ["Le numéro 10.",
                                             "Un homme parle."]),
    ("de", "Mit der Nummer 10. Ein Mann telefoniert. Am 3. Juli kam er.",
     ["Mit der Nummer 10.", "Ein Mann telefoniert.", "Am 3. Juli kam er."]),
    ("cs", "S číslem 10. Muž venku hovoří.", ["S číslem 10. Muž venku "
                                              "hovoří."]),
])
def test_a_sentence_may_end_in_a_number(language, text, expected):
    """No ordinals with a period in en and fr; in de only articles,
    pronouns and numerals start a sentence after one; cs: never."""
    assert split_sentences(text, language) == expected
