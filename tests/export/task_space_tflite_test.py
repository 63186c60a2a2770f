"""TFLite export of a task-space Transformer and its host-side search:
files, signatures, builtin ops, the growing and the fixed cache, quantized
formats, bad inputs and the CLI. (Parity of the default export with
`Translator`: `tests/harness/model_family_test.py`, for every model
family.)"""

import json

import numpy as np
import pytest

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

from model_families import FAMILIES_BY_NAME
from reference_decoding import float_tolerance

# The family's requests: two directions the tiny model was trained on,
# sources of 4-14 subwords. `max_length_ratio` 2 would allow up to 30 output
# subwords, but every search stops at the model's max_sequence_length (16),
# with a growing cache (the default) and with a fixed one of 32 positions.
TASK_SPACE = FAMILIES_BY_NAME["task_space_transformer"]
DIRECTIONS = [(task["src_lang"], task["tgt_lang"], task["tags"],
               list(sentences)) for task, sentences in TASK_SPACE.requests]
SEARCHES = list(TASK_SPACE.searches)
MAX_SEQUENCE_LENGTH = 16  # transformer_tiny
CACHE_LENGTH = 32  # the fixed-cache export's
CACHE_BLOCK = 3  # the blocked export's: its outputs need several blocks
SEARCH_BEAM = 2  # a beam size of the export with search signatures
SEARCH_BEAMS = (SEARCH_BEAM, 3)  # all of them


def _score_tolerance(scores):
    """Absolute tolerance for search scores computed two ways in float32:
    each sums up to `MAX_SEQUENCE_LENGTH` log-probabilities."""
    return float_tolerance(np.float32, max(abs(x) for x in scores),
                           terms=MAX_SEQUENCE_LENGTH)


@pytest.fixture(scope="session")
def ts_tflite(task_space):
    """The default export (growing cache), as the harness made it."""
    return task_space.tflite


def _cli_export(model_dir, out, *flags):
    """`gnmt-tf export tflite` of `model_dir` into `out` with `flags`;
    returns `out`."""
    from gnmt_tf.cli.main import main

    assert main(["export", "tflite", "--model", str(model_dir), "--out",
                 str(out), *flags]) == 0
    return out


def _float32_translator(export_dir, workers=1):
    """The export's float32 translator; by default with one interpreter
    only, so that tests can count its calls."""
    from gnmt_tf.tflite_translator import TFLiteTranslator

    return TFLiteTranslator(export_dir / "model_float32.tflite",
                            workers=workers)


@pytest.fixture(scope="session")
def ts_fixed_tflite_dir(ts_model_dir, tmp_path_factory):
    """The fixed-shape export: `--fixed-shapes` with a KV cache of
    `CACHE_LENGTH` positions, through the CLI."""
    return _cli_export(ts_model_dir,
                       tmp_path_factory.mktemp("ts_fixed_tflite"),
                       "--fixed-shapes",
                       f"--max-target-length={CACHE_LENGTH}")


@pytest.fixture(scope="session")
def ts_fixed_tflite(ts_fixed_tflite_dir):
    return _float32_translator(ts_fixed_tflite_dir)


@pytest.fixture(scope="session")
def ts_search_tflite_dir(ts_model_dir, tmp_path_factory):
    """The default export with the whole searches of `SEARCH_BEAMS` as
    signatures, through the CLI (the flag repeated)."""
    return _cli_export(ts_model_dir,
                       tmp_path_factory.mktemp("ts_search_tflite"),
                       *[f"--search-beam-size={k}" for k in SEARCH_BEAMS])


@pytest.fixture(scope="session")
def ts_search_tflite(ts_search_tflite_dir):
    return _float32_translator(ts_search_tflite_dir)


@pytest.fixture(scope="session")
def ts_blocked_tflite_dir(ts_model_dir, tmp_path_factory):
    """The export whose cache grows `CACHE_BLOCK` positions at a time,
    through the CLI."""
    return _cli_export(ts_model_dir,
                       tmp_path_factory.mktemp("ts_blocked_tflite"),
                       f"--cache-block={CACHE_BLOCK}")


@pytest.fixture(scope="session")
def ts_blocked_tflite(ts_blocked_tflite_dir):
    return _float32_translator(ts_blocked_tflite_dir)


def _shapes(details):
    return {name: (d["shape_signature"].tolist(), d["dtype"].__name__)
            for name, d in details.items()}


