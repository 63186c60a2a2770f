import numpy as np
import pytest
import tensorflow as tf

from gnmt_tf.model_dir import load_model
from gnmt_tf.translator import SearchOptions, Translator


@pytest.fixture(scope="module")
def translator(tiny_model_dir):
    model, subwords, _ = load_model(tiny_model_dir)
    return Translator(model, subwords, max_source_length=40)


def test_order_empty_lines_and_batching(translator, toy_corpus):
    sources = [en for en, _ in toy_corpus[:7]]
    inputs = sources[:3] + ["", "   "] + sources[3:]
    batched = translator.translate(inputs, SearchOptions(beam_size=2), batch_size=2)
    one_by_one = [translator.translate([s], SearchOptions(beam_size=2))[0]
                  for s in inputs]
    assert batched == one_by_one
    assert batched[3] == "" and batched[4] == ""
    assert all(isinstance(t, str) for t in batched)


def test_nbest_sorted_and_greedy_equals_beam_one(translator, toy_corpus):
    sentence = toy_corpus[0][0]
    nbest = translator.translate_nbest([sentence], SearchOptions(
        beam_size=3, num_hypotheses=3, length_penalty=0.0))[0]
    scores = [h.score for h in nbest]
    assert len(nbest) == 3 and scores == sorted(scores, reverse=True)
    greedy = translator.translate([sentence], SearchOptions(beam_size=1))
    # Beam search with one beam and no penalties is greedy search.
    from gnmt_tf.decoding.beam_search import beam_search  # noqa: F401
    assert greedy == translator.translate(
        [sentence], SearchOptions(beam_size=1, length_penalty=0.0))


def test_output_length_is_bounded(translator):
    options = SearchOptions(beam_size=2, max_length_ratio=2.0)
    out = translator.search_fn(options)(__import__("tensorflow").constant(["A dog."]))
    text = out["translations"].numpy()[0, 0].decode()
    source_pieces = len(translator.subwords.encode(["A dog."])[0]) + 1
    assert len(translator.subwords.encode([text])[0]) <= 2 * source_pieces


def test_bad_inputs(translator):
    with pytest.raises(ValueError, match="input 2 has .* subwords; the limit is 40"):
        translator.translate(["A dog.", "A dog runs. " * 30])
    with pytest.raises(TypeError, match="input 1 is bytes"):
        translator.translate([b"A dog."])


@pytest.mark.parametrize("options, message", [
    (dict(beam_size=0), "beam_size must be an integer >= 1"),
    (dict(beam_size=2, num_hypotheses=3), r"num_hypotheses .* in \[1, 2\]"),
    (dict(length_penalty=float("nan")), "length_penalty must be a finite"),
    (dict(beam_width=0.0), "beam_width must be a finite number > 0"),
    (dict(early_stopping="never"), "early_stopping must be one of"),
])
def test_search_options_are_checked(options, message):
    with pytest.raises(ValueError, match=message):
        SearchOptions(**options)


def test_search_options_take_graph_penalties():
    alpha = tf.constant(0.6)
    assert SearchOptions(length_penalty=alpha).length_penalty is alpha


@pytest.mark.parametrize("batch_size", [0, -3])
def test_batch_size_below_one_is_refused(translator, batch_size):
    with pytest.raises(ValueError, match="batch_size must be an integer"):
        translator.translate(["A dog runs."], batch_size=batch_size)


_TRANSLATE_AROUND_SEEDING = """
import sys
import tf_keras
from gnmt_tf.translator import SearchOptions, Translator
translator = Translator.from_model_dir(sys.argv[1])
before = translator.translate(["A big dog runs."], SearchOptions(beam_size=2))
tf_keras.utils.set_random_seed(7)  # what every trainer does; clears kernels
after = translator.translate(["A big dog runs."], SearchOptions(beam_size=2))
print(before == after)
"""


def test_translator_survives_a_training_seeding_the_process(tiny_model_dir):
    # In a subprocess: clearing the kernel cache would also break the other
    # live TF Text resources of this test session.
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _TRANSLATE_AROUND_SEEDING,
                           str(tiny_model_dir)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "True"


def test_xla_compiled_step_translates_the_same(translator, tiny_model_dir,
                                               toy_corpus):
    model, subwords, _ = load_model(tiny_model_dir)
    compiled = Translator(model, subwords, max_source_length=40,
                          jit_compile_step=True)
    sources = [en for en, _ in toy_corpus[:6]]
    for options in (SearchOptions(beam_size=1),
                    SearchOptions(beam_size=3, coverage_penalty=0.2)):
        want = translator.translate_nbest(sources, options, batch_size=4)
        got = compiled.translate_nbest(sources, options, batch_size=4)
        assert [h[0].text for h in got] == [h[0].text for h in want]
        assert [h[0].score for h in got] == pytest.approx(
            [h[0].score for h in want], abs=1e-4)


# Scores of the same float32 model computed two ways (another cache
# layout, XLA's fused and reordered sums) agree to ~1,000 float32 ulps,
# relative (abs for scores near 0): rounding through a few layers of
# 256-wide sums, whatever the machine's SIMD width.
SCORE_TOLERANCE = 1024 * float(np.finfo(np.float32).eps)
# Greedy, and a beam returning two hypotheses with a coverage penalty.
NBEST_OPTIONS = (SearchOptions(beam_size=1),
                 SearchOptions(beam_size=3, num_hypotheses=2,
                               coverage_penalty=0.2))


