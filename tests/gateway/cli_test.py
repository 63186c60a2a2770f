"""`gnmt-tf translate` in document mode and `gnmt-tf gateway`, end to end."""

import inspect
import json
import os
import signal
import subprocess
import sys
import urllib.request

import pytest
from lxml import html as lxml_html

from gnmt_tf.cli.main import main

HTML = ("<!DOCTYPE html>\n<html><head><title>A dog</title></head><body>"
        "<h1>A big dog runs.</h1>\n<p>A <b>small</b> cat eats. "
        "A <a href=\"x.html\">young girl</a> plays.</p>"
        "<script>var x = 'A dog';</script></body></html>\n")


def _translate(tmp_path, *flags, document=HTML):
    source = tmp_path / "in.html"
    source.write_text(document, encoding="utf-8")
    out = tmp_path / "out.html"
    code = main(["translate", "--input", str(source), "--output", str(out),
                 *map(str, flags)])
    return code, out.read_bytes() if out.exists() else None


def test_html_in_well_formed_html_out(tiny_model_dir, tmp_path,
                                      model_backend):
    code, out = _translate(tmp_path, "--model", tiny_model_dir, "--format",
                           "html", "--src-lang", "auto", "--tgt-lang", "de",
                           "--beam-size", 3, "--beta", 0.2)
    assert code == 0
    text = out.decode("utf-8")
    assert text.startswith("<!DOCTYPE html>")
    tree = lxml_html.document_fromstring(text)
    expected = [r.text for r in model_backend(
        ["A dog", "A big dog runs."], "en", "de")]
    assert tree.findtext(".//title") == expected[0]
    assert tree.findtext(".//h1") == expected[1]
    assert tree.findtext(".//script") == "var x = 'A dog';"
    assert len(tree.findall(".//p")) == 1


def test_document_through_the_server_equals_in_process(
        tiny_model_dir, grpc_server, tmp_path):
    code, local = _translate(tmp_path, "--model", tiny_model_dir,
                             "--format", "html", "--src-lang", "en",
                             "--tgt-lang", "de", "--beam-size", 3,
                             "--beta", 0.2)
    assert code == 0
    code, served = _translate(tmp_path, "--server", grpc_server.target,
                              "--format", "html", "--src-lang", "en",
                              "--tgt-lang", "de")
    assert code == 0 and served == local


@pytest.mark.parametrize("flags, message", [
    (["--format", "html"], "--tgt-lang is required"),
    (["--format", "html", "--tgt-lang", "fr"],
     "unsupported language 'fr'; supported: de, en"),
    (["--src-lang", "auto", "--tgt-lang", "de", "--n-best", "2"],
     "--n-best > 1 cannot be used with a document"),
    (["--format", "pdf"], "invalid choice: 'pdf'"),
    (["--format", "text", "--tgt-lang", "de", "--min-quality", "nan"],
     "--min-quality"),
])
def test_errors_are_one_line(tiny_model_dir, tmp_path, capsys, flags,
                             message):
    try:
        code, _ = _translate(tmp_path, "--model", tiny_model_dir, *flags)
    except SystemExit as e:  # argparse
        code = e.code
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_a_huge_line_is_refused_before_any_work(tiny_model_dir, tmp_path,
                                                capsys, monkeypatch):
    """`translate --format text` on one 20,000-word line: refused by its
    word count, nothing normalised (it used to take ~100 s first)."""
    import gnmt_tf.pipeline.pipeline

    normalised = []
    monkeypatch.setattr(gnmt_tf.pipeline.pipeline, "normalize_reversibly",
                        lambda *a: normalised.append(a))
    code, _ = _translate(tmp_path, "--model", tiny_model_dir, "--format",
                         "text", "--src-lang", "en", "--tgt-lang", "de",
                         document="word " * 20_000)
    assert code == 2 and normalised == []
    err = capsys.readouterr().err.strip()
    assert "segment 1: a sentence of 20,000 or more words; the model reads " \
        "at most" in err and len(err.splitlines()) == 1, err


def test_glossary_and_qe_flags(tiny_model_dir, tmp_path, capsys):
    from gnmt_tf.gateway.pipelines import Pipeline

    glossary = tmp_path / "terms.tsv"
    glossary.write_text("dog\tHund\n", encoding="utf-8")
    parameters = inspect.signature(Pipeline.translate_document).parameters
    for flags, name in ((["--glossary", glossary], "glossary"),
                        (["--qe"], "qe"), (["--min-quality", "0.5"],
                                           "min_quality")):
        code, out = _translate(tmp_path, "--model", tiny_model_dir,
                               "--format", "text", "--src-lang", "en",
                               "--tgt-lang", "de", *flags,
                               document="A big dog runs.\n")
        err = capsys.readouterr().err
        if name in parameters:
            assert code == 0 and out, err
        else:
            assert code == 2 and out is None
            assert err.strip().endswith(
                f"--{name.replace('_', '-')}: not available in this "
                "version of the document pipeline")
    bad = tmp_path / "bad.tsv"
    bad.write_text("dog Hund\n", encoding="utf-8")
    code, _ = _translate(tmp_path, "--model", tiny_model_dir, "--format",
                         "text", "--tgt-lang", "de", "--glossary", bad)
    assert code == 2
    assert "bad.tsv:1: expected 2 to 4 tab-separated fields, got 1" in \
        capsys.readouterr().err


