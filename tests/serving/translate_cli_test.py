"""`gnmt-tf translate --server` with search flags, against the local server.

The "searchable" toy SavedModel has the two text signatures of a GNMT export
(`gnmt_tf.export.savedmodel`): `serving_default` (`text`) and `translate_with_options`
(`text` + scalar `beam_size`, `length_penalty`, `coverage_penalty`, beam
sizes 1, 2, 4 and 5 only). Its translations say which one ran, with what.
"""

import pytest

from gnmt_tf.cli.main import main

SENTENCES = "a dog\n\nthe cat runs\n"


@pytest.fixture(scope="module")
def search_server(start_server, tmp_path_factory):
    import tensorflow as tf

    text_spec = tf.TensorSpec([None], tf.string, name="text")

    class Searchable(tf.Module):
        @tf.function(input_signature=[text_spec])
        def serve(self, text):
            return {"translations": tf.strings.join(
                        [tf.strings.upper(text), " (default)"]),
                    "scores": tf.zeros_like(text, tf.float32)}

        @tf.function(input_signature=[
            text_spec, tf.TensorSpec([], tf.int32, name="beam_size"),
            tf.TensorSpec([], tf.float32, name="length_penalty"),
            tf.TensorSpec([], tf.float32, name="coverage_penalty")])
        def with_options(self, text, beam_size, length_penalty,
                         coverage_penalty):
            sizes = tf.constant([1, 2, 4, 5])
            check = tf.debugging.Assert(
                tf.reduce_any(tf.equal(sizes, beam_size)),
                ["beam_size must be one of", sizes, "got", beam_size],
                summarize=4)
            with tf.control_dependencies([check]):
                options = tf.strings.format(
                    " (k={} a={} b={})",
                    [beam_size, length_penalty, coverage_penalty])
            return {"translations": tf.strings.join(
                        [tf.strings.upper(text), options]),
                    "scores": tf.zeros_like(text, tf.float32)}

    base = tmp_path_factory.mktemp("search_models") / "searchable"
    module = Searchable()
    tf.saved_model.save(module, str(base / "1"), signatures={
        "serving_default": module.serve.get_concrete_function(),
        "translate_with_options": module.with_options.get_concrete_function()})
    return start_server({"searchable": str(base)})


def translate(server, tmp_path, *flags):
    source = tmp_path / "in.txt"
    source.write_text(SENTENCES, encoding="utf-8")
    out = tmp_path / "out.txt"
    code = main(["translate", "--server", server.target, "--model_name",
                 "searchable", "--input", str(source), "--output", str(out),
                 *flags])
    return code, (out.read_text(encoding="utf-8").splitlines()
                  if out.exists() else None)


def test_search_flags_go_to_translate_with_options(search_server, tmp_path):
    code, lines = translate(search_server, tmp_path, "--beam-size", "4",
                            "--alpha", "1.0", "--beta", "0.2")
    assert code == 0
    assert lines == ["A DOG (k=4 a=1 b=0.2)", "",
                     "THE CAT RUNS (k=4 a=1 b=0.2)"]
    # Flags not given take the `gnmt-tf translate` defaults.
    code, lines = translate(search_server, tmp_path, "--alpha", "0.0")
    assert code == 0 and lines[0] == "A DOG (k=5 a=0 b=0)"


def test_without_search_flags_the_export_defaults_apply(search_server,
                                                       tmp_path):
    code, lines = translate(search_server, tmp_path)
    assert code == 0
    assert lines == ["A DOG (default)", "", "THE CAT RUNS (default)"]


@pytest.mark.parametrize("flags, message", [
    (["--beam-size", "8", "--alpha", "1.0", "--n-best", "3"],
     "--n-best > 1 cannot be used with --server"),
    (["--beam-width", "3"], "--beam-width cannot be used with --server"),
    (["--early-stopping", "exact"],
     "--early-stopping cannot be used with --server"),
    (["--beam-size", "8"], "refused --beam-size 8 --alpha 0.6 --beta 0.0: "
                           "INVALID_ARGUMENT: "),
])
def test_flags_a_server_cannot_honour_are_one_line_errors(
        search_server, tmp_path, capsys, flags, message):
    code, lines = translate(search_server, tmp_path, *flags)
    err = capsys.readouterr().err
    assert code == 2 and lines is None
    assert message in err and len(err.strip().splitlines()) == 1, err
    if flags == ["--beam-size", "8"]:
        assert "beam_size must be one of 1 2 4 5 got 8" in err
