import pytest
import sentencex

from gnmt_tf.serving import request_batching
from gnmt_tf.pipeline.sentence_split import ORDINARY_WORDS
from gnmt_tf.pipeline.sentence_split import split_document
from gnmt_tf.pipeline.sentence_split import split_sentences


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
    # A number that ends the paragraph: sentencex splits before it.
    ("en", "See vol. 2."),
    ("de", "Siehe Nr. 5."),
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
    ("cs", "S číslem 10. Muž venku hovoří. Přišel 10. května.",
     ["S číslem 10.", "Muž venku hovoří.", "Přišel 10. května."]),
    ("cs", "Běží v Londýně 2012. Tři lidé se usmívají.",
     ["Běží v Londýně 2012.", "Tři lidé se usmívají."]),
])
def test_a_sentence_may_end_in_a_number(language, text, expected):
    """No ordinals with a period in en and fr; in de only articles,
    pronouns and numerals start a sentence after one; in cs any capital
    (Czech ordinals are followed by lower-case words: "10. května")."""
    assert split_sentences(text, language) == expected


@pytest.mark.parametrize("language, text, expected", [
    ("en", "A man looks at wall art. A woman argues with the ref. See Art. "
           "5 and vol. 2.",
     ["A man looks at wall art.", "A woman argues with the ref.",
      "See Art. 5 and vol. 2."]),
    ("en", "The baby is being fed. She said no. It was in May. He saw me. "
           "Read No. 5.",
     ["The baby is being fed.", "She said no.", "It was in May.",
      "He saw me.", "Read No. 5."]),
    ("de", "Er hat Gold auf dem Bart. Ein Mann sieht mich. Er tut, was er "
           "mag. Siehe Art. 5.",
     ["Er hat Gold auf dem Bart.", "Ein Mann sieht mich.",
      "Er tut, was er mag.", "Siehe Art. 5."]),
    ("fr", "Le chien attrape la balle au vol. Un homme saute un ravin sec. "
           "Il lit le vol. 2, art. 5.",
     ["Le chien attrape la balle au vol.", "Un homme saute un ravin sec.",
      "Il lit le vol. 2, art. 5."]),
    ("cs", "Žena stojí poblíž mnoha kol. Nadhazovač dokončuje hod. Muž je "
           "tu. Dívá se pod. Ptá se co. „Pes běží.“",
     ["Žena stojí poblíž mnoha kol.", "Nadhazovač dokončuje hod.",
      "Muž je tu.", "Dívá se pod.", "Ptá se co.", "„Pes běží.“"]),
])
def test_ordinary_words_in_sentencex_abbreviation_lists(language, text,
                                                         expected):
    """A period after one of `ORDINARY_WORDS` ends the sentence before a
    capitalised word, and stays an abbreviation's before a digit."""
    assert split_sentences(text, language) == expected


@pytest.mark.parametrize("language", sorted(ORDINARY_WORDS))
def test_ordinary_words_are_abbreviations_to_sentencex(language):
    """Each listed word is one sentencex alone does not split after: when a
    sentencex release drops one, it leaves the list."""
    for word in ORDINARY_WORDS[language]:
        text = f"Xx {word}. Yy zz."
        assert sentencex.segment(language, text) == [text], word


@pytest.mark.parametrize("language, text, expected", [
    ("de", "Ein Schild wirbt für einen Rabatt von 50 %. Junge Frauen "
           "tanzen.",
     ["Ein Schild wirbt für einen Rabatt von 50 %.",
      "Junge Frauen tanzen."]),
    ("en", "Gas costs $ 2.52. A girl swings. He sells C.D's. A boy buys "
           "one.",
     ["Gas costs $ 2.52.", "A girl swings.", "He sells C.D's.",
      "A boy buys one."]),
    ("de", "Ein Schild von avrovulcan.com. Eine Frau schwimmt.",
     ["Ein Schild von avrovulcan.com.", "Eine Frau schwimmt."]),
    ("en", "We met at 5 p.m. Then we left. He has a Ph.D. And more.",
     ["We met at 5 p.m. Then we left.", "He has a Ph.D. And more."]),
    ("de", "Es war 50 v.Chr. Dann kam er.", ["Es war 50 v.Chr. Dann kam er."]),
])
def test_symbols_decimals_and_domains_end_sentences(language, text,
                                                    expected):
    """A single non-letter ("%") and a dotted word that is no abbreviation
    (a decimal, a domain, "C.D's") may end a sentence; dotted
    abbreviations of short letter groups still do not."""
    assert split_sentences(text, language) == expected


@pytest.mark.parametrize("language, expected", [
    ("fr", ["Il neige.", "(planche à voile) Une personne navigue."]),
    ("en", ["Il neige.", "(planche à voile) Une personne navigue."]),
    ("de", ["Il neige. (planche à voile) Une personne navigue."]),
    ("cs", ["Il neige. (planche à voile) Une personne navigue."]),
])
def test_lower_case_after_an_opening_bracket_is_left_to_sentencex(
        language, expected):
    text = "Il neige. (planche à voile) Une personne navigue."
    assert split_sentences(text, language) == expected
    assert split_sentences("Wir kamen bzw. gingen.", language) == [
        "Wir kamen bzw. gingen."]
