"""`gnmt-tf translate-beam` on the DirectRunner with the tiny GNMT: the same
lines as `gnmt-tf translate`, shard by shard; a rerun rewrites nothing; a
deleted output is made again and nothing else; clear errors.

Apache Beam pins protobuf < 7, the main environment protobuf 7, so these
run in the environment of the `beam` extra (docs/beam.md) and are skipped
elsewhere.
"""

import json
import os

import pytest

pytest.importorskip(
    "apache_beam", reason="apache-beam not installed: it needs protobuf < 7 "
    "(see docs/beam.md: make test-beam)")

from gnmt_tf.beam_translate import shards  # noqa: E402
from gnmt_tf.cli.main import main  # noqa: E402


def _run(capsys, *argv):
    try:
        code = main([str(a) for a in argv])
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


def _state(paths):
    """`{path: (inode, mtime_ns)}`: what a rewrite would change."""
    return {p: (os.stat(p).st_ino, os.stat(p).st_mtime_ns) for p in paths}


@pytest.fixture(scope="module")
def corpus(toy_data_dir, tmp_path_factory):
    """Three shards, 2,000 lines in all (blank lines too), and an empty one."""
    sentences = (toy_data_dir / "train.en").read_text().splitlines()
    lines = [sentences[i * 7 % len(sentences)] if i % 97 else ""
             for i in range(2000)]
    root = tmp_path_factory.mktemp("beam_corpus")
    sizes = [900, 700, 400]
    start = 0
    for index, size in enumerate(sizes):
        text = "".join(line + "\n" for line in lines[start:start + size])
        (root / f"part{index}.en").write_text(text, encoding="utf-8")
        start += size
    (root / "part3.en").write_bytes(b"")
    return root


def _translate_cli(capsys, model, path, *flags):
    code, out, err = _run(capsys, "translate", "--model", model, "--input",
                          path, *flags)
    assert code == 0, err
    return out


def test_translates_each_shard_as_translate_does_and_resumes(
        capsys, corpus, tiny_model_dir, tmp_path):
    prefix = tmp_path / "out" / "de"
    argv = ["translate-beam", "--input", corpus / "part*.en", "--output",
            prefix, "--model", tiny_model_dir, "--beam-size", "2",
            "--max-batch-size", "256"]
    code, _, err = _run(capsys, *argv)
    assert code == 0, err
    manifest = json.loads(open(shards.manifest_path(prefix)).read())
    records = manifest["shards"]
    assert [os.path.basename(r["input"]) for r in records] == [
        f"part{i}.en" for i in range(4)]
    for record in records:
        source = open(record["input"], "rb").read()
        output = open(record["output"], "rb").read()
        assert record["input_lines"] == record["output_lines"] == \
            source.count(b"\n")
        assert output.count(b"\n") == record["output_lines"]
        assert (record["input_sha256"], record["input_lines"]) == \
            shards.digest(record["input"])
        assert (record["output_sha256"], record["output_lines"]) == \
            shards.digest(record["output"])
        expected = _translate_cli(capsys, tiny_model_dir, record["input"],
                                  "--beam-size", "2")
        assert output.decode("utf-8") == expected, record["input"]
    assert sum(r["output_lines"] for r in records) == 2000
    assert len(set(open(records[0]["output"]).read().splitlines())) > 3

    # A rerun finds every shard done: no pipeline, no file rewritten.
    files = [r["output"] for r in records] + [shards.manifest_path(prefix)]
    files += [shards.record_path(r["output"]) for r in records]
    before = _state(files)
    code, _, err = _run(capsys, *argv)
    assert code == 0 and "4 already done, 0 to translate" in err, err
    assert _state(files) == before

    # One output deleted: only that shard is translated again.
    lost = records[1]["output"]
    content = open(records[1]["output"], "rb").read()
    os.remove(lost)
    code, _, err = _run(capsys, *argv)
    assert code == 0 and "3 already done, 1 to translate" in err, err
    assert open(lost, "rb").read() == content
    after = _state(files)
    assert {p for p in files if after[p] != before[p]} == {
        lost, shards.record_path(lost)}  # the manifest is the same
    assert not [p for p in os.listdir(prefix.parent) if ".tmp" in p]


def test_a_savedmodel_translates_as_its_model_dir(capsys, corpus, tmp_path,
                                                  model_families):
    gnmt = model_families("gnmt")
    options = gnmt.family.savedmodel
    source = tmp_path / "in.en"
    lines = open(corpus / "part2.en").read().splitlines()[:150]
    source.write_text("".join(line + "\n" for line in lines))
    prefix = tmp_path / "out" / "de"
    code, _, err = _run(capsys, "translate-beam", "--input", source,
                        "--output", prefix, "--model", gnmt.savedmodel)
    assert code == 0, err
    expected = _translate_cli(
        capsys, gnmt.model_dir, source, "--beam-size", options["beam_size"],
        "--alpha", options["length_penalty"], "--beta",
        options["coverage_penalty"])
    assert open(shards.output_path(prefix, 0, 1)).read() == expected


