"""Input in a script the model's vocabulary lacks (Arabic, Hebrew, Chinese
for an English-German model) gets a warning on stderr, not silence."""

import io
import sys

import pytest

from gnmt_tf.cli.main import main
from gnmt_tf.cli.unknown_script import LISTED_LINES, UnknownScriptCheck
from gnmt_tf.pretrained import PRETRAINED_DIR

VOCABULARY = PRETRAINED_DIR / "multi30k-gnmt-en-de" / "spm.model"
UNSEEN = ["رجل يركب دراجة.", "איש רוכב על אופניים.", "一个男人在骑自行车。",
          "Мужчина едет на велосипеде."]
SEEN = ["A dog runs.", "Muž jede na kole.", "Ein Mann fährt Fahrrad. 😀",
        "12:30 - 14:00", "", "Der Film 東京 ist gut und lang."]


@pytest.fixture(scope="module")
def check():
    return UnknownScriptCheck(VOCABULARY)


@pytest.mark.parametrize("line", UNSEEN)
def test_lines_in_an_unseen_script_are_found(check, line):
    assert check.unknown_share(line) == 1.0


@pytest.mark.parametrize("line", SEEN)
def test_known_letters_and_a_few_unknown_ones_are_not(check, line):
    assert check.unknown_share(line) <= 0.5


def test_the_warning_lists_the_lines_once():
    check = UnknownScriptCheck(VOCABULARY)
    check.add(["A dog runs.", UNSEEN[0]], first=0)
    check.add(UNSEEN[1:] * 4, first=2)
    stream = io.StringIO()
    check.report(stream)
    lines = stream.getvalue().splitlines()
    assert lines == [
        "warning: 13 input lines (lines 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 and "
        f"{13 - LISTED_LINES} more) are mostly in letters the model's "
        "vocabulary lacks (a script it never saw): their translations "
        "cannot be trusted"]
    quiet = io.StringIO()
    UnknownScriptCheck(VOCABULARY).report(quiet)
    assert quiet.getvalue() == ""


def test_translate_warns_about_unseen_scripts(capsys, monkeypatch):
    source = "A dog runs.\n" + UNSEEN[0] + "\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(
        io.BytesIO(source.encode("utf-8")), encoding="utf-8"))
    code = main(["translate", "--tflite", "multi30k-gnmt-en-de"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.count("\n") == 2
    assert err.splitlines() == [
        "warning: 1 input line (line 2) is mostly in letters the model's "
        "vocabulary lacks (a script it never saw): its translation cannot be "
        "trusted"]
