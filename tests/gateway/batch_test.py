"""`gnmt-tf translate-documents` (`gnmt_tf.gateway.batch`), end to end on the tiny
en->de GNMT model: outputs equal the one-document pipeline's, failures are
recorded without stopping the job, reruns redo only what changed."""

import contextlib
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import warnings

import pytest

from gnmt_tf.gateway import batch
from gnmt_tf.gateway.batch_cli import EXIT_SOME_FAILED
from gnmt_tf.cli.main import main

HTML = ("<!DOCTYPE html>\n<html><head><title>A dog</title></head><body>"
        "<h1>A big dog runs.</h1>\n<p>A <b>small</b> cat eats. "
        "A <a href=\"x.html\">young girl</a> plays.</p></body></html>\n")
GOOD = {
    "a.txt": b"A big dog runs.\n\nA small cat eats.\n",
    "sub/b.txt": b"A young girl plays.",
    "c.html": HTML.encode(),
    # repaired (unclosed <b>): translated, with a warning in the manifest
    "sub/d.htm": b"<p>A small dog <b>eats.</p>\n",
}
BAD = {
    "bad.txt": (b"A big dog \xff runs.\n", "line 1: invalid utf-8"),
    "russian.txt": ("Собака бежит по парку.\n".encode(),
                    "unsupported language 'und': the text is in none of the "
                    "supported languages (de, en)"),
    "broken.xhtml": (b'<?xml version="1.0" encoding="utf-8"?>\n<html '
                     b'xmlns="http://www.w3.org/1999/xhtml"><body><p>A dog '
                     b'runs.</body></html>\n', "line 2: "),
    "big.txt": (b"A big dog runs. " * 80,
                "document of 1280 bytes is over the limit of 1000 bytes"),
}
FLAGS = ["--input", "docs/**/*", "--output-dir", "out", "--tgt-lang", "de",
         "--qe", "--min-quality", "0.55", "--max-document-mb", "0.001"]
SEARCH_FLAGS = ["--beam-size", "3", "--beta", "0.2"]  # tests/gateway SEARCH


