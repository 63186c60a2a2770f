"""`gnmt-tf translate --decoder/--constraints/--glossary-constraints`: the
output on the tiny trained model, and one-line errors (exit 2) for what cannot work."""

import pytest

from gnmt_tf.cli.main import main


def _translate(args, capsys, stdin_text, monkeypatch):
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(
        io.BytesIO(stdin_text.encode("utf-8")), encoding="utf-8"))
    code = main(["translate", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("args, message", [
    (["--model", "m", "--max-expansions", "5"], "need --decoder dfs or bucket"),
    (["--model", "m", "--decoder", "dfs", "--n-best", "2", "--beam-size", "2"],
     "--n-best must be 1"),
    (["--server", "localhost:1", "--decoder", "bucket"],
     "--decoder bucket cannot be used with --server"),
    (["--tflite", "x.tflite", "--constraints", "c.txt"],
     "--constraints cannot be used with --tflite"),
    (["--model", "m", "--constraints", "a", "--glossary-constraints", "b"],
     "not both"),
    (["--model", "m", "--sepbeam-model", "n"], "needs --decoder sepbeam"),
    (["--tflite", "x.tflite", "--precision", "mixed_bfloat16"],
     "--precision needs --model"),
    (["--model", "m", "--model", "n", "--precision", "mixed_bfloat16"],
     "--precision needs one --model"),
    (["--tflite", "x.tflite", "--xla"], "--xla needs --model"),
    (["--model", "m", "--model", "n", "--xla"], "--xla needs one --model"),
    (["--model", "m", "--xla", "--shortlist", "a"],
     "--xla compiles the in-process search"),
])
def test_bad_flag_combinations_fail_on_one_line(args, message, capsys,
                                                monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    for name in ("a", "b"):
        (tmp_path / name).write_text("x\n")
    code, out, err = _translate(args, capsys, "x\n", monkeypatch)
    assert code == 2 and message in err
    assert len(err.strip().splitlines()) == 1 and out == ""


def test_constraints_and_glossary_put_terms_in_the_output(
        tiny_model_dir, capsys, monkeypatch, tmp_path):
    sources = "A big dog runs.\nA small cat sleeps.\n"
    code, plain, _ = _translate(["--model", str(tiny_model_dir)], capsys,
                                sources, monkeypatch)
    assert code == 0
    plain = plain.splitlines()
    # A toy noun the plain translations lack (which one depends on the
    # trained model), so that only the constraint can put it there.
    term = next(noun for noun in ("Pferd", "Mädchen", "Junge", "Kind")
                if all(noun not in line for line in plain))
    constraints = tmp_path / "constraints.tsv"
    constraints.write_text(f"{term}\n\n")
    code, out, _ = _translate(["--model", str(tiny_model_dir),
                               "--constraints", str(constraints)], capsys,
                              sources, monkeypatch)
    assert code == 0
    out = out.splitlines()
    # (A substring: the model may glue a subword to the forced term.)
    assert term in out[0] and out[1] == plain[1]
    glossary = tmp_path / "glossary.tsv"
    glossary.write_text(f"cat\t{term}\n")
    code, out, _ = _translate(["--model", str(tiny_model_dir),
                               "--glossary-constraints", str(glossary)],
                              capsys, sources, monkeypatch)
    assert code == 0
    out = out.splitlines()
    assert out[0] == plain[0] and term in out[1]
    # More constraint lines than input lines: an error after the output.
    constraints.write_text(f"{term}\n\n\n")
    code, _, err = _translate(["--model", str(tiny_model_dir),
                               "--constraints", str(constraints)], capsys,
                              sources, monkeypatch)
    assert code == 2 and "3 lines, but the input had 2" in err


def test_dfs_and_bucket_from_the_cli(tiny_model_dir, capsys, monkeypatch):
    outs = []  # (equal only when both finish within the budget)
    for decoder in ("dfs", "bucket"):
        code, out, _ = _translate(["--model", str(tiny_model_dir),
                                   "--decoder", decoder, "--max-expansions",
                                   "20"], capsys, "A dog runs.\n",
                                  monkeypatch)
        assert code == 0
        outs.append(out)
    assert all(len(out.splitlines()) == 1 and out.strip() for out in outs)


def test_server_takes_greedy_as_beam_size_one():
    from gnmt_tf.cli.main import build_parser
    from gnmt_tf.cli.translate_backends import served_search_options

    args = build_parser().parse_args(["translate", "--server", "h:1",
                                      "--decoder", "greedy", "--beam-size",
                                      "4"])
    assert served_search_options(args)["beam_size"] == 1
    args = build_parser().parse_args(["translate", "--server", "h:1",
                                      "--decoder", "dfs"])
    with pytest.raises(ValueError, match="--decoder dfs"):
        served_search_options(args)


def test_xla_flag_translates_as_the_plain_search(tiny_model_dir, capsys,
                                                 monkeypatch):
    sources = "A big dog runs.\nA small cat sleeps.\n\nA dog.\n"
    runs = [_translate(["--model", str(tiny_model_dir), "--beam-size", "3",
                        *flags], capsys, sources, monkeypatch)
            for flags in ([], ["--xla"])]
    assert runs[0][0] == runs[1][0] == 0
    assert runs[1][1] == runs[0][1] and len(runs[0][1].splitlines()) == 4
