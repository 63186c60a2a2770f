"""Plain `gnmt-tf translate` splits a line of several sentences, translates
each and joins them back into one output line (`--no-split-sentences`: the
line goes whole)."""

import pytest

from gnmt_tf.cli.main import main
from gnmt_tf.cli.sentence_lines import SentenceLines
from gnmt_tf.host_translator import Hypothesis

TWO = "A dog runs. Two cats sleep on the sofa."
LINES = [TWO, "A dog runs.", "", "Two cats sleep on the sofa."]


def run(argv, capsys, stdin, monkeypatch):
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(
        io.BytesIO(stdin.encode("utf-8")), encoding="utf-8"))
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("model", [["--tflite", "multi30k-gnmt-en-de"],
                                   ["--model", "multi30k-gnmt-en-de"]])
def test_a_line_of_two_sentences_gives_both_translated(model, capsys,
                                                        monkeypatch):
    stdin = "".join(line + "\n" for line in LINES)
    code, out, err = run(["translate", *model, "--beam-size", "2"], capsys,
                         stdin, monkeypatch)
    assert code == 0, err
    lines = out.split("\n")
    assert len(lines) == len(LINES) + 1 and lines[-1] == ""
    # One sentence a line comes out as it did; the two-sentence line is
    # their translations joined.
    assert lines[0] == f"{lines[1]} {lines[3]}"
    assert lines[1] == "Ein Hund rennt." and lines[2] == ""
    assert "Katzen" in lines[3]

    code, whole, err = run(["translate", *model, "--beam-size", "2",
                            "--no-split-sentences"], capsys, TWO + "\n",
                           monkeypatch)
    assert code == 0, err
    assert whole.count("\n") == 1 and whole != lines[0] + "\n"


def _fake(sentences):
    """Each sentence upper-cased, scored by its length."""
    return [[Hypothesis(s.upper(), -float(len(s)))] for s in sentences]


def test_lines_are_split_and_joined_per_target_language():
    calls = []

    def translate(sentences):
        calls.append(list(sentences))
        return _fake(sentences)

    lines = ["Hello there. How are you?", "", "One."]
    out = SentenceLines("en", "de").wrap(translate)(lines)
    assert calls == [["Hello there.", "How are you?", "", "One."]]
    assert [h[0].text for h in out] == ["HELLO THERE. HOW ARE YOU?", "",
                                        "ONE."]
    assert out[0][0].score == -len("Hello there.") - len("How are you?")
    joined = SentenceLines("en", "zh").wrap(_fake)(lines[:1])
    assert joined[0][0].text == "HELLO THERE.HOW ARE YOU?"


def test_an_error_names_the_line_and_its_sentence():
    def translate(sentences):
        raise ValueError("input 3 has 300 subwords; the limit is 250")

    wrapped = SentenceLines("en").wrap(translate)
    with pytest.raises(ValueError, match=r"^input 2 \(sentence 1\) has 300 "
                                         r"subwords; the limit is 250$"):
        wrapped(["Hello there. How are you?", "A long one. And more."])
    with pytest.raises(ValueError, match=r"^input 3 has 300"):
        wrapped(["One.", "Two.", "Three."])


def test_served_results_merge_into_the_line():
    from gnmt_tf.cli.sentence_lines import merge_results
    from gnmt_tf.serving.client import TranslationResult

    done = [TranslationResult("A.", "X.", -1.0), TranslationResult("B.",
                                                                   "Y.", -2.0)]
    merged = merge_results(done, " ")
    assert (merged.translation, merged.score) == ("X. Y.", -3.0)
    failed = TranslationResult("B.", None, error="UNAVAILABLE: down")
    assert merge_results([done[0], failed], " ") is failed
