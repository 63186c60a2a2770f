"""`gnmt-tf evaluate --json` and several references per line."""

import json

import pytest
import sacrebleu

from gnmt_tf.cli.main import main

HYPS = ["The cat sat on the mat.", "A dog runs in the park.",
        "Two men play football."]
REFS_A = ["The cat sat on a mat.", "A dog is running in the park.",
          "Two men are playing soccer."]
REFS_B = ["There is a cat on the mat.", "A dog runs through the park.",
          "Two men play football."]


def _files(tmp_path, **texts):
    paths = {}
    for name, lines in texts.items():
        paths[name] = tmp_path / f"{name}.txt"
        paths[name].write_text("".join(line + "\n" for line in lines))
    return paths


def _evaluate(argv, capsys):
    code = main(["evaluate", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_with_two_references_matches_sacrebleu(tmp_path, capsys):
    files = _files(tmp_path, hyp=HYPS, a=REFS_A, b=REFS_B)
    code, out, _ = _evaluate(["--hyp", files["hyp"], "--ref", files["a"],
                              files["b"], "--json"], capsys)
    assert code == 0
    result = json.loads(out)
    expected_bleu = sacrebleu.corpus_bleu(HYPS, [REFS_A, REFS_B])
    expected_chrf = sacrebleu.corpus_chrf(HYPS, [REFS_A, REFS_B])
    assert result["bleu"] == pytest.approx(expected_bleu.score)
    assert result["chrf"] == pytest.approx(expected_chrf.score)
    assert "nrefs:2" in result["bleu_signature"]
    assert result["sentences"] == 3 and result["references"] == 2
    # A second reference can only raise BLEU here: it adds matches.
    one = sacrebleu.corpus_bleu(HYPS, [REFS_A]).score
    assert result["bleu"] > one


def test_json_with_one_reference_and_gleu(tmp_path, capsys):
    files = _files(tmp_path, hyp=HYPS, a=REFS_A)
    code, out, _ = _evaluate(["--hyp", files["hyp"], "--ref", files["a"],
                              "--json", "--gleu"], capsys)
    result = json.loads(out)
    assert code == 0 and "nrefs:1" in result["bleu_signature"]
    assert result["bleu"] == pytest.approx(
        sacrebleu.corpus_bleu(HYPS, [REFS_A]).score)
    assert 0 <= result["gleu"] <= 100


@pytest.mark.parametrize("extra, message", [
    (["--gleu"], "--gleu scores against one reference"),
    ([], "3 hypotheses but 2 references in "),
])
def test_reference_errors_are_one_line(tmp_path, capsys, extra, message):
    files = _files(tmp_path, hyp=HYPS, a=REFS_A, b=REFS_B[:2])
    code, out, err = _evaluate(["--hyp", files["hyp"], "--ref", files["a"],
                                files["b"], *extra], capsys)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and message in err
