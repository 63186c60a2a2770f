import os
import subprocess
import sys

import pytest

GNMT_TF = [sys.executable, "-m", "gnmt_tf.cli.main"]


def run(args, stdin=b"", env=None):
    return subprocess.run(GNMT_TF + args, input=stdin, capture_output=True,
                          env={**os.environ, **(env or {})}, timeout=600)


@pytest.mark.parametrize("command", ["vocab", "train", "translate", "evaluate",
                                     "data", "quickstart", "align"])
def test_help(command):
    result = run([command, "--help"])
    assert result.returncode == 0 and b"usage: gnmt-tf " + command.encode() in result.stdout
    if command == "translate":  # every kind of model it takes
        for flag in (b"--model", b"--server", b"--tflite", b"--onnx DIR"):
            assert flag in result.stdout


def test_help_does_not_import_tensorflow():
    code = ("import sys; from gnmt_tf.cli.main import build_parser; build_parser();"
            "print('tensorflow' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "False"


def test_translate_and_evaluate_end_to_end(tiny_model_dir, toy_corpus, tmp_path):
    sources = "".join(en + "\n" for en, _ in toy_corpus[:4]) + "\n"
    result = run(["translate", "--model", str(tiny_model_dir), "--beam-size", "2"],
                 stdin=sources.encode())
    assert result.returncode == 0, result.stderr.decode()
    lines = result.stdout.decode().split("\n")
    assert len(lines) == 6 and lines[4] == "" and lines[5] == ""
    hyp = tmp_path / "hyp.txt"
    hyp.write_text(result.stdout.decode())
    ref = tmp_path / "ref.txt"
    ref.write_text("".join(de + "\n" for _, de in toy_corpus[:4]) + "\n")
    scored = run(["evaluate", "--hyp", str(hyp), "--ref", str(ref), "--gleu"])
    assert scored.returncode == 0
    assert b"BLEU = " in scored.stdout and b"chrF2 = " in scored.stdout
    assert b"nrefs:1" in scored.stdout and b"GLEU = " in scored.stdout


def test_nbest_format(tiny_model_dir):
    result = run(["translate", "--model", str(tiny_model_dir), "--beam-size", "3",
                  "--n-best", "2"], stdin=b"A big dog runs.\n")
    lines = result.stdout.decode().splitlines()
    assert len(lines) == 2 and all(l.startswith("0 ||| ") for l in lines)


def test_errors_are_one_line_with_exit_code_2(tiny_model_dir, tmp_path):
    missing = run(["translate", "--model", str(tmp_path / "nope")], stdin=b"x\n")
    assert missing.returncode == 2 and b"not a model directory" in missing.stderr
    assert b"Traceback" not in missing.stderr
    bad_utf8 = run(["translate", "--model", str(tiny_model_dir)], stdin=b"ok\n\xff\n")
    assert bad_utf8.returncode == 2 and b"<stdin>:2: invalid UTF-8" in bad_utf8.stderr
    bad_set = run(["train", "--model-dir", str(tmp_path / "m"), "--data-dir",
                   str(tmp_path), "--set", "hiden=1"])
    assert bad_set.returncode == 2 and b"unknown setting 'hiden'" in bad_set.stderr
    no_data = run(["train", "--model-dir", str(tmp_path / "m"), "--data-dir",
                   str(tmp_path / "none")])
    assert no_data.returncode == 2 and b"does not exist" in no_data.stderr
