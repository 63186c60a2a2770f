"""The command line fails cleanly (one line, exit 2), never eats
its input, refuses what it cannot honour and leaves no half-made output.

Commands run in-process through `gnmt_tf.cli.main.main` (TensorFlow loads
once for the whole module).
"""

import pytest

from tests.gnmt_tf.cli.cli_runner import run

CORPUS = "das Haus ||| the house\ndas Buch ||| the book\n"


def assert_one_line_error(code, err, command, message):
    assert code == 2, err
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"gnmt-tf {command}: error: "), err
    assert message in last, err


# --- 1. outputs: complete or untouched, never an input ------------------------


def test_align_output_same_as_input_keeps_the_input(tmp_path, capsys):
    corpus = tmp_path / "same.txt"
    corpus.write_text(CORPUS)
    code, _, err = run(["align", "-i", corpus, "--output", corpus], capsys)
    assert_one_line_error(code, err, "align", "is the same file as -i/--input")
    assert corpus.read_text() == CORPUS


def test_align_symmetrize_output_same_as_an_input(tmp_path, capsys):
    forward = tmp_path / "f.align"
    forward.write_text("0-0\n")
    code, _, err = run(["align", "--symmetrize", "union", "--forward", forward,
                        "--reverse", forward, "--output", forward], capsys)
    assert_one_line_error(code, err, "align", "is the same file as --forward")
    assert forward.read_text() == "0-0\n"


def test_align_bad_input_leaves_an_existing_output(tmp_path, capsys):
    corpus, output = tmp_path / "bad.txt", tmp_path / "out.align"
    corpus.write_text(CORPUS + "no separator\n")
    output.write_text("previous result\n")
    code, _, err = run(["align", "-i", corpus, "--output", output], capsys)
    assert_one_line_error(code, err, "align", "line 3")
    assert output.read_text() == "previous result\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.txt",
                                                          "out.align"]


def test_translate_output_same_as_input_keeps_the_input(
        tiny_model_dir, tmp_path, capsys):
    source = tmp_path / "in.txt"
    source.write_text("A big dog runs.\n")
    code, _, err = run(["translate", "--model", tiny_model_dir, "-i", source,
                        "-o", source], capsys)
    assert_one_line_error(code, err, "translate", "is the same file")
    assert source.read_text() == "A big dog runs.\n"


def test_translate_bad_input_leaves_an_existing_output(
        tiny_model_dir, tmp_path, capsys):
    source, output = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_bytes(b"A big dog runs.\n\xff\n")
    output.write_text("previous\n")
    code, _, err = run(["translate", "--model", tiny_model_dir, "-i", source,
                        "-o", output], capsys)
    assert_one_line_error(code, err, "translate", "invalid UTF-8")
    assert output.read_text() == "previous\n"


def test_vocab_output_that_is_an_input_is_refused(tmp_path, capsys):
    text = tmp_path / "v.model"
    text.write_text("a b c\n")
    code, _, err = run(["vocab", "--input", text, "--model-prefix",
                        tmp_path / "v", "--vocab-size", "8"], capsys)
    assert_one_line_error(code, err, "vocab", "is the same file as --input")
    assert text.read_text() == "a b c\n"


# --- 2. one training run per model directory ----------------------------------


def test_train_refuses_a_model_dir_in_use(locked_dir, toy_data_dir, capsys):
    code, _, err = run(["train", "--preset", "gnmt_tiny", "--model-dir",
                        locked_dir, "--data-dir", toy_data_dir,
                        "--set", "train_steps=1"], capsys)
    assert_one_line_error(code, err, "train", "in use by another training run")
    assert not (locked_dir / "config.json").exists()


def test_task_space_train_refuses_a_model_dir_in_use(
        locked_dir, multiway_dir, capsys):
    code, _, err = run(["task-space", "train", "--preset", "transformer_tiny",
                        "--model-dir", locked_dir, "--data-dir", multiway_dir,
                        "--directions", "en-de", "--set", "train_steps=1"],
                       capsys)
    assert_one_line_error(code, err, "task-space", "in use by another")
    assert not (locked_dir / "config.json").exists()


def test_qat_refuses_a_model_dir_in_use(locked_dir, tiny_model_dir,
                                        toy_data_dir, capsys):
    code, _, err = run(["export", "qat", "--model", tiny_model_dir, "--out",
                        locked_dir, "--data-dir", toy_data_dir, "--steps", "1"],
                       capsys)
    assert_one_line_error(code, err, "export", "in use by another")
    assert not (locked_dir / "config.json").exists()


def test_qat_into_the_float_model_dir_is_refused(tiny_model_dir, toy_data_dir,
                                                 capsys):
    before = (tiny_model_dir / "config.json").read_text()
    code, _, err = run(["export", "qat", "--model", tiny_model_dir, "--out",
                        tiny_model_dir, "--data-dir", toy_data_dir,
                        "--steps", "1"], capsys)
    assert_one_line_error(code, err, "export", "is the float model directory")
    assert (tiny_model_dir / "config.json").read_text() == before