def test_files_and_model_json(ts_tflite_dir, ts_model_dir):
    assert sorted(p.name for p in ts_tflite_dir.iterdir()) == [
        "model.json", "model_float32.tflite", "spm.model"]
    assert ((ts_tflite_dir / "spm.model").read_bytes()
            == (ts_model_dir / "spm.model").read_bytes())
    meta = json.loads((ts_tflite_dir / "model.json").read_text())
    inputs = {t["name"]: t for t in meta["task_inputs"]}
    assert inputs["src_lang"]["values"] == ["en", "de", "fr", "cs"]
    assert inputs["tgt_lang"]["differs_from"] == "src_lang"
    assert inputs["tags"]["multi_hot"] and inputs["tags"]["values"][0] == (
        "caption")
    assert meta["task_space"]["directions"] == "en-fr,de-cs"
    assert meta["task_space"]["tags"] == "caption"
    assert meta["default_task"] == {"src_lang": "en", "tgt_lang": "fr",
                                    "tags": ["caption"]}
    assert meta["source_prefix"] is None
    assert meta["max_source_length"] == MAX_SEQUENCE_LENGTH + 1
    assert meta["growing_cache"] is True
    assert meta["max_target_length"] is None
    assert meta["max_output_length"] == MAX_SEQUENCE_LENGTH
    assert meta["search_beam_sizes"] == []


def test_signatures_growing_cache(ts_tflite):
    """Any source length and cache length in `decode_step`; `encode` leaves
    the empty cache out and the host starts it at length 0."""
    assert [t.name for t in ts_tflite.task_inputs()] == [
        "src_lang", "tgt_lang", "tags"]
    runtime = ts_tflite.runtime
    assert runtime.search_beam_sizes == ()  # no search signature
    encode = _shapes(runtime.encode_runner.get_input_details())
    assert encode == {"source_ids": ([-1, -1], "int32"),
                      "src_lang": ([-1], "int32"),
                      "tgt_lang": ([-1], "int32"),
                      "tags": ([-1, 6], "int32")}
    assert runtime.encode_batch_size is None
    state = _shapes(runtime.encode_runner.get_output_details())
    step = _shapes(runtime.step_runner.get_input_details())
    past = {f"layer_{i}__past_{kind}" for i in range(2)
            for kind in ("key", "value")}
    assert set(step) == set(state) | past | {"ids"}
    for i in range(2):  # transformer_tiny: 2 layers, 2 heads of 8
        for kind in ("key", "value"):
            assert state[f"layer_{i}__cross_{kind}"][0] == [-1, -1, 2, 8]
            assert step[f"layer_{i}__cross_{kind}"][0] == [-1, -1, 2, 8]
            assert step[f"layer_{i}__past_{kind}"][0] == [-1, -1, 2, 8]
    assert step["source_mask"] == ([-1, -1], "bool")
    outputs = _shapes(runtime.step_runner.get_output_details())
    assert set(outputs) == {"log_probs", "attention", "time"} | past
    # The host's state: the source's own length, an empty cache.
    encoded = runtime.encode([[5, 6, 7, ts_tflite.eos_id]],
                             ts_tflite.task_arrays(src_lang="en",
                                                   tgt_lang="fr")[1])
    assert encoded["layer_0__cross_key"].shape == (1, 4, 2, 8)
    assert encoded["layer_0__past_key"].shape == (1, 0, 2, 8)
    log_probs, attention, changed = runtime.step(
        [ts_tflite.bos_id], encoded)
    assert log_probs.shape == (1, 60) and attention.shape == (1, 4)
    assert changed["layer_1__past_value"].shape == (1, 1, 2, 8)
    assert ts_tflite.max_source_length == MAX_SEQUENCE_LENGTH + 1
    assert ts_tflite.max_output_length == MAX_SEQUENCE_LENGTH


