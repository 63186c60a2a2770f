"""`HostTranslator`: one NumPy search over ONNX Runtime and LiteRT.

For both families (GNMT, the task-space Transformer) the ONNX export
searched on the host gives `Translator`'s translations and the TFLite
export's; `gnmt-tf translate --onnx` runs end to end and fails in one line.
"""

import types

import numpy as np
import pytest

from gnmt_tf.cli.main import main

# Task-space directions the tiny model was trained on, with a blank input.
TS_CASES = [
    (dict(src_lang="en", tgt_lang="fr", tags="caption"),
     ["a dog runs", "a big cat sleeps", "   ", "a man runs", "a red ball"]),
    (dict(src_lang="de", tgt_lang="cs", tags=""),
     ["ein roter Ball", "Mann schläft", "ein Hund rennt"]),
]
SEARCHES = [dict(beam_size=1),
            dict(beam_size=3, length_penalty=0.6, coverage_penalty=0.2)]


@pytest.fixture(scope="module", params=["gnmt", "task_space"])
def family(request, settings):
    """One family's in-process `Translator`, its ONNX and TFLite host
    translators and the `(task, sentences)` cases to translate.

    The `Translator`s are this module's own, not the session's `translator`
    / `ts_translator`: made this early, those would be broken by the time
    later modules use them, since training in a later fixture
    (`keras.utils.set_random_seed` clears TensorFlow's kernel cache) destroys
    the SentencePiece resource of every tokenizer alive then.
    """
    from gnmt_tf.host_translator import HostTranslator
    from gnmt_tf.translator import Translator

    if request.param == "gnmt":
        model_dir = request.getfixturevalue("tiny_model_dir")
        onnx_dir = request.getfixturevalue("onnx_dir")
        tflite_path = request.getfixturevalue("tflite_float32")[0]
        cases = [({}, settings.sentences)]
    else:
        model_dir = request.getfixturevalue("ts_model_dir")
        onnx_dir = request.getfixturevalue("ts_onnx_paths")["encode"].parent
        tflite_path = (request.getfixturevalue("ts_tflite_dir")
                       / "model_float32.tflite")
        cases = TS_CASES
    return types.SimpleNamespace(
        name=request.param, translator=Translator.from_model_dir(model_dir),
        onnx_dir=onnx_dir,
        onnx=HostTranslator.from_path(onnx_dir),
        # One interpreter, as ONNX Runtime has: the tests count its calls
        # (the workers have tests of their own).
        tflite=HostTranslator.from_path(tflite_path, workers=1), cases=cases)


def _best(translate_nbest, cases):
    """`(texts, scores)` of the best hypotheses of all `cases`, in order."""
    texts, scores = [], []
    for task, sentences in cases:
        for hyps in translate_nbest(sentences, **task):
            texts.append(hyps[0].text)
            scores.append(hyps[0].score)
    return texts, scores


@pytest.mark.parametrize("search", SEARCHES, ids=["greedy", "beam3"])
def test_onnx_matches_translator_and_tflite(family, search):
    from gnmt_tf.translator import SearchOptions

    options = SearchOptions(**search)
    texts, scores = _best(
        lambda s, **task: family.translator.translate_nbest(s, options,
                                                            **task),
        family.cases)
    for host in (family.onnx, family.tflite):
        got_texts, got_scores = _best(
            lambda s, **task: host.translate_nbest(s, **search, **task),
            family.cases)
        assert got_texts == texts
        assert got_scores == pytest.approx(scores, abs=1e-3)
    # The model says input-dependent things, so the equality above is not
    # trivial: distinct best hypotheses, by text or by score (with beam 3 and
    # a coverage penalty the tiny model can give one text for most inputs;
    # their scores still differ by sentence).
    assert len(set(zip(texts, np.round(scores, 2)))) > 2


@pytest.mark.parametrize("runtime", ["onnx", "tflite"])
def test_batches_search_as_one_sentence_at_a_time(family, runtime):
    """A batch (padded states, sentences leaving it as they stop) gives the
    translations of one sentence at a time."""
    host = getattr(family, runtime)
    search = dict(beam_size=3, length_penalty=0.6, coverage_penalty=0.2,
                  num_hypotheses=2)
    for task, sentences in family.cases:
        alone = host.translate_nbest(sentences, batch_size=1, **search,
                                     **task)
        batched = host.translate_nbest(sentences, batch_size=3, **search,
                                       **task)
        assert [[h.text for h in hyps] for hyps in batched] == [
            [h.text for h in hyps] for hyps in alone]
        assert [h.score for hyps in batched for h in hyps] == pytest.approx(
            [h.score for hyps in alone for h in hyps], abs=1e-4)
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        host.translate_nbest(["a dog"], batch_size=0, **family.cases[0][0])


@pytest.mark.parametrize("runtime", ["onnx", "tflite"])
def test_sentences_of_one_length_are_encoded_together(family, runtime):
    """Where the runtime's `encode` takes any batch (ONNX; the task-space
    Transformer's TFLite), a batch makes one `encode` call per source
    length, and every sentence is searched as when it is alone."""
    host = getattr(family, runtime)
    prefix, task = host.task_arrays(**family.cases[0][0])
    eos = host.eos_id
    sources = [prefix + ids + [eos] for ids in ([5, 6], [9], [7, 8])]
    calls = []
    encode = host.runtime.encode

    def counting(source_ids, task):
        calls.append(len(source_ids))
        return encode(source_ids, task)

    search = dict(beam_size=2, length_penalty=0.6, task=task)
    host.runtime.encode = counting
    try:
        together = host.search_batch(sources, **search)
    finally:
        del host.runtime.encode
    grouped = host.runtime.encode_batch_size is None
    assert grouped == (runtime == "onnx" or family.name == "task_space")
    assert sorted(calls) == ([1, 2] if grouped else [1, 1, 1])
    for source, pairs in zip(sources, together):
        alone = host.search_batch([source], **search)[0]
        assert [ids for ids, _ in pairs] == [ids for ids, _ in alone]
        assert [score for _, score in pairs] == pytest.approx(
            [score for _, score in alone], abs=1e-4)


