"""SavedModel export of GNMT: layout, signatures, warm-up, the local
server. (Parity with `Translator` in a fresh process, the host loop and bad
requests: `tests/harness/model_family_test.py`, for every model family.)"""

import json

import pytest

from gnmt_tf.export import savedmodel
from gnmt_tf.export import step_functions
from gnmt_tf.export.savedmodel import METADATA_FILE, WARMUP_FILE


def test_layout(export_dir, tiny_model_dir, settings):
    assert export_dir.parent.name == "gnmt" and export_dir.name == "1"
    assert (export_dir / "saved_model.pb").is_file()
    assert (export_dir / "variables" / "variables.index").is_file()
    assert ((export_dir / "assets" / "spm.model").read_bytes()
            == (tiny_model_dir / "spm.model").read_bytes())
    assert (export_dir / "assets.extra" / WARMUP_FILE).is_file()
    # No staging directory left next to the version.
    assert [p.name for p in export_dir.parent.iterdir()] == ["1"]
    metadata = json.loads(
        (export_dir / "assets.extra" / METADATA_FILE).read_text())
    assert metadata["search_options"]["beam_size"] == settings.beam_size
    assert metadata["beam_sizes"] == [1, settings.beam_size]
    assert metadata["src_lang"] == "en" and metadata["tgt_lang"] == "de"


def test_signatures(fresh_process, tiny_model_dir):
    sigs = fresh_process["signatures"]
    assert set(sigs) == {"serving_default", "translate_with_options",
                         "translate_with_alignment", "encode", "decode_step"}
    string, lengths = ["string", [None]], ["int32", [None]]
    assert sigs["translate_with_alignment"] == {
        "inputs": {"text": string},
        "outputs": {"translations": string, "scores": ["float32", [None]],
                    "source_pieces": ["string", [None, None]],
                    "source_lengths": lengths,
                    "target_pieces": ["string", [None, None]],
                    "target_lengths": lengths,
                    "alignment": ["float32", [None, None, None]]}}
    assert sigs["serving_default"] == {
        "inputs": {"text": ["string", [None]]},
        "outputs": {"translations": ["string", [None]],
                    "scores": ["float32", [None]]}}
    assert sigs["translate_with_options"]["inputs"] == {
        "text": ["string", [None]], "beam_size": ["int32", []],
        "length_penalty": ["float32", []], "coverage_penalty": ["float32", []]}
    assert (sigs["translate_with_options"]["outputs"]
            == sigs["serving_default"]["outputs"])

    encode, step = sigs["encode"], sigs["decode_step"]
    assert encode["inputs"] == {"source_ids": ["int32", [None, None]]}
    # decode_step takes the whole state encode returns, plus the ids ...
    assert step["inputs"] == dict(encode["outputs"], ids=["int32", [None]])
    # ... and returns the LSTM states it changes (and the fed-back attention
    # context, with input feeding), not the attention memory.
    model = json.loads((tiny_model_dir / "config.json").read_text())["model"]
    changed = {f"{x}_{i}" for x in "hc"
               for i in range(model["num_decoder_layers"])}
    if model.get("input_feeding"):
        changed.add("context")
    assert set(encode["outputs"]) == changed | {
        "memory", "memory_keys", "memory_mask"}
    assert set(step["outputs"]) == changed | {"log_probs", "attention"}
    assert step["outputs"]["log_probs"][0] == "float32"
    assert step["outputs"]["attention"] == ["float32", [None, None]]
    assert encode["outputs"]["memory_mask"] == ["bool", [None, None]]


def test_warmup_requests_replay(fresh_process):
    assert fresh_process["warmup"] == [
        ["gnmt", "serving_default", ["text"], 3],
        ["gnmt", "translate_with_options",
         ["beam_size", "coverage_penalty", "length_penalty", "text"], 3]]


def test_export_dir_must_be_versioned(tmp_path):
    with pytest.raises(ValueError, match="VERSION"):
        savedmodel.check_export_dir(tmp_path / "model" / "latest")
    (tmp_path / "model" / "2").mkdir(parents=True)
    (tmp_path / "model" / "2" / "saved_model.pb").write_bytes(b"")
    with pytest.raises(ValueError, match="not empty"):
        savedmodel.check_export_dir(tmp_path / "model" / "2")
    assert savedmodel.check_export_dir(tmp_path / "model" / "3").name == "3"


def test_flatten_state_round_trip():
    state = {"b": 1, "a": {"y": 2, "x": 3}}
    flat = step_functions.flatten_state(state)
    assert list(flat) == ["a__x", "a__y", "b"]
    assert step_functions.unflatten_state(flat, state) == state


@pytest.mark.slow
def test_nbest_outputs(tiny_model_dir, tmp_path, translator, settings):
    import tensorflow as tf

    from gnmt_tf.translator import SearchOptions

    options = SearchOptions(beam_size=2, num_hypotheses=2, length_penalty=0.6)
    path = savedmodel.export_savedmodel(
        tiny_model_dir, tmp_path / "nbest" / "7", options, warmup_sentences=[],
        beam_sizes=())
    assert not (path / "assets.extra" / WARMUP_FILE).exists()
    serve = tf.saved_model.load(str(path)).signatures["serving_default"]
    out = serve(text=tf.constant(settings.sentences))
    assert set(out) == {"translations", "scores", "nbest_translations",
                        "nbest_scores"}
    expected = translator.translate_nbest(settings.sentences, options)
    got = [[t.decode("utf-8") for t in row]
           for row in out["nbest_translations"].numpy()]
    # Blank inputs: the graph fills both slots, Translator returns one.
    assert [row[:len(hyps)] for row, hyps in zip(got, expected)] == [
        [h.text for h in hyps] for hyps in expected]
    assert [t.decode("utf-8") for t in out["translations"].numpy()] == [
        hyps[0].text for hyps in expected]


def test_translate_cli_search_flags_through_the_local_server(
        export_dir, fresh_process, settings, tmp_path, capsys):
    """`gnmt-tf translate --server` sends its search flags to this export's
    `translate_with_options`, and a beam size it lacks is one clear error."""
    from gnmt_tf.cli.main import main
    from gnmt_tf.serving.model_manager import ModelManager
    from gnmt_tf.serving.server import ModelServer

    sentences = settings.sentences
    source = tmp_path / "in.txt"
    source.write_text("".join(s + "\n" for s in sentences), encoding="utf-8")
    out = tmp_path / "out.txt"
    server = ModelServer(ModelManager({"gnmt": str(export_dir.parent)},
                                      poll_interval_s=0.0), port=0)
    server.start()
    try:
        def translate(*flags):
            return main(["translate", "--server", server.target,
                         "--model_name", "gnmt", "--input", str(source),
                         "--output", str(out), *flags])

        assert translate("--beam-size", "1", "--alpha", "0.0",
                         "--beta", "0.0") == 0
        greedy = fresh_process["with_options"]["1,0.0,0.0"]["translations"]
        got = out.read_text(encoding="utf-8").splitlines()
        assert got == [t if s.strip() else "" for s, t in zip(sentences,
                                                              greedy)]
        capsys.readouterr()
        assert translate("--beam-size", "2") == 2
        err = capsys.readouterr().err
        assert "beam_size must be one of 1 3 got 2" in err, err
    finally:
        server.stop(grace=2)