def test_encode_takes_sentences_of_one_length_together(ts_tflite_dir):
    """One `encode` call for three sentences gives each the state it gets
    alone (up to float rounding), and the host search encodes a batch per
    source length and keeps the sentences' order."""
    import numpy as np

    ts_tflite = _float32_translator(ts_tflite_dir)  # one interpreter
    runtime = ts_tflite.runtime
    task = ts_tflite.task_arrays(src_lang="en", tgt_lang="fr")[1]
    eos = ts_tflite.eos_id
    sources = [[5, 6, 7, eos], [9, 8, 7, eos], [11, 5, 30, eos]]
    together = runtime.encode(sources, task)
    for row, source in enumerate(sources):
        alone = runtime.encode([source], task)
        assert set(alone) == set(together)
        for name, value in alone.items():
            np.testing.assert_allclose(together[name][row:row + 1], value,
                                       rtol=1e-5, atol=1e-5, err_msg=name)
    calls = []
    encode = runtime.encode

    def counting(source_ids, task):
        calls.append(len(source_ids))
        return encode(source_ids, task)

    mixed = [sources[0], [5, 6, eos], sources[1], [7, eos], sources[2]]
    search = dict(beam_size=2, length_penalty=0.6, max_length_ratio=2.0)
    runtime.encode = counting
    try:
        got = ts_tflite.search_batch(mixed, task=task, **search)
    finally:
        del runtime.encode
    assert sorted(calls) == [1, 1, 3]
    for source, pairs in zip(mixed, got):
        alone = ts_tflite.search_batch([source], task=task, **search)[0]
        assert [ids for ids, _ in pairs] == [ids for ids, _ in alone]
        want = [score for _, score in alone]
        assert [score for _, score in pairs] == pytest.approx(
            want, abs=_score_tolerance(want))


def test_signatures_fixed_cache(ts_fixed_tflite, ts_fixed_tflite_dir):
    meta = json.loads((ts_fixed_tflite_dir / "model.json").read_text())
    assert meta["fixed_shapes"] is True and meta["growing_cache"] is False
    assert meta["max_target_length"] == CACHE_LENGTH
    runtime = ts_fixed_tflite.runtime
    state = _shapes(runtime.encode_runner.get_output_details())
    step = _shapes(runtime.step_runner.get_input_details())
    assert set(step) == set(state) | {"ids"}
    length, cache = MAX_SEQUENCE_LENGTH + 1, CACHE_LENGTH
    for i in range(2):  # transformer_tiny: 2 layers, 2 heads of 8
        for kind in ("key", "value"):
            assert state[f"layer_{i}__cross_{kind}"][0] == [-1, -1, 2, 8]
            assert step[f"layer_{i}__cross_{kind}"][0] == [-1, length, 2, 8]
            assert state[f"layer_{i}__self_{kind}"][0] == [-1, cache, 2, 8]
            assert step[f"layer_{i}__self_{kind}"][0] == [-1, cache, 2, 8]
    assert step["source_mask"] == ([-1, length], "bool")
    assert step["time"] == ([-1], "int32")
    outputs = _shapes(runtime.step_runner.get_output_details())
    assert set(outputs) == {"log_probs", "attention", "time"} | {
        f"layer_{i}__self_{kind}" for i in range(2)
        for kind in ("key", "value")}
    assert outputs["attention"][0] == [-1, length]
    assert ts_fixed_tflite.max_source_length == length
    # A cache longer than the model's max_sequence_length is not used up.
    assert ts_fixed_tflite.max_output_length == min(cache,
                                                    MAX_SEQUENCE_LENGTH)


def test_growing_cache_searches_as_the_fixed_one(ts_tflite, ts_fixed_tflite):
    """The two layouts do the same float32 arithmetic (masked positions add
    exact zeros), so the searches agree: same texts, scores to rounding."""
    for search in SEARCHES:
        texts, scores = _tflite(ts_fixed_tflite, search)
        got_texts, got_scores = _tflite(ts_tflite, search)
        assert got_texts == texts
        assert got_scores == pytest.approx(scores,
                                          abs=_score_tolerance(scores))


def test_signatures_blocked_cache(ts_blocked_tflite, ts_blocked_tflite_dir):
    meta = json.loads((ts_blocked_tflite_dir / "model.json").read_text())
    assert meta["cache_block"] == CACHE_BLOCK
    assert meta["growing_cache"] is False and meta["fixed_shapes"] is False
    assert meta["max_target_length"] is None
    runtime = ts_blocked_tflite.runtime
    assert runtime.cache_block == CACHE_BLOCK
    state = _shapes(runtime.encode_runner.get_output_details())
    step = _shapes(runtime.step_runner.get_input_details())
    assert set(step) == set(state) | {"ids"}
    for i in range(2):  # transformer_tiny: 2 layers, 2 heads of 8
        for kind in ("key", "value"):
            assert state[f"layer_{i}__self_{kind}"][0] == [-1, CACHE_BLOCK,
                                                           2, 8]
            assert step[f"layer_{i}__self_{kind}"][0] == [-1, -1, 2, 8]
            assert step[f"layer_{i}__cross_{kind}"][0] == [-1, -1, 2, 8]
    assert ts_blocked_tflite.max_output_length == MAX_SEQUENCE_LENGTH


