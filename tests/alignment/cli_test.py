"""Tests for the `gnmt-tf align` subcommand (gnmt_tf.alignment.cli)."""

import argparse
import pathlib
import subprocess
import sys

import pytest

from gnmt_tf.alignment import cli

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
CORPUS = ("das Haus ||| the house\n" "das Buch ||| the book\n"
          "ein Buch ||| a book\n")


def _run(argv, capsys):
    parser = argparse.ArgumentParser(prog="gnmt-tf")
    cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["align"] + argv)
    code = args.func(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_align_forward_and_reverse(tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(CORPUS)
    code, out, err = _run(["-i", str(corpus), "-d", "-o", "-v"], capsys)
    assert (code, err) == (0, "")
    assert out == "0-0 1-1\n0-0 1-1\n0-0 1-1\n"
    code, out, _ = _run(["-i", str(corpus), "-d", "-v", "-r", "-I", "3"],
                        capsys)
    assert code == 0 and out.count("\n") == 3


def test_symmetrize(tmp_path, capsys):
    forward, reverse = tmp_path / "f.align", tmp_path / "r.align"
    forward.write_text("0-0 1-1 2-1 3-3\n0-0\n")
    reverse.write_text("0-0 1-1 1-2 3-2\n\n")
    code, out, _ = _run(["--symmetrize", "intersect", "--forward", str(forward),
                         "--reverse", str(reverse)], capsys)
    assert (code, out) == (0, "0-0 1-1\n\n")
    output = tmp_path / "sym.align"
    code, out, _ = _run(["--symmetrize", "grow-diag-final-and", "--forward",
                         str(forward), "--reverse", str(reverse),
                         "--output", str(output)], capsys)
    assert (code, out) == (0, "")
    assert output.read_text() == "0-0 1-1 1-2 2-1 3-2 3-3\n0-0\n"


@pytest.mark.parametrize("argv, content, message", [
    (["-i", "{missing}"], None, "No such file or directory"),
    (["-i", "{file}"], "a ||| b\nc d\n",
     "line 2: expected 'source ||| target'"),
    (["-i", "{file}"], "a ||| b\na |||\n", "line 2: empty target"),
    ([], None, "-i/--input CORPUS is required"),
    (["--symmetrize", "union", "--forward", "{file}"], "0-0\n",
     "needs --forward FILE and --reverse FILE"),
    (["--symmetrize", "union", "--forward", "{file}", "--reverse", "{file}"],
     "0-0 1x1\n", "line 1: bad alignment link '1x1'"),
    (["-i", "{file}", "--reverse", "{file}"], "a ||| b\n",
     "only valid with --symmetrize"),
])
def test_errors_exit_2_without_traceback(tmp_path, capsys, argv, content,
                                         message):
    path = tmp_path / "input.txt"
    if content is not None:
        path.write_text(content)
    argv = [a.format(file=path, missing=tmp_path / "nope.txt") for a in argv]
    code, out, err = _run(argv, capsys)
    assert code == 2
    assert err.startswith("gnmt-tf align: error: ") and message in err
    assert "Traceback" not in err


def test_mismatched_symmetrize_inputs(tmp_path, capsys):
    forward, reverse = tmp_path / "f.align", tmp_path / "r.align"
    forward.write_text("0-0\n0-0\n")
    reverse.write_text("0-0\n")
    code, _, err = _run(["--symmetrize", "union", "--forward", str(forward),
                         "--reverse", str(reverse)], capsys)
    assert code == 2 and "r.align has fewer lines" in err


def test_subprocess_pipeline(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(CORPUS)
    script = (
        "import argparse, sys\n"
        "from gnmt_tf.alignment import cli\n"
        "parser = argparse.ArgumentParser(prog='gnmt-tf')\n"
        "cli.register(parser.add_subparsers())\n"
        "args = parser.parse_args(sys.argv[1:])\n"
        "code = args.func(args)\n"
        "assert 'tensorflow' not in sys.modules\n"
        "sys.exit(code)\n")
    result = subprocess.run(
        [sys.executable, "-c", script, "align", "-i", str(corpus), "-d", "-o",
         "-v"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["0-0 1-1"] * 3