def test_plain_translate_is_line_by_line(tiny_model_dir, tmp_path,
                                         model_backend):
    """Without pipeline flags the input is lines, not a document: a line of
    two sentences is one output line, its sentences translated one by one
    (`--no-split-sentences`: the line as one sentence)."""
    line = "A big dog runs. A small cat eats."
    code, out = _translate(tmp_path, "--model", tiny_model_dir,
                           "--beam-size", 3, "--beta", 0.2,
                           document=line + "\n")
    assert code == 0
    sentences = model_backend(["A big dog runs.", "A small cat eats."], "en",
                              "de")
    assert out.decode() == " ".join(r.text for r in sentences) + "\n"
    code, out = _translate(tmp_path, "--model", tiny_model_dir,
                           "--beam-size", 3, "--beta", 0.2,
                           "--no-split-sentences", document=line + "\n")
    assert code == 0
    assert out.decode() == model_backend([line], "en", "de")[0].text + "\n"


def test_gateway_command_over_a_server(grpc_server, tmp_path):
    """`gnmt-tf gateway --server ...` in its own process: serves, answers,
    stops on SIGTERM."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "gnmt_tf.cli.main", "gateway", "--server",
         grpc_server.target, "--model-name", "gnmt", "--languages", "en,de",
         "--port", "0"], stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stderr.readline()
        assert "gnmt-tf gateway: de, en on http://127.0.0.1:" in line, line
        url = line.split(" on ")[1].strip()
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        request = urllib.request.Request(
            url + "/v1/translate", data=json.dumps(
                {"text": "A big dog runs.", "tgt_lang": "de"}).encode(),
            headers={"Content-Type": "application/json"})
        with opener.open(request, timeout=60) as response:
            out = json.loads(response.read())
        assert out["detected_language"] == "en" and out["translation"]
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0


@pytest.mark.parametrize("flags, message", [
    (["--server", "127.0.0.1:1"],
     "--server needs --languages (the codes the served model knows; "
     "SRC,TGT for a GNMT export)"),
    (["--server", "127.0.0.1:1", "--languages", "en,de", "--beam-size",
      "2"], "search flags need --model: a served model searches with its "
     "export's options"),
    ([], "give --model DIR or --server HOST:PORT (one of them)"),
])
def test_gateway_command_errors(capsys, flags, message):
    assert main(["gateway", "--port", "0", *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"gnmt-tf gateway: error: {message}"


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "soon"])
def test_request_timeout_is_validated(capsys, value):
    with pytest.raises(SystemExit) as info:
        main(["gateway", "--model", "x", "--request-timeout", value])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err == ("gnmt-tf gateway: error: argument --request-timeout: "
                   f"must be a finite number > 0, got {value!r}")


def test_the_parser_loads_no_pipeline_server_or_model_code():
    """`gnmt-tf --help` stays light with the gateway plugin registered."""
    code = ("import sys; from gnmt_tf.cli.main import build_parser; "
            "parser = build_parser(); "
            "parser.parse_args(['gateway', '--model', 'x']); "
            "print(sorted(m for m in ('tensorflow', 'grpc', 'lingua', "
            "'lxml', 'fastapi', 'gnmt_tf.gateway.pipelines', 'gnmt_tf.gateway.service') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stderr


SHIPPED = ["--model", "multi30k-gnmt-en-de", "--format", "html",
           "--src-lang", "en", "--tgt-lang", "de"]


def test_deeply_nested_html_keeps_all_its_text(tmp_path, capsys):
    document = ("<span>" * 300 + "A dog runs." + "</span>" * 300
                + "<p>Two men sit.</p>")
    code, out = _translate(tmp_path, *SHIPPED, document=document)
    err = capsys.readouterr().err
    assert code == 0 and err == "", err
    text = out.decode("utf-8")
    assert text.count("<span>") == text.count("</span>") == 300
    assert "Hund" in text and "Männer" in text


def test_too_deep_html_is_one_line(tmp_path, capsys):
    from gnmt_tf.pipeline.documents import MAX_NESTING_DEPTH

    document = "<span>" * 3000 + "A dog runs." + "</span>" * 3000
    code, out = _translate(tmp_path, *SHIPPED, document=document)
    err = capsys.readouterr().err
    assert code == 2 and out is None
    assert err.splitlines() == [
        f"gnmt-tf translate: error: elements nested deeper than "
        f"{MAX_NESTING_DEPTH} levels"]


def test_a_repair_warning_is_one_line(tmp_path, capsys):
    code, out = _translate(tmp_path, *SHIPPED,
                           document="<div><p>A <b>dog runs.</p></div>")
    err = capsys.readouterr().err
    assert code == 0 and b"Hund" in out
    assert len(err.splitlines()) == 1, err
    assert err.startswith("warning: line 1: malformed HTML repaired ("), err