def test_blocked_cache_lengthens_a_block_at_a_time(ts_blocked_tflite):
    """The runtime adds `CACHE_BLOCK` zero positions before the step that
    would write past the end, and only then; each step writes its
    position's keys and leaves the later positions zero."""
    import numpy as np

    translator = ts_blocked_tflite
    runtime = translator.runtime
    _, task = translator.task_arrays(src_lang="en", tgt_lang="fr",
                                     tags="caption")
    source = translator.sentencepiece.encode("a dog runs") + [
        translator.eos_id]
    state = runtime.encode(np.asarray([source], np.int32), task)
    ids = np.full([1], translator.bos_id, np.int32)
    lengths = []
    for t in range(2 * CACHE_BLOCK + 1):
        log_probs, _, changed = runtime.step(ids, state)
        state = dict(state, **changed)
        key = state["layer_0__self_key"]
        lengths.append(key.shape[1])
        assert np.abs(key[0, t]).max() > 0
        assert not key[0, t + 1:].any()
        assert int(state["time"][0]) == t + 1
        ids = log_probs.argmax(axis=1).astype(np.int32)
    assert lengths == [3, 3, 3, 6, 6, 6, 9]


def test_blocked_cache_searches_as_the_growing_one(ts_tflite,
                                                   ts_blocked_tflite):
    """Masked cache positions add exact zeros, so the float32 searches
    agree: same texts, scores to rounding."""
    for search in SEARCHES:
        texts, scores = _tflite(ts_tflite, search)
        got_texts, got_scores = _tflite(ts_blocked_tflite, search)
        assert got_texts == texts
        assert got_scores == pytest.approx(scores,
                                          abs=_score_tolerance(scores))


def test_cache_block_is_refused_where_it_cannot_apply(
        ts_model_dir, tiny_model_dir, tmp_path, capsys):
    from gnmt_tf.export.tflite import export_tflite
    from gnmt_tf.cli.main import main

    with pytest.raises(ValueError, match="no growing cache"):
        export_tflite(tiny_model_dir, tmp_path / "gnmt", cache_block=4)
    for flags in (["--fixed-shapes"], ["--max-target-length", "8"]):
        assert main(["export", "tflite", "--model", str(ts_model_dir),
                     "--out", str(tmp_path / "ts"), "--cache-block", "4",
                     *flags]) != 0
        assert "cache_block is for the default shapes" in (
            capsys.readouterr().err)
    with pytest.raises(SystemExit) as exit_info:
        main(["export", "tflite", "--model", str(ts_model_dir), "--out",
              str(tmp_path / "ts"), "--cache-block", "0"])
    assert exit_info.value.code == 2
    assert "--cache-block: must be an integer >= 1" in (
        capsys.readouterr().err)
    assert not any(tmp_path.iterdir())


def test_builtin_ops_only(ts_tflite_dir):
    from tensorflow.lite.python import schema_py_generated as schema
    from tensorflow.lite.tools import flatbuffer_utils

    model = flatbuffer_utils.read_model(
        str(ts_tflite_dir / "model_float32.tflite"))
    codes = {max(code.builtinCode, code.deprecatedBuiltinCode)
             for code in model.operatorCodes}
    assert schema.BuiltinOperator.CUSTOM not in codes  # no Flex, no custom
    assert len(model.signatureDefs) == 2


def test_decode_step_attends_without_batch_matmul(ts_tflite_dir):
    # The export's steps attend with products and sums (XNNPACK packs the
    # operands of every BATCH_MATMUL); `encode`, the full pass, keeps them.
    from tensorflow.lite.python import schema_py_generated as schema
    from tensorflow.lite.tools import flatbuffer_utils

    model = flatbuffer_utils.read_model(
        str(ts_tflite_dir / "model_float32.tflite"))
    codes = [max(code.builtinCode, code.deprecatedBuiltinCode)
             for code in model.operatorCodes]
    ops = {}
    for signature in model.signatureDefs:
        subgraph = model.subgraphs[signature.subgraphIndex]
        ops[signature.signatureKey.decode()] = {
            codes[op.opcodeIndex] for op in subgraph.operators}
    assert schema.BuiltinOperator.BATCH_MATMUL in ops["encode"]
    assert schema.BuiltinOperator.BATCH_MATMUL not in ops["decode_step"]


