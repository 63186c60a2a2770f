import gzip
import time

import pytest

from gnmt_tf.pipeline.language_id import UNDETERMINED
from gnmt_tf.pipeline.language_id import Detection
from gnmt_tf.pipeline.language_id import LanguageDetector
from gnmt_tf.pipeline.language_id import UnsupportedLanguageError
from gnmt_tf.pipeline.language_id import check_language
from gnmt_tf.pipeline.language_id import parse_languages

LANGUAGES = ["en", "de", "fr", "cs"]


@pytest.fixture(scope="module")
def detector():
    return LanguageDetector.for_languages(LANGUAGES)


def test_detects_and_reports_confidence(detector):
    for text, code in [("A man is riding a bike.", "en"),
                       ("Ein Mann fährt Fahrrad.", "de"),
                       ("Un homme fait du vélo.", "fr"),
                       ("Muž jede na kole.", "cs")]:
        found = detector.detect(text)
        assert found.language == code and 0.5 < found.confidence <= 1.0


def test_restricted_to_the_given_languages():
    detector = LanguageDetector.for_languages(["en", "de"])
    assert detector.detect("Un homme fait du vélo.").language in {"en", "de"}
    assert LanguageDetector(["de"]).detect("hello").language == "de"


def test_built_once(detector):
    start = time.perf_counter()
    assert LanguageDetector.for_languages(reversed(LANGUAGES)) is detector
    assert time.perf_counter() - start < 0.1


def test_nothing_to_go_on(detector):
    for text in ["", "  ", "123 456", "!!!"]:
        assert detector.detect(text).language == UNDETERMINED


def test_a_script_of_none_of_the_languages_is_undetermined(detector):
    for text in ["Собака бежит по парку.", "这是一个测试。"]:
        assert detector.detect(text) == Detection(UNDETERMINED, 0.0)


def test_mixed_language_per_sentence_and_spans(detector):
    found = detector.detect_each(["Ein Mann fährt Fahrrad.",
                                  "A man is riding a bike."])
    assert [d.language for d in found] == ["de", "en"]
    text = "Ein Mann fährt Fahrrad. A man is riding a bike."
    spans = detector.spans(text)
    assert [s.language for s in spans] == ["de", "en"]
    assert spans[0].start == 0 and spans[-1].end == len(text)


def test_unsupported_language_lists_the_supported_ones(detector):
    with pytest.raises(UnsupportedLanguageError,
                       match=r"unsupported language 'ja'; supported: "
                             r"cs, de, en, fr$"):
        detector.check("ja")
    assert check_language("DE", LANGUAGES) == "de"
    with pytest.raises(UnsupportedLanguageError, match="'xx'.*en"):
        LanguageDetector(["en", "xx"])
    with pytest.raises(ValueError):
        LanguageDetector([])


def test_parse_languages():
    assert parse_languages("en, DE,,fr") == ["en", "de", "fr"]
    with pytest.raises(ValueError):
        parse_languages(" , ")


def test_huge_text_is_bounded(detector):
    start = time.perf_counter()
    assert detector.detect("Ein Mann fährt Fahrrad. " * 200_000).language \
        == "de"
    assert time.perf_counter() - start < 2


def test_multi30k_accuracy(detector, data_dir):
    """Each language's first 100 test_2016_flickr sentences."""
    total = correct = 0
    for code in LANGUAGES:
        path = data_dir / f"test_2016_flickr.{code}.gz"
        if not path.exists():
            pytest.skip(f"{path} not found")
        with gzip.open(path, "rt", encoding="utf-8") as f:
            lines = [next(f).strip() for _ in range(100)]
        correct += sum(d.language == code for d in detector.detect_each(lines))
        total += len(lines)
    assert correct / total >= 0.97
