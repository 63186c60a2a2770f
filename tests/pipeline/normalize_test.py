import pytest

from pipeline.normalize import clean_whitespace
from pipeline.normalize import normalize
from pipeline.normalize import normalize_reversibly


def test_nfc_controls_and_whitespace():
    text = "Cafe\u0301\x00 \t  ist\u00a0 gut\r\n  zweite\x1b Zeile  "
    assert clean_whitespace(text) == "Café ist gut\nzweite Zeile"


def test_zero_width_joiner_is_kept():
    assert normalize("a\u200db") == "a\u200db"


def test_moses_only_for_the_languages_that_need_it():
    assert normalize("„Hallo“ – sagte er…", "de") == '"Hallo" - sagte er...'
    assert normalize("你好，世界", "zh") == "你好，世界"
    assert normalize("“hi”", None) == "“hi”"


@pytest.mark.parametrize("text,language", [
    ("  „Hallo“, sagte er – ja… \"so\". ", "de"),
    ("« Bonjour », dit-il.", "fr"),
    ("He said “hi” — isn’t it?\n", "en"),
    ("„Ahoj“ řekl.", "cs"),
    ("plain text", "en"),
])
def test_restore_gives_back_the_users_characters(text, language):
    normalized = normalize_reversibly(text, language)
    assert normalized.restore(normalized.text) == text
    assert normalized.original == text


def test_restore_on_a_translation_with_the_same_quotes():
    normalized = normalize_reversibly("„Hallo“, sagte er.", "de")
    assert normalized.restore('"Hello", he said.') == "„Hello“, he said."


def test_restore_keeps_ascii_when_the_translation_moved_quotes():
    normalized = normalize_reversibly("„Hallo“, sagte er.", "de")
    assert normalized.restore('Hello, he said.') == "Hello, he said."
    assert normalized.restore('"A" "B"') == '"A" "B"'


def test_empty():
    assert normalize("") == ""
    assert normalize_reversibly("   ").restore("") == "   "