def _expected(translator, search):
    """In-process `(texts, scores)` of `DIRECTIONS`, in order."""
    from gnmt_tf.translator import SearchOptions

    texts, scores = [], []
    for src, tgt, tags, sentences in DIRECTIONS:
        for hyps in translator.translate_nbest(
                sentences, SearchOptions(**search), src_lang=src,
                tgt_lang=tgt, tags=tags):
            texts.append(hyps[0].text)
            scores.append(hyps[0].score)
    return texts, scores


def _tflite(translator, search):
    texts, scores = [], []
    for src, tgt, tags, sentences in DIRECTIONS:
        for hyps in translator.translate_nbest(
                sentences, **search, src_lang=src, tgt_lang=tgt, tags=tags):
            texts.append(hyps[0].text)
            scores.append(hyps[0].score)
    return texts, scores


@pytest.mark.parametrize("layout", ["growing", "fixed", "blocked"])
def test_output_stops_at_the_model_limit(ts_tflite, ts_fixed_tflite,
                                         ts_blocked_tflite, layout):
    ts_tflite = {"growing": ts_tflite, "fixed": ts_fixed_tflite,
                 "blocked": ts_blocked_tflite}[layout]
    source_ids = ts_tflite.sentencepiece.encode("a dog runs") + [
        ts_tflite.eos_id]
    prefix, task = ts_tflite.task_arrays(src_lang="en", tgt_lang="fr",
                                         tags="caption")
    assert prefix == []
    for beam_size in (1, 2):
        for ids, _ in ts_tflite.search(source_ids, beam_size=beam_size,
                                       max_length_ratio=100.0, task=task,
                                       num_hypotheses=beam_size):
            assert len(ids) <= ts_tflite.max_output_length


@pytest.mark.parametrize("quantization", ["dynamic_range", "float16"])
def test_quantized_export_translates(ts_model_dir, ts_tflite_dir, tmp_path,
                                     quantization):
    from gnmt_tf.export.tflite import export_tflite
    from gnmt_tf.tflite_translator import TFLiteTranslator

    paths = export_tflite(ts_model_dir, tmp_path, quantization)
    assert paths["model"].name == f"model_{quantization}.tflite"
    meta = json.loads(paths["metadata"].read_text())  # the default lengths
    assert meta["max_source_length"] == MAX_SEQUENCE_LENGTH + 1
    assert meta["growing_cache"] and meta["max_target_length"] is None
    float32_size = (ts_tflite_dir / "model_float32.tflite").stat().st_size
    if quantization == "float16":
        assert paths["model"].stat().st_size < float32_size
    translator = TFLiteTranslator(paths["model"])
    assert translator.max_output_length == MAX_SEQUENCE_LENGTH
    for src, tgt, tags, sentences in DIRECTIONS:
        texts = translator.translate(sentences, beam_size=2, src_lang=src,
                                     tgt_lang=tgt, tags=tags)
        assert len(texts) == len(sentences)
        assert all(isinstance(t, str) for t in texts)


def test_quantized_files_are_smaller():
    """The converter quantizes only weights of >= 1024 elements, and the
    tiny test model has none (its largest, the embedding, is 60 x 16): an
    untrained model with a wider FFN (16 x 128 kernels) shows the sizes."""
    from gnmt_tf.export.tflite import convert
    from gnmt_tf.models.task_space.task_space_transformer import TaskSpaceTransformer

    model = TaskSpaceTransformer.from_preset(
        "transformer_tiny", vocabulary_size=60, intermediate_dim=128)
    sizes = {q: len(convert(model, q))
             for q in ("float32", "dynamic_range", "float16")}
    assert sizes["dynamic_range"] < 0.8 * sizes["float32"]
    assert sizes["float16"] < 0.8 * sizes["float32"]