@pytest.mark.parametrize("flags, message", [
    (["--input", "{tmp}/none*.en"], "--input '{tmp}/none*.en' matched no "
                                    "file"),
    (["--model", "{tmp}/no_model"], "{tmp}/no_model is not a model "
                                    "directory nor the name of a shipped"),
    (["--n-best", "2", "--beam-size", "2"], "--n-best must be 1 with "
                                            "translate-beam"),
    (["--src-lang", "fr"], "{model} translates en->de only; it cannot honour "
                           "--src-lang fr"),
    (["extra"], "unexpected argument 'extra' (pipeline options go after "
                "--)"),
])
def test_bad_input_is_one_error_line(capsys, corpus, tiny_model_dir,
                                     tmp_path, flags, message):
    argv = {"--input": str(corpus / "part0.en"),
            "--output": str(tmp_path / "out" / "de"),
            "--model": str(tiny_model_dir)}
    positional = []
    it = iter(flags)
    for flag in it:
        if flag.startswith("--"):
            argv[flag] = next(it).replace("{tmp}", str(tmp_path))
        else:
            positional.append(flag)
    args = ["translate-beam"] + [x for kv in argv.items() for x in kv]
    code, out, err = _run(capsys, *args, *positional)
    assert code == 2 and out == ""
    assert err.strip().splitlines()[-1].startswith(
        "gnmt-tf translate-beam: error: " + message.replace(
            "{tmp}", str(tmp_path)).replace("{model}",
                                            str(tiny_model_dir))), err
    assert not (tmp_path / "out").exists()


def test_bad_numbers_are_refused_by_the_parser(capsys, tmp_path):
    code, _, err = _run(capsys, "translate-beam", "--input", "x", "--output",
                        tmp_path / "o", "--model", "m", "--batch-size", "0")
    assert code == 2 and "--batch-size: must be an integer >= 1" in err, err


def test_a_bad_shard_fails_alone_in_one_line(capsys, corpus, tiny_model_dir,
                                             tmp_path):
    inputs = tmp_path / "in"
    inputs.mkdir()
    good = (corpus / "part2.en").read_bytes()
    (inputs / "a.en").write_bytes(good)
    (inputs / "b.en").write_bytes(b"A big dog runs.\n\xff\n")
    (inputs / "c.en").write_bytes(b"A small cat eats.\n"
                                  + b"dog " * 400 + b"\n")
    (inputs / "d.en").write_bytes(good[:500].rsplit(b"\n", 1)[0] + b"\n")
    prefix = tmp_path / "out" / "de"
    argv = ["translate-beam", "--input", inputs / "*.en", "--output", prefix,
            "--model", tiny_model_dir, "--beam-size", "2"]
    code, out, err = _run(capsys, *argv)
    assert code == 3 and out == "", err
    assert "Traceback" not in err, err
    errors = [line for line in err.splitlines() if "error" in line]
    assert len(errors) == 2, err
    assert errors[0] == (f"gnmt-tf translate-beam: error: {inputs / 'b.en'}"
                         ":2: invalid UTF-8 (invalid start byte)")
    assert errors[1].startswith(f"gnmt-tf translate-beam: error: "
                                f"{inputs / 'c.en'}:2: has "), errors[1]
    assert "the limit is" in errors[1]
    assert "translated 2 shard(s)" in err and "2 failed" in err

    # The good shards are written, as translate writes them; the bad ones
    # not at all.
    for index, name in ((0, "a.en"), (3, "d.en")):
        output = shards.output_path(prefix, index, 4)
        assert open(output).read() == _translate_cli(
            capsys, tiny_model_dir, inputs / name, "--beam-size", "2")
    for index in (1, 2):
        assert not os.path.exists(shards.output_path(prefix, index, 4))
    manifest = json.loads(open(shards.manifest_path(prefix)).read())
    assert [r["index"] for r in manifest["shards"]] == [0, 3]
    assert [f["index"] for f in manifest["failed"]] == [1, 2]

    # Fixed, a rerun translates only that shard.
    (inputs / "b.en").write_bytes(b"A big dog runs.\nA cat eats.\n")
    code, _, err = _run(capsys, *argv)
    assert code == 3 and "2 already done, 2 to translate" in err, err
    assert os.path.exists(shards.output_path(prefix, 1, 4))
    assert not os.path.exists(shards.failure_path(
        shards.output_path(prefix, 1, 4)))