def _assert_same_nbest(want_translator, got_translator, sources, task):
    """Both translators give `sources` the same n-best texts and scores
    with each of `NBEST_OPTIONS`; returns the last n-best lists."""
    for options in NBEST_OPTIONS:
        want = want_translator.translate_nbest(sources, options, 4, **task)
        got = got_translator.translate_nbest(sources, options, 4, **task)
        assert [[h.text for h in n] for n in got] == \
            [[h.text for h in n] for n in want]
        assert [h.score for n in got for h in n] == pytest.approx(
            [h.score for n in want for h in n], rel=SCORE_TOLERANCE,
            abs=SCORE_TOLERANCE)
    return want


def test_growing_cache_is_the_transformer_default_and_translates_the_same(
        ts_model_dir, multiway_dir):
    """The task-space Transformer searches with a growing KV cache by
    default; the fixed-size cache gives the same n-best lists."""
    import gzip

    model, subwords, _ = load_model(ts_model_dir)
    growing = Translator(model, subwords)
    fixed = Translator(model, subwords, growing_cache=False)
    assert growing.growing_cache and not fixed.growing_cache
    with gzip.open(multiway_dir / "train.en.gz", "rt") as lines:
        sources = [next(lines).strip() for _ in range(10)]
    task = dict(src_lang="en", tgt_lang="fr", tags=["caption"])
    want = _assert_same_nbest(fixed, growing, sources, task)
    assert any(n[0].text for n in want)  # a real output, not all empty


def test_growing_cache_needs_a_model_with_one_and_no_xla(tiny_model_dir,
                                                         ts_model_dir):
    gnmt, gnmt_subwords, _ = load_model(tiny_model_dir)
    assert not Translator(gnmt, gnmt_subwords).growing_cache
    with pytest.raises(ValueError, match="no growing cache"):
        Translator(gnmt, gnmt_subwords, growing_cache=True)
    model, subwords, _ = load_model(ts_model_dir)
    assert not Translator(model, subwords,
                          jit_compile_step=True).growing_cache
    with pytest.raises(ValueError, match="fixed-size cache"):
        Translator(model, subwords, growing_cache=True, jit_compile_step=True)


def _first_lines(path, count):
    import gzip

    with gzip.open(path, "rt") as lines:
        return [next(lines).strip() for _ in range(count)]


@pytest.mark.parametrize("name", ["gnmt", "transformer"])
def test_xla_compiled_search_translates_the_same(name, tiny_model_dir,
                                                 ts_model_dir, multiway_dir,
                                                 toy_corpus):
    """The whole search compiled with XLA (fixed shapes from the padded
    source width) gives the plain search's n-best lists."""
    if name == "gnmt":
        model, subwords, _ = load_model(tiny_model_dir)
        sources, task = [en for en, _ in toy_corpus[:8]], {}
    else:
        model, subwords, _ = load_model(ts_model_dir)
        sources = _first_lines(multiway_dir / "train.en.gz", 8)
        task = dict(src_lang="en", tgt_lang="fr", tags=["caption"])
    plain = Translator(model, subwords)
    compiled = Translator(model, subwords, jit_compile_search=True)
    assert not compiled.growing_cache
    want = _assert_same_nbest(plain, compiled, sources, task)
    assert any(n[0].text for n in want)
    assert ("xla", NBEST_OPTIONS[-1]) in compiled._functions


def test_xla_compiled_search_pads_the_source_width(ts_model_dir):
    from gnmt_tf.translator import XLA_WIDTH_MULTIPLE

    model, subwords, _ = load_model(ts_model_dir)
    compiled = Translator(model, subwords, jit_compile_search=True)
    options = SearchOptions(beam_size=2, max_length_ratio=1.5)
    ids, lengths = compiled.tokenize(tf.constant(["A dog runs."]))
    task = {t.name: tf.constant([v], tf.int32) for t, v in zip(
        compiled.task_inputs, compiled.task_ids(
            src_lang="en", tgt_lang="fr", tags=["caption"]).values())}
    result = compiled.search_ids(ids, lengths, options, **task)
    width = -(-ids.shape[1] // XLA_WIDTH_MULTIPLE) * XLA_WIDTH_MULTIPLE
    assert width > ids.shape[1] or ids.shape[1] % XLA_WIDTH_MULTIPLE == 0
    # The buffers hold the longest output the padded width allows.
    assert result.ids.shape[2] == min(int(np.ceil(1.5 * width)),
                                      model.max_target_length or np.inf)
    assert result.lengths.numpy().max() <= np.ceil(1.5 * int(lengths[0]))


def test_xla_compiled_search_refuses_what_it_cannot_compile(ts_model_dir):
    model, subwords, _ = load_model(ts_model_dir)
    with pytest.raises(ValueError, match="fixed-size cache"):
        Translator(model, subwords, jit_compile_search=True,
                   growing_cache=True)
    with pytest.raises(ValueError, match="compiles the step too"):
        Translator(model, subwords, jit_compile_search=True,
                   jit_compile_step=True)
    compiled = Translator(model, subwords, jit_compile_search=True)
    compiled.shortlist = object()  # as the CLI sets one, after construction
    ids, lengths = compiled.tokenize(tf.constant(["A dog."]))
    with pytest.raises(ValueError, match="takes no shortlist"):
        compiled.search_ids(ids, lengths, SearchOptions())