def test_bad_inputs(ts_tflite, ts_tflite_dir, tmp_path):
    import shutil

    from gnmt_tf.tflite_translator import TFLiteTranslator

    def translate(sentences, *task, **kwargs):
        names = ("src_lang", "tgt_lang", "tags")
        return ts_tflite.translate(sentences, **dict(zip(names, task)),
                                   **kwargs)

    with pytest.raises(ValueError, match="unknown language 'xx'.*cs"):
        translate(["a dog"], "xx", "fr")
    with pytest.raises(ValueError, match="needs tgt_lang"):
        translate(["a dog"], "en", "")
    with pytest.raises(ValueError, match="needs tgt_lang"):
        translate(["a dog"], "en", None)
    with pytest.raises(ValueError, match="unknown scene tag 'bogus'"):
        translate(["a dog"], "en", "fr", "caption, bogus")
    with pytest.raises(ValueError, match="must differ"):
        translate(["a dog"], "en", "en")
    with pytest.raises(ValueError, match="takes no region"):
        translate(["a dog"], "en", "fr", region="eu")
    with pytest.raises(ValueError, match="at most 16"):
        translate(["a dog runs in a big red park " * 3], "en", "fr")
    with pytest.raises(TypeError, match="list of str, not a str"):
        translate("a dog", "en", "fr")
    with pytest.raises(TypeError, match="input 2 is bytes"):
        translate(["a dog", b"a cat"], "en", "fr")
    assert translate([], "en", "fr") == []
    # Without its model.json the task inputs are unknown: a clear error.
    shutil.copyfile(ts_tflite_dir / "model_float32.tflite",
                    tmp_path / "model.tflite")
    with pytest.raises(ValueError, match="model.json.*missing"):
        TFLiteTranslator(tmp_path / "model.tflite",
                         ts_tflite_dir / "spm.model")


def test_export_cli_rejects_bad_lengths(ts_model_dir, tmp_path, capsys):
    from gnmt_tf.cli.main import main

    with pytest.raises(SystemExit) as exit_info:
        main(["export", "tflite", "--model", str(ts_model_dir), "--out",
              str(tmp_path), "--max-target-length", "0"])
    assert exit_info.value.code == 2
    assert "--max-target-length: must be an integer >= 1" in (
        capsys.readouterr().err)
    assert not any(tmp_path.iterdir())


def test_translate_cli(ts_tflite, ts_tflite_dir, tmp_path, capsys):
    from gnmt_tf.cli.main import main

    sentences = DIRECTIONS[0][3]
    source = tmp_path / "src.txt"
    source.write_text("".join(s + "\n" for s in sentences), encoding="utf-8")
    output = tmp_path / "hyp.txt"
    model = str(ts_tflite_dir / "model_float32.tflite")
    assert main(["translate", "--tflite", model, "--src-lang", "en",
                 "--tgt-lang", "fr", "--tags", "caption", "--beam-size", "2",
                 "-i", str(source), "-o", str(output)]) == 0
    expected = ts_tflite.translate(sentences, beam_size=2, src_lang="en",
                                   tgt_lang="fr", tags="caption")
    assert output.read_text(encoding="utf-8").splitlines() == expected
    # The default tags are the training ones ("caption").
    assert main(["translate", "--tflite", model, "--src-lang", "en",
                 "--tgt-lang", "fr", "--beam-size", "2", "-i", str(source),
                 "-o", str(output)]) == 0
    assert output.read_text(encoding="utf-8").splitlines() == expected
    for workers in ("1", "2"):  # one interpreter, or the batch split
        assert main(["translate", "--tflite", model, "--src-lang", "en",
                     "--tgt-lang", "fr", "--beam-size", "2", "--workers",
                     workers, "-i", str(source), "-o", str(output)]) == 0
        assert output.read_text(encoding="utf-8").splitlines() == expected
    capsys.readouterr()
    assert main(["translate", "--onnx", str(tmp_path), "--workers", "2",
                 "--src-lang", "en", "--tgt-lang", "fr", "-i",
                 str(source)]) == 2
    assert capsys.readouterr().err.strip().endswith(
        "--workers needs --tflite or --model (TFLite's host search)")
    assert main(["translate", "--tflite", model, "--src-lang", "en",
                 "-i", str(source)]) == 2
    assert "--tgt-lang required" in capsys.readouterr().err
    assert main(["translate", "--tflite", model, "--src-lang", "en",
                 "--tgt-lang", "xx", "-i", str(source)]) == 2
    assert "unknown language 'xx'" in capsys.readouterr().err


