"""The default engine (`gnmt_tf.search_engine`): a `Translator` compiles its
search with XLA where it can and searches the graph where it cannot, with
the same results; `gnmt-tf translate --model` caches the model's float32
TFLite export after a first run and translates the next runs through it,
without TensorFlow, to the same output.

The rest of the suite runs the graph engine (tests/conftest.py); these
tests set ``auto`` themselves."""

import os
import subprocess
import sys

import numpy as np
import pytest

from gnmt_tf import search_engine, tflite_cache
from gnmt_tf.export import tflite_entries
from gnmt_tf.model_dir import load_model
from gnmt_tf.translator import SearchOptions, Translator

TASK = dict(src_lang="en", tgt_lang="fr", tags=["caption"])
# Float32 scores of other kernels (XLA's fused loops, TFLite's) against
# TensorFlow's: sums of some 10-20 log-probabilities, each within a few
# float32 ulps of magnitude ~10 (1e-6 apiece), so 1e-3 leaves room.
SCORE_TOLERANCE = 1e-3


@pytest.fixture
def auto_engine(monkeypatch):
    monkeypatch.setenv(search_engine.ENGINE_ENV, "auto")


@pytest.fixture(scope="module")
def sources(multiway_dir):
    """Short training sentences of the tiny model (its vocabulary has 60
    pieces: other text is too long for it), and a blank line."""
    import gzip

    with gzip.open(multiway_dir / "train.en.gz", "rt", encoding="utf-8") as f:
        lines = [line.strip() for _, line in zip(range(40), f)]
    return sorted(lines, key=len)[:6] + [""]


def _nbest(translator, options, sources):
    return translator.translate_nbest(sources, options, **TASK)


def test_default_engine_reads_the_environment(monkeypatch):
    monkeypatch.delenv(search_engine.ENGINE_ENV, raising=False)
    assert search_engine.default_engine() == "auto"
    monkeypatch.setenv(search_engine.ENGINE_ENV, "graph")
    assert search_engine.default_engine() == "graph"
    monkeypatch.setenv(search_engine.ENGINE_ENV, "fast")
    with pytest.raises(ValueError, match="GNMT_TF_ENGINE='fast'.*auto"):
        search_engine.default_engine()


def test_auto_compiles_the_search_with_the_graph_search_results(
        auto_engine, ts_model_dir, sources):
    model, subwords, _ = load_model(ts_model_dir)
    chosen = Translator(model, subwords)
    assert chosen.jit_compile_search and chosen.compiles_search
    # The graph search it falls back to keeps its growing cache.
    assert chosen.growing_cache
    graph = Translator(model, subwords, jit_compile_search=False)
    assert not graph.compiles_search
    for options in (SearchOptions(beam_size=3, num_hypotheses=2),
                    SearchOptions(decoder="greedy")):
        got = _nbest(chosen, options, sources)
        want = _nbest(graph, options, sources)
        assert [[h.text for h in n] for n in got] == [
            [h.text for h in n] for n in want]
        np.testing.assert_allclose([h.score for n in got for h in n],
                                   [h.score for n in want for h in n],
                                   atol=SCORE_TOLERANCE)
        assert any(n[0].text for n in got)
    assert any(key[0] == "xla" for key in chosen._functions)


def test_auto_searches_the_graph_where_xla_cannot(auto_engine, monkeypatch,
                                                  ts_model_dir):
    model, subwords, _ = load_model(ts_model_dir)
    chosen = Translator(model, subwords)
    chosen.shortlist = object()  # as the CLI sets one, after construction
    assert chosen.jit_compile_search and not chosen.compiles_search
    assert not Translator(model, subwords, growing_cache=True).compiles_search
    assert not Translator(model, subwords,
                          jit_compile_step=True).compiles_search
    monkeypatch.setenv(search_engine.ENGINE_ENV, "graph")
    assert not Translator(model, subwords).compiles_search


def test_predictor_combinations_search_the_graph(auto_engine, ts_model_dir):
    from gnmt_tf.predictor_model import load_predictors

    model, subwords = load_predictors([ts_model_dir, ts_model_dir], None,
                                      None, None, "loglinear")
    assert not Translator(model, subwords).compiles_search


def test_fingerprint_follows_the_weights(ts_model_dir, tmp_path,
                                         monkeypatch):
    import shutil

    copy = tmp_path / "model"
    shutil.copytree(ts_model_dir, copy)
    assert tflite_cache.fingerprint(copy) == tflite_cache.fingerprint(
        ts_model_dir)
    newest = max((copy / "checkpoints").glob("*.data-*"))
    with open(newest, "ab") as f:
        f.write(b"\0")
    assert tflite_cache.fingerprint(copy) != tflite_cache.fingerprint(
        ts_model_dir)
    monkeypatch.setenv(tflite_cache.CACHE_ENV, "off")
    assert tflite_cache.cached(copy) is None
    with pytest.raises(ValueError, match="off"):
        tflite_entries.build(copy)


