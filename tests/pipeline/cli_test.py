import io
import subprocess
import sys

import pytest

from gnmt_tf.cli.main import main


def _run(argv, data: bytes, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_detect_language(capsys, monkeypatch):
    code, out, _ = _run(
        ["detect-language", "--languages", "en,de,fr,cs"],
        "Ein Mann fährt Fahrrad.\nA man rides a bike.\n\nMuž jede na kole."
        "\nUn homme fait du vélo.\n".encode(), capsys, monkeypatch)
    assert code == 0 and out == "de\nen\nund\ncs\nfr\n"


def test_detect_language_confidence(capsys, monkeypatch):
    code, out, _ = _run(["detect-language", "--confidence"],
                        "Ein Mann fährt Fahrrad.\n".encode(), capsys,
                        monkeypatch)
    language, confidence = out.split()
    assert code == 0 and language == "de" and 0.5 < float(confidence) <= 1


def test_split(capsys, monkeypatch):
    code, out, _ = _run(
        ["split", "--lang", "de"],
        "Das Haus Nr. 5 ist rot. Wir kamen\nbzw. gingen.\n\n\n"
        "Wir essen z. B. Äpfel. Gut.\n".encode(), capsys, monkeypatch)
    assert code == 0
    assert out == ("Das Haus Nr. 5 ist rot.\nWir kamen bzw. gingen.\n\n"
                   "Wir essen z. B. Äpfel.\nGut.\n")


@pytest.mark.parametrize("command", [["split"], ["detect-language"]])
def test_empty_input(command, capsys, monkeypatch):
    assert _run(command, b"", capsys, monkeypatch)[:2] == (0, "")


@pytest.mark.parametrize("command", [["split"], ["detect-language"]])
def test_invalid_utf8_names_the_line(command, capsys, monkeypatch):
    code, _, err = _run(command, b"ok\n\xff\xfe\n", capsys, monkeypatch)
    assert code == 2
    assert err == f"gnmt-tf {command[0]}: error: line 2: invalid UTF-8\n"


def test_unknown_language(capsys, monkeypatch):
    code, _, err = _run(["detect-language", "--languages", "en,xx"], b"x\n",
                        capsys, monkeypatch)
    assert code == 2 and len(err.splitlines()) == 1
    assert err.startswith("gnmt-tf detect-language: error: unsupported "
                          "language 'xx'; supported: af, ")


def test_console_script_help_lists_the_commands():
    result = subprocess.run(
        [sys.executable, "-m", "gnmt_tf.cli.main", "--help"],
        capture_output=True, text=True)
    assert "detect-language" in result.stdout and "split" in result.stdout