@pytest.mark.slow
def test_target_language_token_baseline(ts_baseline_model_dir, tmp_path):
    """The Johnson et al. baseline (no task space, `<2xx>` source token):
    `encode` takes the source ids only, the host prepends the token, and
    the default length limit accepts what `Translator` does."""
    from gnmt_tf.export.tflite import export_tflite
    from gnmt_tf.tflite_translator import TFLiteTranslator
    from gnmt_tf.translator import Translator

    model_dir = ts_baseline_model_dir
    paths = export_tflite(model_dir, tmp_path / "tflite",
                          max_target_length=CACHE_LENGTH)
    tflite = TFLiteTranslator(paths["model"])
    assert tflite.source_prefix[0] == "tgt_lang"
    translator = Translator.from_model_dir(model_dir)
    for search in SEARCHES[:2]:
        texts, scores = _expected(translator, search)
        got_texts, got_scores = _tflite(tflite, search)
        assert got_texts == texts
        assert got_scores == pytest.approx(scores,
                                          abs=_score_tolerance(scores))
    limit = translator.max_source_length  # subwords, token not counted
    texts = {}
    for n in range(1, 30):
        for tail in ("", "d", "do", " dog"):
            text = " ".join(["a"] * n) + tail
            texts.setdefault(len(translator.subwords.encode([text])[0]), text)
    tflite.translate([texts[limit]], beam_size=1, src_lang="en",
                     tgt_lang="fr")
    with pytest.raises(ValueError, match=f"at most {limit}"):
        tflite.translate([texts[limit + 1]], src_lang="en", tgt_lang="fr")


def test_signatures_search(ts_search_tflite, ts_search_tflite_dir):
    """Each `--search-beam-size` adds the whole search at that beam size:
    the encoder's inputs at batch 1 plus the limit and penalties in, the
    best hypothesis out; `encode` and `decode_step` stay as they were."""
    meta = json.loads((ts_search_tflite_dir / "model.json").read_text())
    assert meta["search_beam_sizes"] == list(SEARCH_BEAMS)
    runtime = ts_search_tflite.runtime
    assert runtime.search_beam_sizes == SEARCH_BEAMS
    assert set(runtime.interpreter.get_signature_list()) == {
        "encode", "decode_step"} | {f"search_beam{k}" for k in SEARCH_BEAMS}
    search = runtime.interpreter.get_signature_runner(
        f"search_beam{SEARCH_BEAM}")
    assert _shapes(search.get_input_details()) == {
        "source_ids": ([1, -1], "int32"), "src_lang": ([1], "int32"),
        "tgt_lang": ([1], "int32"), "tags": ([1, 6], "int32"),
        "max_length": ([], "int32"), "length_penalty": ([], "float32"),
        "coverage_penalty": ([], "float32")}
    outputs = _shapes(search.get_output_details())
    # (The converter leaves the ids' batch unknown; it is 1.)
    assert outputs == {"ids": ([-1, -1], "int32"), "length": ([1], "int32"),
                       "score": ([1], "float32")}
    assert "log_probs" in runtime.step_runner.get_output_details()


def _count_steps(runtime, monkeypatch):
    """Counts `runtime.step` calls (the host loop's) from now on."""
    calls = []
    step = runtime.step

    def counted(*args, **kwargs):
        calls.append(1)
        return step(*args, **kwargs)

    monkeypatch.setattr(runtime, "step", counted)
    return calls


def test_search_signature_searches_as_the_host_loop(ts_search_tflite,
                                                    monkeypatch):
    """A sentence translated alone at the exported beam size takes one
    interpreter call and gets the host loop's search over the same file:
    same texts, scores to float32 rounding (the two run the same float32
    steps). Other beam sizes, n-best lists, pruning and batches of
    several sentences run the host loop."""
    translator = ts_search_tflite
    calls = _count_steps(translator.runtime, monkeypatch)
    searches = [dict(beam_size=SEARCH_BEAM),
                dict(beam_size=SEARCH_BEAM, length_penalty=1.0,
                     coverage_penalty=0.2),
                dict(beam_size=SEARCH_BEAMS[1], length_penalty=0.0)]
    for search in searches:
        translator.graph_search = False
        texts, scores = _tflite_one_at_a_time(translator, search)
        looped = len(calls)
        translator.graph_search = True
        got_texts, got_scores = _tflite_one_at_a_time(translator, search)
        assert len(calls) == looped  # no host step: one call a sentence
        assert got_texts == texts
        assert got_scores == pytest.approx(scores,
                                          abs=_score_tolerance(scores))
    assert any(texts) and len(set(texts)) > 1  # not all empty or equal
    for search in (dict(beam_size=1), dict(beam_size=max(SEARCH_BEAMS) + 1),
                   dict(beam_size=SEARCH_BEAM, num_hypotheses=2),
                   dict(beam_size=SEARCH_BEAM, beam_width=3.0)):
        before = len(calls)
        _tflite_one_at_a_time(translator, search)
        assert len(calls) > before, search
    before = len(calls)
    _tflite(translator, dict(beam_size=SEARCH_BEAM))  # batches of several
    assert len(calls) > before