# What the second run reports: its output and whether TensorFlow loaded.
_RUN = """
import sys
from gnmt_tf.cli.main import main
status = main(sys.argv[1:])
print("TENSORFLOW", "tensorflow" in sys.modules, file=sys.stderr)
sys.exit(status)
"""


def _translate(model_dir, source, env, *flags):
    result = subprocess.run(
        [sys.executable, "-c", _RUN, "translate", "--model", str(model_dir),
         "--input", str(source), "--beam-size", "3", "--src-lang", "en",
         "--tgt-lang", "fr", "--tags", "caption", *flags],
        env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout, result.stderr


def test_translate_caches_the_export_and_then_skips_tensorflow(
        ts_model_dir, tmp_path, sources):
    env = dict(os.environ, GNMT_TF_ENGINE="auto",
               GNMT_TF_TFLITE_CACHE=str(tmp_path / "tflite"),
               GNMT_TF_XLA_CACHE=str(tmp_path / "xla"),
               TF_CPP_MIN_LOG_LEVEL="3")
    source = tmp_path / "in.txt"
    source.write_text("\n".join(sources) + "\n", encoding="utf-8")
    graph, _ = _translate(ts_model_dir, source, env, "--engine", "graph")
    assert not (tmp_path / "tflite").exists()  # graph: nothing cached
    first, log = _translate(ts_model_dir, source, env)
    assert "cached the float32 TFLite export" in log
    assert "TENSORFLOW True" in log
    assert tflite_cache.cached(ts_model_dir) is None  # not this process's
    entries = list((tmp_path / "tflite").iterdir())
    assert len(entries) == 1 and (entries[0] / tflite_cache.MODEL_FILE
                                  ).is_file()
    second, log = _translate(ts_model_dir, source, env)
    assert "TENSORFLOW False" in log and "cached" not in log
    assert first == second == graph
    assert any(line for line in first.splitlines())


def test_engine_flags_refuse_what_they_cannot_do(ts_model_dir, tmp_path,
                                                 capsys):
    from gnmt_tf.cli.main import main

    source = tmp_path / "in.txt"
    source.write_text("a dog .\n", encoding="utf-8")
    common = ["translate", "--input", str(source), "--src-lang", "en",
              "--tgt-lang", "fr"]
    for flags, message in (
            (["--model", str(ts_model_dir), "--engine", "tflite",
              "--decoder", "dfs"],
             "--engine tflite cannot be used with --decoder dfs"),
            (["--model", str(ts_model_dir), "--engine", "graph", "--xla"],
             "--xla is --engine xla"),
            (["--tflite", "x.tflite", "--engine", "xla"],
             "--engine needs --model")):
        assert main(common + flags) == 2
        assert message in capsys.readouterr().err


def test_a_shipped_export_is_used_only_while_it_matches(ts_model_dir,
                                                       tmp_path,
                                                       monkeypatch):
    import gzip
    import shutil

    copy = tmp_path / "model"
    shutil.copytree(ts_model_dir, copy)
    monkeypatch.setenv(tflite_cache.CACHE_ENV, str(tmp_path / "cache"))
    packed = tflite_entries.ship(copy)
    assert tflite_cache.shipped(copy) == packed
    assert not list(copy.glob(".tflite_float32-*"))  # staging cleaned up
    assert not (tmp_path / "cache").exists()  # shipping caches nothing
    path = tflite_cache.cached(copy)  # unpacked into the cache
    assert path.read_bytes() == gzip.decompress(packed.read_bytes())
    assert (path.parent / "spm.model").is_file()
    # With the whole searches a sentence translated alone runs in one call.
    from gnmt_tf.tflite_runtime import TFLiteRuntime

    assert TFLiteRuntime(path).search_beam_sizes == (
        tflite_cache.SEARCH_BEAM_SIZES) == (4, 5)
    assert tflite_entries.ship(copy) == packed  # replaced whole
    newest = max((copy / "checkpoints").glob("*.data-*"))
    with open(newest, "ab") as f:
        f.write(b"\0")
    assert tflite_cache.shipped(copy) is None  # stale: never used
    assert tflite_cache.cached(copy) is None
    monkeypatch.setenv(tflite_cache.CACHE_ENV, "off")
    assert tflite_cache.cached(ts_model_dir) is None


def test_the_shipped_transformer_carries_its_matching_export():
    from gnmt_tf.pretrained import locate

    model_dir = locate("multi30k-transformer")
    assert tflite_cache.shipped(model_dir) is not None, (
        "stale or missing: python -c 'from gnmt_tf.export import "
        f"tflite_entries; tflite_entries.ship(\"{model_dir}\")'")