def test_onnx_describes_itself_as_the_model(family):
    model = family.translator.model
    assert family.onnx.runtime.path == family.onnx_dir
    assert family.onnx.task_inputs() == tuple(model.task_inputs())
    assert family.onnx.fixed_task == (model.fixed_task or {})
    assert family.onnx.max_output_length == model.max_target_length
    if family.name == "task_space":
        assert family.onnx.max_source_length == model.max_target_length + 1
        with pytest.raises(ValueError, match="at most 16"):
            family.onnx.translate(["a dog runs in a big red park " * 3],
                                  **TS_CASES[0][0])
        with pytest.raises(ValueError, match="unknown language 'xx'"):
            family.onnx.translate(["a dog"], src_lang="xx", tgt_lang="fr")
    else:
        assert family.onnx.max_source_length is None


def _cli(argv, capsys):
    """`(exit status, stderr)` of `gnmt-tf translate ARGV`."""
    code = main(["translate"] + [str(a) for a in argv])
    return code, capsys.readouterr().err


def _assert_one_line_error(code, err, message):
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("gnmt-tf translate: error: ") and (
        message in lines[0]), err


def test_translate_cli(family, tmp_path, capsys):
    task, sentences = family.cases[0]
    source = tmp_path / "src.txt"
    source.write_text("".join(s + "\n" for s in sentences), encoding="utf-8")
    output = tmp_path / "hyp.txt"
    flags = [item for key, value in task.items()
             for item in ("--" + key.replace("_", "-"), value)]
    code, err = _cli(["--onnx", family.onnx_dir, *flags, "--beam-size", "2",
                      "-i", source, "-o", output], capsys)
    assert code == 0, err
    assert output.read_text(encoding="utf-8").splitlines() == (
        family.onnx.translate(sentences, beam_size=2, **task))


@pytest.mark.parametrize("argv, message", [
    (["--onnx", "{tmp}/missing"], "{tmp}/missing: No such file or directory"),
    (["--onnx", "{tmp}"], "is not an ONNX export: no encode.onnx"),
    (["--onnx", "{onnx}", "--model", "{onnx}"],
     "give one of --model, --tflite and --onnx, not --model and --onnx"),
    (["--onnx", "{onnx}", "--early-stopping", "exact"],
     "--onnx searches with --early-stopping gnmt only"),
])
def test_translate_cli_errors(argv, message, onnx_dir, tmp_path, capsys):
    names = dict(tmp=tmp_path, onnx=onnx_dir)
    code, err = _cli([a.format(**names) for a in argv], capsys)
    _assert_one_line_error(code, err, message.format(**names))


def test_translate_cli_task_errors(family, tmp_path, capsys):
    source = tmp_path / "src.txt"
    source.write_text("a dog\n")
    if family.name == "gnmt":
        flags, message = ["--src-lang", "fr"], "cannot honour --src-lang fr"
    else:
        flags, message = ["--src-lang", "en"], "--tgt-lang required"
    code, err = _cli(["--onnx", family.onnx_dir, *flags, "-i", source],
                     capsys)
    _assert_one_line_error(code, err, message)


def test_auto_batch_size_keeps_the_state_within_budget(family, monkeypatch):
    from gnmt_tf import host_translator

    host = family.tflite
    task = host.task_arrays(**family.cases[0][0])[1]
    per_sentence = host.state_bytes(task)
    assert per_sentence == sum(v.nbytes for v in host.runtime.encode(
        np.asarray([[host.eos_id] * 2], np.int32), task).values())
    monkeypatch.setattr(host_translator, "STATE_BUDGET_BYTES",
                        per_sentence * 4 * 3 + 1)
    assert host.auto_batch_size(4, task) == 3
    monkeypatch.setattr(host_translator, "STATE_BUDGET_BYTES", 1)
    assert host.auto_batch_size(4, task) == 1
    monkeypatch.setattr(host_translator, "STATE_BUDGET_BYTES", 2**40)
    assert host.auto_batch_size(4, task) == host_translator.MAX_BATCH_SIZE


def test_tflite_step_gathers_rows_as_given(family):
    """The TFLite runtime's step on `(state, rows)` is its step on the
    gathered state (it gathers straight into the interpreter's inputs),
    also when only the rows change between two calls."""
    host = family.tflite
    prefix, task = host.task_arrays(**family.cases[0][0])
    eos = host.eos_id
    state = host.runtime.encode(
        np.asarray([prefix + [5, 6, eos], prefix + [9, 7, eos]], np.int32)
        if host.runtime.encode_batch_size is None else
        np.asarray([prefix + [5, 6, eos]], np.int32), task)
    ids = np.asarray([5, 5, 5], np.int32)
    sentences = len(next(iter(state.values())))
    for picked in ([0, 0, sentences - 1], [sentences - 1, 0, 0]):
        rows = {name: np.asarray(picked) for name in state}
        log_probs, _, changed = host.runtime.step(ids, state, rows)
        want, _, want_changed = host.runtime.step(
            ids, {name: value[picked] for name, value in state.items()})
        np.testing.assert_array_equal(log_probs, want)
        assert changed.keys() == want_changed.keys()
        for name in changed:
            np.testing.assert_array_equal(changed[name], want_changed[name])
    if sentences > 1:  # the rows matter: the ids are the same
        assert not np.array_equal(log_probs[0], log_probs[2])