# --- 3. numeric flags and --set values -----------------------------------------


@pytest.mark.parametrize("argv, flag", [
    (["translate", "--batch-size", "-3"], "--batch-size"),
    (["translate", "--batch-size", "0"], "--batch-size"),
    (["translate", "--beam-size", "0"], "--beam-size"),
    (["translate", "--alpha", "nan"], "--alpha"),
    (["translate", "--beta", "inf"], "--beta"),
    (["translate", "--beam-width", "-1"], "--beam-width"),
    (["translate", "--n-best", "0"], "--n-best"),
    (["train", "--model-dir", "m", "--minutes", "0"], "--minutes"),
    (["train", "--model-dir", "m", "--log-every", "0"], "--log-every"),
    (["quickstart", "--minutes", "-5"], "--minutes"),
    (["quickstart", "--beam-size", "0"], "--beam-size"),
    (["vocab", "--input", "x", "--model-prefix", "p", "--vocab-size", "0"],
     "--vocab-size"),
    (["align", "-i", "x", "-I", "0"], "-I/--iterations"),
    (["align", "-i", "x", "-p", "1.5"], "-p/--p0"),
    (["align", "-i", "x", "-T", "0"], "-T/--diagonal-tension"),
    (["export", "savedmodel", "--model", "m", "--out", "o", "--beam-size",
      "-1"], "--beam-size"),
    (["export", "tflite", "--model", "m", "--out", "o",
      "--max-source-length", "1"], "--max-source-length"),
    (["export", "qat", "--model", "m", "--out", "o", "--steps", "0"],
     "--steps"),
    (["export", "qat", "--model", "m", "--out", "o", "--minutes", "nan"],
     "--minutes"),
    (["task-space", "translate", "--model", "m", "--batch-size", "0"],
     "--batch-size"),
    (["task-space", "evaluate", "--model", "m", "--max-lines", "0"],
     "--max-lines"),
])
def test_bad_numeric_flags_stop_before_any_work(argv, flag, capsys):
    code, _, err = run(argv, capsys)
    command = " ".join(argv[:2]) if argv[0] in ("export", "task-space") \
        else argv[0]
    assert_one_line_error(code, err, command, f"argument {flag}: must be ")


@pytest.mark.parametrize("override, message", [
    ("max_tokens=0", "max_tokens must be an integer >= 1"),
    ("learning_rate=nan", "learning_rate must be a finite number > 0"),
    ("label_smoothing=1", "label_smoothing must be a finite number in [0, 1)"),
    ("hidden_dim=-4", "hidden_dim must be an integer >= 1"),
    ("max_minutes=0", "max_minutes must be a finite number > 0"),
])
def test_bad_set_values_are_refused(override, message, tmp_path,
                                    toy_data_dir, capsys):
    code, _, err = run(["train", "--preset", "gnmt_tiny", "--model-dir",
                        tmp_path / "m", "--data-dir", toy_data_dir,
                        "--set", override], capsys)
    assert_one_line_error(code, err, "train", message)
    assert not (tmp_path / "m").exists()


def test_n_best_above_beam_size(tiny_model_dir, capsys):
    code, _, err = run(["translate", "--model", tiny_model_dir, "--beam-size",
                        "2", "--n-best", "3"], capsys)
    assert_one_line_error(code, err, "translate", "--n-best")


# --- 4. options a GNMT model cannot honour -----------------------------------


@pytest.mark.parametrize("argv, message", [
    (["--src-lang", "en", "--tgt-lang", "de", "--tags", "news"],
     "cannot honour --tags news"),
    (["--src-lang", "fr", "--tgt-lang", "cs"], "cannot honour --src-lang fr"),
    (["--tgt-lang", "cs"], "cannot honour --tgt-lang cs"),
])
def test_gnmt_model_refuses_task_options(tiny_model_dir, argv, message,
                                         capsys):
    code, out, err = run(["translate", "--model", tiny_model_dir] + argv,
                         capsys)
    assert_one_line_error(code, err, "translate", message)
    assert "en->de" in err and out == ""


# --- 5. one line, not a traceback ---------------------------------------------


def test_evaluate_empty_files(tmp_path, capsys):
    (tmp_path / "hyp").write_text("")
    (tmp_path / "ref").write_text("")
    code, _, err = run(["evaluate", "--hyp", tmp_path / "hyp", "--ref",
                        tmp_path / "ref"], capsys)
    assert_one_line_error(code, err, "evaluate", "nothing to score")