def _tflite_one_at_a_time(translator, search):
    texts, scores = [], []
    for src, tgt, tags, sentences in DIRECTIONS:
        for hyps in translator.translate_nbest(
                sentences, **search, batch_size=1, src_lang=src,
                tgt_lang=tgt, tags=tags):
            texts.append(hyps[0].text)
            scores.append(hyps[0].score)
    return texts, scores


def test_search_signature_stops_at_the_limit(ts_search_tflite):
    """The search's `max_length` input is the host's limit: the output has
    at most that many tokens, end token included (cut there: none)."""
    translator = ts_search_tflite
    _, task = translator.task_arrays(src_lang="en", tgt_lang="fr",
                                     tags="caption")
    source = translator.sentencepiece.encode("a big cat sleeps") + [
        translator.eos_id]
    for limit in (1, 2, 5, MAX_SEQUENCE_LENGTH):
        ids, score = translator.runtime.search(
            np.asarray([source], np.int32), task, limit, SEARCH_BEAM)
        assert 1 <= len(ids) <= limit and np.isfinite(score)
        assert translator.eos_id not in ids[:-1]
    with pytest.raises(KeyError, match="no search with beam size 4"):
        translator.runtime.search(np.asarray([source], np.int32), task, 4, 4)


def test_search_signature_is_refused_where_it_cannot_apply(
        ts_model_dir, tmp_path, capsys):
    from gnmt_tf.cli.main import main
    from gnmt_tf.export.tflite import check_search_beams

    for flags in (["--fixed-shapes"], ["--int8"]):
        assert main(["export", "tflite", "--model", str(ts_model_dir),
                     "--out", str(tmp_path / "ts"), "--search-beam-size",
                     "4", *flags]) != 0
        err = capsys.readouterr().err
        assert "search signature is for float32, float16 and " in err or (
            "QAT" in err or "quantization-aware" in err), err
    assert not (tmp_path / "ts").exists() or not list(
        (tmp_path / "ts").glob("*.tflite"))
    for bad in (1, 0, 2.5, True):
        with pytest.raises(ValueError, match="search beam size"):
            check_search_beams([4, bad])
    with pytest.raises(ValueError, match="float32, float16"):
        check_search_beams([4], "int8")
    check_search_beams([])  # none: any export
    with pytest.raises(SystemExit):
        main(["export", "tflite", "--model", str(ts_model_dir), "--out",
              str(tmp_path / "ts"), "--search-beam-size", "0"])


def test_workers_translate_as_one_interpreter(ts_tflite_dir, monkeypatch):
    """Batches split between two single-threaded interpreters get the texts
    of the whole batch on one interpreter (n-best lists too), scores to
    float32 rounding; the translator's own interpreter takes no step."""
    one = _float32_translator(ts_tflite_dir)
    two = _float32_translator(ts_tflite_dir, workers=2)
    assert one.workers is None and two.workers.count == 2
    calls = _count_steps(two.runtime, monkeypatch)
    assert all(len(sentences) >= 2 for *_, sentences in DIRECTIONS)
    for search in (dict(beam_size=2), dict(beam_size=3, num_hypotheses=2)):
        for src, tgt, tags, sentences in DIRECTIONS:
            task = dict(src_lang=src, tgt_lang=tgt, tags=tags)
            want = one.translate_nbest(sentences, **search, **task)
            got = two.translate_nbest(sentences, **search, **task)
            assert [[h.text for h in hyps] for hyps in got] == [
                [h.text for h in hyps] for hyps in want]
            scores = [h.score for hyps in want for h in hyps]
            assert [h.score for hyps in got for h in hyps] == pytest.approx(
                scores, abs=_score_tolerance(scores))
    assert not calls
    two.workers.close()
