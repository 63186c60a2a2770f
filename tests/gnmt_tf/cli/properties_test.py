"""Property tests (Hypothesis) of `translate`, `align` and `evaluate`:
random bytes, Unicode and sizes never crash a command; each input line maps
to exactly one output line, or the command names the error on one line
(exit 2); an `--output` file is either complete or untouched.

Commands run in-process (`gnmt_tf.cli.main.main`); the translate model is the
session's tiny GNMT. The default runs stay small (profile "fast" in
tests/conftest.py); the `_long` variants are marked slow.
"""

import pathlib
import tempfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gnmt_tf.cli.main import main

SENTINEL = b"previous output\n"

# Text as users have it: any code point but lone surrogates (not UTF-8).
any_char = st.characters(blacklist_categories=("Cs",))
lines = st.lists(st.text(any_char, max_size=25), max_size=6)
# Mostly text, sometimes raw bytes (invalid UTF-8, NUL, CR).
file_bytes = st.one_of(
    lines.map(lambda ls: "".join(l + "\n" for l in ls).encode("utf-8")),
    lines.map(lambda ls: "\n".join(ls).encode("utf-8")),  # no final newline
    st.binary(max_size=80))
words = st.lists(st.text("abcxyzäß", min_size=1, max_size=4), max_size=4)
corpus_line = st.one_of(
    st.tuples(words, words).map(
        lambda p: f"{' '.join(p[0])} ||| {' '.join(p[1])}"),
    st.text(any_char, max_size=20))
corpus_bytes = st.one_of(
    st.lists(corpus_line, max_size=6).map(
        lambda ls: "".join(l + "\n" for l in ls).encode("utf-8")),
    st.binary(max_size=60))


def input_lines(raw: bytes) -> int:
    """Lines as the CLI counts them: split at b"\\n", no empty last one."""
    parts = raw.split(b"\n")
    return len(parts) - 1 if parts[-1] == b"" else len(parts)


def run_cli(argv, capsys):
    try:
        code = main([str(a) for a in argv])
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


def check_outcome(code, err, command, raw, output):
    """The properties every run must have."""
    assert "Traceback" not in err
    assert code in (0, 2), (code, err)
    if code == 2:
        last = err.strip().splitlines()[-1]
        assert last.startswith(f"gnmt-tf {command}: error: "), err
        assert output.read_bytes() == SENTINEL  # untouched
    else:
        assert input_lines(output.read_bytes()) == input_lines(raw)
    leftovers = sorted(p.name for p in output.parent.iterdir())
    assert leftovers == ["input", "output"]  # no temporary file left


def _run_with_files(argv, raw, capsys, command):
    with tempfile.TemporaryDirectory() as tmp:
        source = pathlib.Path(tmp, "input")
        output = pathlib.Path(tmp, "output")
        source.write_bytes(raw)
        output.write_bytes(SENTINEL)
        code, _, err = run_cli(argv + ["-i", source, "--output", output],
                               capsys)
        check_outcome(code, err, command, raw, output)
        return code


# --- translate -----------------------------------------------------------------


def _check_translate(model_dir, raw, capsys):
    _run_with_files(["translate", "--model", model_dir, "--beam-size", "1"],
                    raw, capsys, "translate")


@settings(max_examples=8)
@given(raw=file_bytes)
def test_translate_lines_in_lines_out(tiny_model_dir, raw, capsys):
    _check_translate(tiny_model_dir, raw, capsys)


@pytest.mark.slow
@settings(settings.get_profile("long"), max_examples=60)
@given(raw=file_bytes)
def test_translate_lines_in_lines_out_long(tiny_model_dir, raw, capsys):
    _check_translate(tiny_model_dir, raw, capsys)


# --- align ---------------------------------------------------------------------


def _check_align(raw, capsys):
    _run_with_files(["align", "-I", "2"], raw, capsys, "align")


@settings(max_examples=40)
@given(raw=corpus_bytes)
def test_align_lines_in_lines_out(raw, capsys):
    _check_align(raw, capsys)


@pytest.mark.slow
@settings(settings.get_profile("long"))
@given(raw=corpus_bytes)
def test_align_lines_in_lines_out_long(raw, capsys):
    _check_align(raw, capsys)


# --- evaluate ------------------------------------------------------------------


def _check_evaluate(hyp, ref, capsys):
    with tempfile.TemporaryDirectory() as tmp:
        hyp_path, ref_path = pathlib.Path(tmp, "hyp"), pathlib.Path(tmp, "ref")
        hyp_path.write_bytes(hyp)
        ref_path.write_bytes(ref)
        code, out, err = run_cli(["evaluate", "--hyp", hyp_path, "--ref",
                                  ref_path, "--gleu"], capsys)
    assert "Traceback" not in err
    assert code in (0, 2), (code, err)
    if code == 0:
        assert out.startswith("BLEU = ") and "GLEU = " in out
        assert input_lines(hyp) == input_lines(ref) > 0
    else:
        assert err.strip().splitlines()[-1].startswith(
            "gnmt-tf evaluate: error: ")


@settings(max_examples=40)
@given(hyp=file_bytes, ref=file_bytes)
def test_evaluate_scores_or_names_the_error(hyp, ref, capsys):
    _check_evaluate(hyp, ref, capsys)


@settings(max_examples=15)
@given(text=lines)
def test_evaluate_same_length_files_score(text, capsys):
    raw = "".join(l.replace("\n", " ") + "\n" for l in text).encode()
    _check_evaluate(raw, raw, capsys)


@pytest.mark.slow
@settings(settings.get_profile("long"))
@given(hyp=file_bytes, ref=file_bytes)
def test_evaluate_scores_or_names_the_error_long(hyp, ref, capsys):
    _check_evaluate(hyp, ref, capsys)
