import pytest

from gnmt_tf.pipeline.normalize import clean_whitespace
from gnmt_tf.pipeline.normalize import normalize
from gnmt_tf.pipeline.normalize import normalize_reversibly


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


_MOSES_CASES = [
    '“Hi”, he said… ‘ok’ — «x» ``a\'\' (b ) c :d 5 % x....."y" z',
    'Er sagte...„Hallo“, ja,“ so." Und ....."dann" ..."<b>',
    "a ´´b´´ c ’d’ e–f ( g ) h ;i 10 %",
    '..."' * 50 + ' "' + "." * 300 + '"x',
]


@pytest.mark.parametrize("language", ["en", "de", "fr", "cs"])
@pytest.mark.parametrize("text", _MOSES_CASES)
def test_moses_rules_give_what_sacremoses_gives(text, language):
    from sacremoses import MosesPunctNormalizer

    moses = MosesPunctNormalizer(lang=language)
    assert normalize(text, language) == moses.normalize(
        clean_whitespace(text)).strip()


def test_the_dot_run_rule_searches_from_run_starts(monkeypatch):
    """sacremoses' `(\\.+)"` rule, retried by `re.sub` from every dot of a
    run, is quadratic (20,000 dots: seconds); its replacement tries each
    run once."""
    from gnmt_tf.pipeline import normalize as module

    searches = []
    rule = module._DotRunRule(*next(iter(
        (p, r) for p, r in module.MosesPunctNormalizer(lang="de")
        .substitutions if p in module._DOT_RUN_RULES)))
    pattern = rule._from_run_start

    class Counting:
        def search(self, text, position):
            searches.append(position)
            return pattern.search(text, position)

    monkeypatch.setattr(rule, "_from_run_start", Counting())
    text = ("." * 2000 + " x ") * 5 + '..."a'
    assert rule.sub(text) == rule.pattern.sub(rule.repl, text)
    assert len(searches) == 2  # one match, then none


def test_reversible_normalisation_is_linear(monkeypatch):
    """A long line costs work in proportion to its length: no whole-text
    alignment (difflib's is quadratic: 20,000 words took ~100 s); the
    pieces between words are compared one gap at a time."""
    import difflib

    from gnmt_tf.pipeline import normalize as module

    def refuse(*args, **kwargs):
        raise AssertionError("difflib used")

    monkeypatch.setattr(difflib, "SequenceMatcher", refuse)
    seen = []
    gap = module._gap_substitutions
    monkeypatch.setattr(module, "_gap_substitutions",
                        lambda old, new: seen.append(len(old) + len(new))
                        or gap(old, new))
    unit = "„Ein“ Hund – läuft… "
    per_character = []
    for repeat in (500, 4000):
        seen.clear()
        text = unit * repeat
        normalized = normalize_reversibly(text, "de")
        assert normalized.restore(normalized.text) == text
        per_character.append(sum(seen) / len(text))
    assert per_character[1] == pytest.approx(per_character[0], rel=0.01)