@pytest.mark.parametrize("argv", [
    ["evaluate", "--hyp", "{dir}", "--ref", "{file}"],
    ["evaluate", "--hyp", "{file}", "--ref", "{dir}"],
    ["align", "-i", "{dir}"],
    ["align", "--symmetrize", "union", "--forward", "{dir}", "--reverse",
     "{file}"],
    ["vocab", "--input", "{dir}", "--model-prefix", "{tmp}/v"],
    ["translate", "--model", "{model}", "-i", "{dir}"],
    ["translate", "--model", "{model}", "-o", "{dir}"],
    ["translate", "--model", "{file}"],
    ["translate", "--onnx", "{tmp}/missing"],
    ["translate", "--onnx", "{file}"],
    ["translate", "--tflite", "{tmp}/missing.tflite"],
    ["evaluate", "--hyp", "{tmp}/missing", "--ref", "{file}"],
])
def test_a_folder_or_missing_file_is_one_line(argv, tmp_path, tiny_model_dir,
                                              capsys):
    folder = tmp_path / "folder"
    folder.mkdir()
    text = tmp_path / "text.txt"
    text.write_text("0-0\n")
    argv = [a.format(dir=folder, file=text, tmp=tmp_path, model=tiny_model_dir)
            for a in argv]
    code, _, err = run(argv, capsys)
    assert code == 2 and "Traceback" not in err, err
    assert err.strip().splitlines()[-1].startswith(f"gnmt-tf {argv[0]}: error:")


def test_train_vocab_that_is_a_folder(tmp_path, toy_data_dir, capsys):
    code, _, err = run(["train", "--preset", "gnmt_tiny", "--model-dir",
                        tmp_path / "m", "--data-dir", toy_data_dir,
                        "--vocab", tmp_path], capsys)
    assert_one_line_error(code, err, "train", "Is a directory")
    assert not (tmp_path / "m").exists()


# --- 6. a failed train leaves no half-made model directory ---------------------


def test_failed_train_removes_the_model_dir_it_made(tmp_path, toy_data_dir,
                                                    capsys):
    model_dir = tmp_path / "runs" / "m"
    code, _, err = run(["train", "--preset", "gnmt_tiny", "--model-dir",
                        model_dir, "--data-dir", toy_data_dir,
                        "--set", "max_length=2"], capsys)
    assert_one_line_error(code, err, "train", "no sentence pair fits")
    assert not (tmp_path / "runs").exists()


def test_failed_train_keeps_a_user_dir(tmp_path, toy_data_dir, capsys):
    model_dir = tmp_path / "m"
    model_dir.mkdir()
    (model_dir / "README").write_text("my notes")
    code, _, err = run(["train", "--preset", "gnmt_tiny", "--model-dir",
                        model_dir, "--data-dir", toy_data_dir,
                        "--set", "max_length=2"], capsys)
    assert code == 2
    assert [p.name for p in model_dir.iterdir()] == ["README"]


def test_failed_task_space_train_removes_the_model_dir(tmp_path, multiway_dir,
                                                       capsys):
    model_dir = tmp_path / "ts"
    code, _, err = run(["task-space", "train", "--preset", "transformer_tiny",
                        "--model-dir", model_dir, "--data-dir", multiway_dir,
                        "--directions", "en-de", "--set", "max_length=1"],
                       capsys)
    assert_one_line_error(code, err, "task-space", "no sentence pair fits")
    assert not model_dir.exists()


@pytest.fixture
def many_characters_dir(tmp_path, toy_corpus):
    """The toy corpus plus short pairs that bring it to 100+ distinct
    characters, more than gnmt_tiny's 64 pieces (as Multi30k)."""
    extra = "0123456789ÄÖÜäöüßéèêàâçñ!?;:()[]{}<>@#$%&*+=/\\'\"_-~^`|"
    pairs = list(toy_corpus) + [(f"A {c}{c}.", f"Ein {c}.") for c in extra]
    for lang, column in (("en", 0), ("de", 1)):
        (tmp_path / f"train.{lang}").write_text(
            "".join(p[column] + "\n" for p in pairs), encoding="utf-8")
    return tmp_path


def test_tiny_preset_trains_on_text_with_many_characters(
        many_characters_dir, tmp_path, capsys):
    code, out, err = run(["train", "--preset", "gnmt_tiny", "--model-dir",
                          tmp_path / "m", "--data-dir", many_characters_dir,
                          "--set", "train_steps=1"], capsys)
    assert code == 0, err
    assert "vocabulary size raised from 64" in err
    assert "trained to step 1" in out


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["gnmt_tiny", "gnmt_small"])
def test_presets_train_on_multi30k(preset, data_dir, tmp_path, capsys):
    code, out, err = run(["train", "--preset", preset, "--model-dir",
                          tmp_path / "m", "--data-dir", data_dir,
                          "--set", "train_steps=1"], capsys)
    assert code == 0, err
    assert "trained to step 1" in out