def _run(*argv):
    """`(exit code, stderr lines)` of `gnmt-tf translate-documents`."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(["translate-documents", *map(str, argv)])
    return code, err.getvalue().splitlines()


def _stats(root):
    return {str(p.relative_to(root)): (p.stat().st_ino, p.stat().st_mtime_ns)
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def job(tiny_model_dir, tmp_path_factory):
    """The docs/ tree and a first run of the job over it (relative paths,
    from the tree's folder): `(folder, exit code, stderr lines)`."""
    folder = tmp_path_factory.mktemp("batch")
    for name, data in {**GOOD, **{k: v[0] for k, v in BAD.items()}}.items():
        path = folder / "docs" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        code, err = _run(*FLAGS, "--model", tiny_model_dir, *SEARCH_FLAGS)
    finally:
        os.chdir(cwd)
    return folder, code, err


@pytest.fixture
def copy(job, tmp_path, monkeypatch):
    """A copy of the job's folder (docs, outputs, manifest), as the cwd."""
    shutil.copytree(job[0], tmp_path / "job")
    monkeypatch.chdir(tmp_path / "job")
    return tmp_path / "job"


def _manifest(folder):
    return json.loads((folder / "out" / "manifest.json").read_text())


def test_outputs_equal_the_pipeline_and_failures_are_recorded(
        job, model_backend):
    from gnmt_tf.gateway.pipelines import Pipeline

    folder, code, err = job
    assert code == EXIT_SOME_FAILED == 3
    reference = Pipeline(model_backend, model_backend.languages)
    manifest = _manifest(folder)
    entries = {e["name"]: e for e in manifest["documents"]}
    assert sorted(entries) == sorted([*GOOD, *BAD])
    for name, data in GOOD.items():
        fmt = "html" if name.endswith(("html", "htm")) else "text"
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            expected = reference.translate_document_detailed(
                data, "auto", "de", format=fmt, qe=True, min_quality=0.55)
        out = folder / "out" / name
        assert out.read_bytes() == expected.output, name
        entry = entries[name]
        assert entry["status"] == "ok" and entry["message"] is None
        assert entry["source"] == f"docs/{name}"
        assert entry["output"] == f"out/{name}" and entry["format"] == fmt
        assert entry["detected_language"] == "en"
        assert entry["sentences"] == len(expected.sentences) > 0
        assert entry["quality"] == pytest.approx(expected.quality)
        assert entry["flagged"] == len(expected.flagged)
        assert entry["warnings"] == [f"{w.category.__name__}: {w.message}"
                                     for w in caught]
    assert entries["sub/d.htm"]["warnings"][0].startswith(
        "MalformedHTMLWarning: line 1")
    for name, (_, message) in BAD.items():
        entry = entries[name]
        assert entry["status"] == "error" and message in entry["message"]
        assert entry["sha256"] and entry["output_sha256"] is None
        assert not (folder / "out" / name).exists()
        line = [x for x in err if f"docs/{name}: error:" in x]
        assert len(line) == 1 and message in line[0], err
    assert err[-1] == ("gnmt-tf translate-documents: 8 documents: 4 "
                       "translated, 0 up to date, 4 failed; manifest "
                       "out/manifest.json")
    assert {p.name for p in (folder / "docs").rglob("*")} >= {"a.txt"}
    assert manifest["settings"]["request"] == {
        "src_lang": "auto", "tgt_lang": "de", "tags": [], "qe": True,
        "min_quality": 0.55}
    assert sum(entries[name]["flagged"] for name in GOOD) > 0


def test_equals_the_translate_command(job, tiny_model_dir, tmp_path):
    folder = job[0]
    for name, fmt in (("c.html", "html"), ("a.txt", "text")):
        out = tmp_path / name.replace("/", "_")
        assert main(["translate", "--model", str(tiny_model_dir), "--format",
                     fmt, "--src-lang", "auto", "--tgt-lang", "de",
                     "--input", str(folder / "docs" / name), "--output",
                     str(out), *SEARCH_FLAGS]) == 0
        assert out.read_bytes() == (folder / "out" / name).read_bytes()


def test_rerun_rewrites_nothing_and_redoes_only_what_changed(
        copy, tiny_model_dir):
    model = ["--model", tiny_model_dir, *SEARCH_FLAGS]
    inputs = _stats(copy / "docs")
    before = _stats(copy / "out")
    code, err = _run(*FLAGS, *model)
    assert code == 3 and "0 translated, 4 up to date, 4 failed" in err[-1]
    assert _stats(copy / "out") == before  # outputs and manifest untouched

    (copy / "docs" / "sub" / "b.txt").write_bytes(b"A small cat eats.")
    code, err = _run(*FLAGS, *model)
    assert "1 translated, 3 up to date, 4 failed" in err[-1]
    after = _stats(copy / "out")
    changed = {k for k in after if after[k] != before[k]}
    assert changed == {"sub/b.txt", "manifest.json"}
    entry = {e["name"]: e for e in _manifest(copy)["documents"]}["sub/b.txt"]
    assert entry["sha256"] == hashlib.sha256(
        b"A small cat eats.").hexdigest()

    # other settings (--min-quality): every document again
    code, err = _run(*FLAGS[:-4], "--min-quality", "0.6",
                     *FLAGS[-2:], *model)
    assert "4 translated, 0 up to date, 4 failed" in err[-1]
    again = _stats(copy / "out")
    assert all(again[k] != after[k] for k in after)
    inputs.pop("sub/b.txt")
    assert {k: v for k, v in _stats(copy / "docs").items()
            if k != "sub/b.txt"} == inputs  # inputs never written


def test_a_rerun_with_nothing_to_do_loads_no_model(copy, tiny_model_dir,
                                                  monkeypatch):
    import gnmt_tf.gateway.cli

    def refuse(*args, **kwargs):
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(gnmt_tf.gateway.cli, "make_pipeline", refuse)
    for name in BAD:  # retried on every run, and through the model
        if name != "big.txt":  # refused before any model
            (copy / "docs" / name).unlink()
    code, err = _run(*FLAGS, "--model", tiny_model_dir, *SEARCH_FLAGS)
    assert code == 3 and "0 translated, 4 up to date, 1 failed" in err[-1]


def test_an_unreachable_server_stops_the_job_before_any_output(
        tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("A dog.\n")
    code = main(["translate-documents", "--input", "docs/*.txt",
                 "--output-dir", "out", "--tgt-lang", "de", "--server",
                 "127.0.0.1:1", "--languages", "en,de", "--workers", "2"])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("gnmt-tf translate-documents: error: "
                          "127.0.0.1:1: UNAVAILABLE") and "\n" not in err
    assert not (tmp_path / "out").exists()


def test_an_output_changed_on_disk_is_redone(copy, tiny_model_dir):
    (copy / "out" / "a.txt").write_bytes(b"edited\n")
    code, err = _run(*FLAGS, "--model", tiny_model_dir, *SEARCH_FLAGS)
    assert "1 translated, 3 up to date" in err[-1]
    assert (copy / "out" / "a.txt").read_bytes() != b"edited\n"


def test_through_a_server_without_tensorflow(job, grpc_server, copy):
    """`--server` (3 documents at once): the same documents, failures and
    exit status, and no TensorFlow in the process."""
    script = ("import sys; from gnmt_tf.cli.main import main; "
              "code = main(sys.argv[1:]); "
              "print('tensorflow' in sys.modules); sys.exit(code)")
    out = subprocess.run(
        [sys.executable, "-c", script, "translate-documents",
         *FLAGS[:3], "served", *FLAGS[4:], "--server", grpc_server.target,
         "--languages", "en,de", "--workers", "3"], capture_output=True,
        text=True,
        timeout=300)
    assert out.returncode == 3, out.stderr
    assert out.stdout.strip() == "False"
    for name in GOOD:
        assert (copy / "served" / name).read_bytes() == (
            copy / "out" / name).read_bytes(), name
    assert "4 translated, 0 up to date, 4 failed" in out.stderr
    served = json.loads((copy / "served" / "manifest.json").read_text())
    local = _manifest(copy)
    for entry, expected in zip(served["documents"], local["documents"]):
        for key in ("name", "status", "message", "output_sha256",
                    "sentences", "flagged", "warnings"):
            assert entry[key] == expected[key], (entry["name"], key)

@pytest.mark.parametrize("flags, message", [
    (["--workers", "0"], "argument --workers: must be an integer >= 1, "
                         "got '0'"),
    (["--min-quality", "1.5"], "argument --min-quality: must be"),
    (["--max-document-mb", "-1"], "argument --max-document-mb: must be"),
    (["--format", "pdf"], "argument --format: invalid choice: 'pdf'"),
    (["--beam-size", "0"], "argument --beam-size: must be"),
])
def test_bad_numbers_and_choices_are_one_line_errors(capsys, flags,
                                                     message):
    with pytest.raises(SystemExit) as e:
        main(["translate-documents", "--input", "x", "--output-dir", "y",
              "--tgt-lang", "de", "--model", "m", *flags])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err


@pytest.mark.parametrize("flags, message", [
    ([], "give --model DIR or --server HOST:PORT (one of them)"),
    (["--model", "m", "--server", "h:1"],
     "give --model DIR or --server HOST:PORT (one of them)"),
    (["--server", "127.0.0.1:1"], "--server with --src-lang auto needs "
                                  "--languages (the codes the model knows)"),
    (["--server", "127.0.0.1:1", "--languages", "en,de", "--alpha", "1"],
     "search flags need --model: a served model searches with its export's "
     "options"),
    (["--server", "127.0.0.1:1", "--languages", "en,de", "--input",
      "nothing/*.txt"], "--input 'nothing/*.txt' matched no file"),
    (["--server", "127.0.0.1:1", "--languages", "en,de", "--glossary",
      "bad.tsv"], "bad.tsv:1: expected 2 to 4 tab-separated fields, got 1"),
])
def test_usage_errors_before_any_work(tmp_path, monkeypatch, capsys, flags,
                                      message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("A dog.\n")
    (tmp_path / "bad.tsv").write_text("dog Hund\n")
    code = main(["translate-documents", "--input", "docs/*.txt",
                 "--output-dir", "out", "--tgt-lang", "de", *flags])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert err == f"gnmt-tf translate-documents: error: {message}"
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("pattern, root", [
    ("docs/**/*.txt", "docs"), ("*.txt", "."), ("docs/a.txt", "docs"),
    ("/data/in/*/x.html", "/data/in"), ("a/b/c?/*.txt", "a/b"),
])
def test_output_names_are_relative_to_the_globs_fixed_folders(pattern,
                                                              root):
    assert batch.input_root(pattern) == root


def test_formats_and_what_is_never_an_input(tmp_path):
    for name in ("a.HTML", "b.htm", "c.xhtml", "d.txt", "e", "out/f.txt"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text("x")
    documents = batch.plan(f"{tmp_path}/**/*", str(tmp_path / "out"))
    assert [(d.name, d.format) for d in documents] == [
        ("a.HTML", "html"), ("b.htm", "html"), ("c.xhtml", "html"),
        ("d.txt", "text"), ("e", "text")]
    assert documents[0].output == str(tmp_path / "out" / "a.HTML")
    assert [d.format for d in batch.plan(f"{tmp_path}/*", "o", "text")] == [
        "text"] * 5
    with pytest.raises(ValueError, match="o/d.txt would be written over "
                                         "the manifest"):
        batch.plan(f"{tmp_path}/d.txt", "o", manifest="o/d.txt")
    with pytest.raises(ValueError, match="out/f.txt would be written over "
                                         "an input"):
        batch.plan(f"{tmp_path}/out/*", str(tmp_path / "out"))
    # an output folder above the root: its files are inputs
    (tmp_path / "out" / "docs").mkdir()
    (tmp_path / "out" / "docs" / "g.txt").write_text("x")
    assert [d.output for d in batch.plan(f"{tmp_path}/out/docs/*",
                                         str(tmp_path / "out"))] == [
        str(tmp_path / "out" / "g.txt")]
