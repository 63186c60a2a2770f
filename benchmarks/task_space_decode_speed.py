"""Benchmark: beam-search decoding speed of the task-space Transformer on CPU.

Target tokens per second of `transformer_small` (random weights) with beam 4
at batch 32 and batch 1, decoding a fixed number of tokens per sentence (no
end token can be produced, no early stopping), three ways:

- ours (the default engine, `gnmt_tf.search_engine`, for a model that
  carries its float32 TFLite export, as the shipped ones do): what
  `Translator.from_model_dir` and `gnmt-tf translate --model` run, the
  export (with its search signatures, as shipped) through the host
  search at the default settings (`gnmt_tf.cpu_settings`; no best-of
  thread counts): at batch 1 one call of the whole search on an
  interpreter of `tflite_threads()` threads, at larger batches the batch
  split between `tflite_workers()` single-threaded interpreters;
- ours, XLA default (``xla_default``; the default engine for a model
  without an export): the search compiled whole with XLA as `Translator`
  runs it then: the source padded up to a multiple of
  `XLA_WIDTH_MULTIPLE` and a fixed-size KV cache for `max_length_ratio`
  (2) times that width, of which the fixed output length is used; its
  warm-up call compiles, and is not timed;
- ours, graph: `gnmt_tf.decoding.beam_search` in one `tf.function`,
  driving `TaskSpaceTransformer.step` with its KV cache, growing by a
  position a step (the default before, and `--engine graph` now);
- ours, fixed cache: the same with the fixed-size KV cache (the TFLite and
  XLA layout) of exactly the output length: the old default's best case,
  since `Translator` sized it for `max_length_ratio` (2) times the source;
- ours, XLA search: the compiled search with buffers of exactly the
  source and output lengths (the best case of the default), compiled
  whole with XLA (`jit_compile=True`, every shape fixed; what
  `Translator(..., jit_compile_search=True)` and `gnmt-tf translate --xla`
  run); its warm-up call compiles, and is not timed;
- ours, no cache: the same search, but every step re-runs the whole
  teacher-forced decoder over the prefix generated so far (what a
  Transformer without incremental decoding does);
- CTranslate2: the SAME weights converted with
  `gnmt_tf.models.task_space.ctranslate2_converter` (the task vector folded into the
  position tables; per-token log-probabilities agree with ours to 1e-6),
  beam 4, `min_decoding_length = max_decoding_length` to fix the length.

- ours, TFLite float32: our TFLite export (`gnmt_tf.export.tflite.convert`, the
  default shapes: any source length, growing KV cache), its `encode` +
  `decode_step` driven by the batched host search
  (`gnmt_tf.decoding.host_beam_search.beam_search_batch`), what `gnmt-tf translate
  --tflite` runs, and `gnmt-tf translate --model` by default once the
  model's export is cached (`gnmt_tf.tflite_cache`);
- ours, TFLite whole search (``tflite_*_search``, batch 1 only): the same
  export's search signature (`gnmt_tf.export.search_signature`), one
  sentence's encoder and beam search in one interpreter call, which the
  host translator uses for a sentence translated alone;

- ours, bfloat16 (`--bfloat16`): the in-graph search on the same weights
  computing in bfloat16 (`--precision mixed_bfloat16`); CTranslate2 offers
  no bfloat16 on CPU, so this is set against its float32;

and, for 8-bit weights, CTranslate2 with ``compute_type="int8"`` against
our TFLite export with int8 weights (``dynamic_range``: the same weights,
no QAT ranges needed; the same host search).

CTranslate2 also runs a batch on parallel workers (``inter_threads``), each
translating its own sub-batch on its own threads; on two cores, two workers
of one thread each on half the batch are much faster than one worker on
both (its intra-op threads gain little at this model size). The
``ctranslate2_two_workers`` and ``ctranslate2_int8_two_workers`` settings
time that (batches of at least 2, a thread count of 2 only), and the
``*_over_ctranslate2*_two_workers_*`` ratios set ours against it: the
one-worker ratios alone understate CTranslate2.

Tokens/s counts the best hypothesis' tokens: batch * output length / wall
time of one call (median of the timed repeats, after one warm-up call).
Each CTranslate2 setting and thread count is timed in a process of its
own (`_child_ctranslate2`: beside the other settings' engines, its
two-thread engine ran several times slower). Both engines get the same
number of threads; with `--thread-counts 1,2`
each engine is timed at each count and its best is reported (the counts
behind each figure are in ``best_threads``). The CPU's SIMD flags
(AVX2, AVX-512, AMX, VNNI) are recorded with the figures.

    python benchmarks/task_space_decode_speed.py [--thread-counts 1,2] \\
        [--source-length 20] [--output-length 20] [--repeats 3] [--bfloat16] \\
        [--rounds 1] [--only xla_search,ctranslate2,...]

With `--rounds N` every setting is timed N times, the settings taking turns
(every other round in reverse order), and each key reports its median
round; ``rounds`` keeps every round's figure and ``ratio_rounds`` every
round's ratio of the two engines, measured minutes apart rather than a
whole run apart. `--only` times some of the settings (`SETTINGS`).

Writes `benchmarks/results/task_space_decode_speed.json`, keeping the
``earlier*`` entries already there (`--keep-previous-as NAME` also files
the previous run's figures under NAME).
"""

import argparse
import json
import os
import pathlib
import platform
import shlex
import statistics
import sys
import tempfile
import time

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

import gnmt_tf  # noqa: E402,F401  (TF_USE_LEGACY_KERAS before TensorFlow)

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras as keras  # noqa: E402

from gnmt_tf.decoding.beam_search import beam_search  # noqa: E402
from gnmt_tf.decoding.segmented_loop import segment_lengths  # noqa: E402
from gnmt_tf.translator import (XLA_WIDTH_MULTIPLE, SearchOptions,  # noqa: E402
                                pad_width)
from gnmt_tf import cpu_settings  # noqa: E402
from gnmt_tf.flags.arg_types import number, positive_int  # noqa: E402
from gnmt_tf.io_utils import write_text_atomic  # noqa: E402
from results_file import with_earlier  # noqa: E402  (this script's folder)
from cpu_flags import cpu_model, simd_flags  # noqa: E402
from cpu_load import BUSY_WARNING, OtherLoad  # noqa: E402
from gnmt_tf.models.task_space.config import TransformerConfig  # noqa: E402
from gnmt_tf.models.task_space.task_space_translation_model import (  # noqa: E402
                                                                    TaskSpaceTranslationModel)

RESULT = REPO_ROOT / "benchmarks" / "results" / "task_space_decode_speed.json"
BEAM = 4
TASK = ("en", "de", ("caption",))
NO_END_ID = -1  # never produced: every hypothesis runs to the fixed length
DEFAULT_OPTIONS = SearchOptions()  # its max_length_ratio sizes the buffers
# What `--only` can select, in the order they run within a round.
SETTINGS = ("ours", "xla_default", "graph", "fixed_cache", "xla_search",
            "bfloat16", "ctranslate2",
            "ctranslate2_int8", "tflite_float32", "tflite_int8_weights",
            "tflite_float32_search", "tflite_int8_weights_search",
            "tflite_float32_workers", "tflite_int8_weights_workers",
            "nocache", "ctranslate2_two_workers",
            "ctranslate2_int8_two_workers")
# CTranslate2 settings that split a batch between this many workers of one
# thread each (timed at a thread count of 2 only).
TWO_WORKERS = 2


def _median(speeds):
    """The median of a key's rounds (None where no round measured it)."""
    speeds = [s for s in speeds if s is not None]
    return statistics.median(speeds) if speeds else None


def _inputs(config, batch, source_length, seed):
    rng = np.random.default_rng(seed)
    ids = rng.integers(4, config.vocabulary_size, (batch, source_length - 1))
    source = np.concatenate([ids, np.full((batch, 1), config.eos_id)], 1)
    task = config.task_features(*TASK)
    return (tf.constant(source, tf.int32),
            tf.fill([batch], task["src_lang"]),
            tf.fill([batch], task["tgt_lang"]),
            tf.constant([task["tags"]] * batch, tf.int32))


def no_cache_step_fn(model, max_length):
    """`(initial_state, step)` that recompute the decoder over the prefix."""
    heads = model.config.num_heads

    def initial_state(encoded):
        n = tf.shape(encoded["memory"])[0]
        return dict(encoded, time=tf.zeros([n], tf.int32),
                    prefix=tf.zeros([n, max_length], tf.int32))

    def step(ids, state):
        time_ = state["time"]
        write = tf.equal(tf.range(max_length)[None, :], time_[:, None])
        prefix = tf.where(write, ids[:, None], state["prefix"])
        length = tf.reduce_max(time_) + 1  # all rows are at the same step
        encoded = {k: v for k, v in state.items()
                   if k not in ("time", "prefix")}
        logits, attention = model.decode(prefix[:, :length], encoded)
        log_probs = tf.nn.log_softmax(logits[:, length - 1])
        last = tf.reduce_mean(attention[:, -heads:, length - 1, :], axis=1)
        return log_probs, last, dict(state, time=time_ + 1, prefix=prefix)

    return initial_state, step


CACHES = ("growing", "fixed", "none", "xla")


def ours_fn(model, output_length, cache="growing"):
    """`cache`: growing, fixed or none (the graph search), xla (compiled,
    exact buffers) or default (compiled, `Translator`'s buffers)."""
    def search(source_ids, src_lang, tgt_lang, tags):
        if cache == "default":
            return default_search(source_ids, src_lang, tgt_lang, tags)
        encoded = model.encode(source_ids, src_lang, tgt_lang, tags)
        if cache != "none":
            state = model.initial_state(encoded, output_length,
                                        growing_cache=cache == "growing")
            step = model.step
        else:
            initial_state, step = no_cache_step_fn(model, output_length)
            state = initial_state(encoded)
        batch = tf.shape(source_ids)[0]
        shapes = ({"max_time": output_length,
                   "attention_width": tf.shape(source_ids)[1]}
                  if cache == "xla" else {})
        result = beam_search(
            step, state, tf.fill([batch], model.config.bos_id), NO_END_ID,
            BEAM, output_length, early_stopping="none", **shapes)
        return result.ids[:, 0], result.lengths[:, 0]

    def default_search(source_ids, src_lang, tgt_lang, tags):
        # As Translator(...).search_ids with its default engine: the width
        # padded to a bucket, the buffers sized from it, the KV cache grown
        # in segments.
        source_ids = pad_width(source_ids, XLA_WIDTH_MULTIPLE)
        width = tf.shape(source_ids)[1]
        max_time = tf.cast(tf.math.ceil(
            DEFAULT_OPTIONS.max_length_ratio * tf.cast(width, tf.float32)),
            tf.int32)
        segments = segment_lengths(max_time)
        encoded = model.encode(source_ids, src_lang, tgt_lang, tags)
        state = model.initial_state(encoded, segments[0])
        result = beam_search(
            model.step, state, tf.fill([tf.shape(source_ids)[0]],
                                       model.config.bos_id), NO_END_ID,
            BEAM, output_length, early_stopping="none", max_time=max_time,
            attention_width=width, segments=segments,
            resize_state=model.resize_cache)
        return result.ids[:, 0, :output_length], result.lengths[:, 0]

    if cache in ("xla", "default"):
        def compiled(*inputs):
            with model.compiled_search_context():
                return search(*inputs)

        return tf.function(compiled, autograph=False, jit_compile=True)
    return tf.function(search, autograph=False)


def _time(call, repeats):
    call()  # warm-up (tracing, allocation)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bfloat16_copy(model):
    """The same weights computing in bfloat16 (`precision=mixed_bfloat16`,
    as `gnmt-tf translate --precision mixed_bfloat16` loads them)."""
    mixed = TaskSpaceTranslationModel(model.config, dtype="mixed_bfloat16")
    mixed(mixed.dummy_inputs())
    mixed.set_weights(model.get_weights())
    return mixed


def bench_ours(model, batch, args, cache):
    """`cache`: growing, fixed, none, or bfloat16 (growing, bf16 compute)."""
    if cache == "bfloat16":
        model, cache = bfloat16_copy(model), "growing"
    inputs = _inputs(model.config, batch, args.source_length, seed=batch)
    function = ours_fn(model, args.output_length, cache)
    ids, lengths = function(*inputs)
    assert np.all(lengths.numpy() == args.output_length), lengths
    repeats = args.repeats if batch > 1 else args.repeats * 3
    seconds = _time(lambda: [t.numpy() for t in function(*inputs)], repeats)
    return batch * args.output_length / seconds


def ctranslate2_vocabulary(config):
    """The token strings our ids stand for in the converted model."""
    return ["<pad>", "<unk>", "<s>", "</s>"] + [
        f"t{i}" for i in range(4, config.vocabulary_size)]


def convert_ctranslate2(model, directory):
    """`(directory, version)`: `model` converted for CTranslate2, or
    `(None, why)` where CTranslate2 is not installed."""
    try:
        import ctranslate2
        from gnmt_tf.models.task_space.ctranslate2_converter import (
                                                                     TaskSpaceCTranslate2Converter)
    except ImportError as e:
        print(f"CTranslate2 unavailable: {e}", file=sys.stderr)
        return None, str(e)
    converter = TaskSpaceCTranslate2Converter(
        model, ctranslate2_vocabulary(model.config), *TASK, max_positions=512)
    converter.convert(str(directory), force=True)
    return pathlib.Path(directory), f"ctranslate2 {ctranslate2.__version__}"


def load_ctranslate2(directory, config, threads, compute_type="default",
                     workers=1):
    """An engine for `bench_ctranslate2`: the converted model in
    `directory` on `threads` threads, split between `workers`."""
    import ctranslate2

    translator = ctranslate2.Translator(
        str(directory), device="cpu", inter_threads=workers,
        intra_threads=threads // workers, compute_type=compute_type)
    return translator, ctranslate2_vocabulary(config), workers


def bench_ctranslate2(engine, config, batch, args):
    """Target tokens/s of CTranslate2; an engine of W workers gets the
    batch in W sub-batches (`max_batch_size`), which it runs in parallel."""
    translator, vocabulary, workers = engine
    source_ids = _inputs(config, batch, args.source_length,
                         seed=batch)[0].numpy()
    source = [[vocabulary[i] for i in row] for row in source_ids]

    def call():
        return translator.translate_batch(
            source, beam_size=BEAM, max_decoding_length=args.output_length,
            min_decoding_length=args.output_length,
            max_batch_size=-(-batch // workers))

    lengths = {len(r.hypotheses[0]) for r in call()}
    assert lengths == {args.output_length}, lengths
    repeats = args.repeats if batch > 1 else args.repeats * 3
    return batch * args.output_length / _time(call, repeats)


def build_tflite(model, directory, quantization, whole_search=False):
    """The path of our TFLite export of `model` (`gnmt_tf.export.tflite.convert`,
    default shapes; with `whole_search`, also the search signature of beam
    `BEAM`). The host loop is timed on a file without it, as `export
    tflite` writes by default."""
    from gnmt_tf.export.tflite import convert

    suffix = "_search" if whole_search else ""
    path = pathlib.Path(directory) / f"model_{quantization}{suffix}.tflite"
    path.write_bytes(convert(model, quantization, search_beam_sizes=(
        [BEAM] if whole_search else [])))
    return path


def bench_tflite(path, model, batch, args, threads, whole_search=False,
                 workers=False):
    """Target tokens/s of the host search over a TFLite export (with
    `whole_search`, of its search signature, a sentence at a time; with
    `workers`, the batch split between `threads` interpreters of one
    thread each, `gnmt_tf.host_workers`, as `HostTranslator` does)."""
    from gnmt_tf.decoding.host_beam_search import beam_search_batch
    from gnmt_tf.host_translator import encode_sources
    from gnmt_tf.host_workers import RuntimeWorkers
    from gnmt_tf.tflite_runtime import TFLiteRuntime

    runtime = TFLiteRuntime(path, 1 if workers else threads)
    pool = (RuntimeWorkers(lambda: TFLiteRuntime(path, 1), threads)
            if workers else None)
    source, src_lang, tgt_lang, tags = (
        t.numpy() for t in _inputs(model.config, batch, args.source_length,
                                   seed=batch))
    task = {"src_lang": src_lang[:1], "tgt_lang": tgt_lang[:1],
            "tags": tags[:1]}
    task = {name: value for name, value in task.items()
            if name in runtime.encode_inputs}

    def host_loop(runtime, rows):
        state = encode_sources(runtime, rows, task)
        return beam_search_batch(
            runtime.step, state, [args.source_length] * len(rows),
            model.config.bos_id, NO_END_ID, args.output_length,
            beam_size=BEAM, length_penalty=0.0,
            step_gathers=runtime.step_gathers)

    def call():
        if whole_search:
            return [[runtime.search(row[None], task, args.output_length,
                                    BEAM, length_penalty=0.0)]
                    for row in source]
        if pool is not None:
            return pool.map(host_loop, list(source))
        return host_loop(runtime, source)

    lengths = {len(pairs[0][0]) for pairs in call()}
    assert lengths == {args.output_length}, lengths
    repeats = args.repeats if batch > 1 else args.repeats * 3
    return batch * args.output_length / _time(call, repeats)


# (our setting, CTranslate2's one-worker setting, its two-worker one): the
# ratios the results give and the rows of their side-by-side table.
SIDE_BY_SIDE = (("ours", "ctranslate2", "ctranslate2_two_workers"),
                ("ours_xla_default", "ctranslate2", "ctranslate2_two_workers"),
                ("ours_xla_search", "ctranslate2", "ctranslate2_two_workers"),
                ("ours_tflite_float32", "ctranslate2",
                 "ctranslate2_two_workers"),
                ("ours_tflite_int8_weights", "ctranslate2_int8",
                 "ctranslate2_int8_two_workers"),
                ("ours_tflite_float32_search", "ctranslate2",
                 "ctranslate2_two_workers"),
                ("ours_tflite_int8_weights_search", "ctranslate2_int8",
                 "ctranslate2_int8_two_workers"),
                ("ours_tflite_float32_workers", "ctranslate2",
                 "ctranslate2_two_workers"),
                ("ours_tflite_int8_weights_workers", "ctranslate2_int8",
                 "ctranslate2_int8_two_workers"))


def side_by_side(results):
    """`{"<our setting> batch <B>": {ours, CTranslate2 with one worker, the
    ratio, and the same with two workers}}` (tok/s, ours over
    CTranslate2), a row per setting and batch size in `results`: the
    comparison as one table in the results doc."""
    rows = {}
    for batch in sorted({int(key.rsplit("batch", 1)[1]) for key in results
                         if key.startswith("ours_") and "_over_" not in key
                         and key.rsplit("batch", 1)[-1].isdigit()},
                        reverse=True):
        key = f"beam{BEAM}_batch{batch}"
        for ours, one, two in SIDE_BY_SIDE:
            mine = results.get(f"{ours}_{key}")
            if not mine:
                continue
            row = {"ours_tok_s": round(mine, 1)}
            for label, name in (("one_worker", one), ("two_workers", two)):
                theirs = results.get(f"{name}_{key}")
                if theirs:
                    row[f"ctranslate2_{label}_tok_s"] = round(theirs, 1)
                    row[f"over_{label}"] = round(mine / theirs, 3)
            rows[f"{ours[len('ours_'):] or 'default'} batch {batch}"] = row
    return rows


def _child_ours(args, batch, cache, threads):
    """`bench_ours` in a fresh process with `threads` TensorFlow threads
    (the same random weights: the same seed and preset)."""
    return _run_child(args, ["--child-ours", f"{batch},{cache},{threads}"])


def _child_ctranslate2(args, directory, compute_type, threads, workers,
                       batch):
    """`bench_ctranslate2` in a fresh process, its engine alone in it.

    Why: in one process with the other settings' engines, CTranslate2's
    two-thread engine ran at batch 1 up to 2.3x slower than its one-thread
    engine, and 5x slower than in a process of its own (245 against 1,270-
    1,430 tok/s on a 2-core AMD EPYC), a handicap that is the benchmark's,
    not CTranslate2's. Ours at a second thread count runs in a child
    process too (`_child_ours`)."""
    return _run_child(args, ["--child-ctranslate2", ",".join(
        str(v) for v in (directory, compute_type, threads, workers,
                         batch))])


def _run_child(args, child_flags):
    """Runs this script with `child_flags` and the shared flags; returns
    the tokens/s its RESULT line reports."""
    import subprocess

    argv = [sys.executable, __file__, *child_flags,
            "--preset", args.preset,
            "--source-length", str(args.source_length),
            "--output-length", str(args.output_length),
            "--repeats", str(args.repeats)]
    process = subprocess.run(argv, capture_output=True, text=True,
                             env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)))
    lines = [line for line in process.stdout.splitlines()
             if line.startswith("RESULT ")]
    if process.returncode or not lines:
        raise RuntimeError(process.stderr[-1000:])
    return float(lines[-1].split()[1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--preset", default="transformer_small")
    parser.add_argument("--thread-counts", default="1,2",
                        help="each engine's best over these thread counts")
    parser.add_argument("--source-length",
                        type=number(integer=True, minimum=2), default=20,
                        help="source tokens per sentence, EOS included")
    parser.add_argument("--output-length", type=positive_int, default=20,
                        help="target tokens decoded per sentence")
    parser.add_argument("--repeats", type=positive_int, default=3,
                        help="timed calls at batch 32 (x3 at batch 1)")
    parser.add_argument("--batch-sizes", default="32,1")
    parser.add_argument("--child-ctranslate2", default=None,
                        help=argparse.SUPPRESS)
    parser.add_argument("--child-ours", default=None,
                        help=argparse.SUPPRESS)  # BATCH,CACHE,THREADS
    parser.add_argument("--skip-no-cache", action="store_true",
                        help="leave out the decoder without a KV cache")
    parser.add_argument("--bfloat16", action="store_true",
                        help="also time ours computing in bfloat16 "
                             "(ours_bfloat16_*; CTranslate2 has no bfloat16 "
                             "on CPU)")
    parser.add_argument("--rounds", type=positive_int, default=1,
                        help="time every setting this many times, the "
                             "settings taking turns; report each key's "
                             "median round and every round's ratios")
    parser.add_argument("--only", default=None,
                        help="comma-separated settings to time (default: "
                             "all): " + ",".join(SETTINGS))
    parser.add_argument("--output", default=str(RESULT))
    parser.add_argument("--keep-previous-as", default=None,
                        help="file the output's previous figures under this "
                             "key (e.g. earlier_fixed_shapes_tflite)")
    args = parser.parse_args(argv)

    counts = [int(t) for t in args.thread_counts.split(",")]
    if args.child_ours:  # one of `_child_ours`' processes
        batch, cache, threads = args.child_ours.split(",")
        batch, threads = int(batch), int(threads)
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)
        keras.utils.set_random_seed(0)  # Python's too: Keras' initializers
        model = TaskSpaceTranslationModel.from_preset(args.preset,
                                                      dropout=0.0)
        print(f"RESULT {bench_ours(model, batch, args, cache)}")
        return 0
    if args.child_ctranslate2:  # one of `_child_ctranslate2`'s processes
        directory, compute_type, threads, workers, batch = (
            args.child_ctranslate2.split(","))
        # The inputs need the preset's vocabulary and end id only; the
        # weights are in `directory`.
        config = TransformerConfig.from_preset(args.preset)
        engine = load_ctranslate2(directory, config, int(threads),
                                  compute_type, int(workers))
        print(f"RESULT {bench_ctranslate2(engine, config, int(batch), args)}")
        return 0
    tf.config.threading.set_intra_op_parallelism_threads(counts[0])
    tf.config.threading.set_inter_op_parallelism_threads(counts[0])
    keras.utils.set_random_seed(0)  # the same weights in every process
    model = TaskSpaceTranslationModel.from_preset(args.preset, dropout=0.0)
    only = set(args.only.split(",")) if args.only else None
    if only and not only <= set(SETTINGS):
        parser.error(f"--only: unknown settings "
                     f"{sorted(only - set(SETTINGS))}; known: {SETTINGS}")
    wanted = [name for name in SETTINGS if not only or name in only]
    if args.skip_no_cache and "nocache" in wanted:
        wanted.remove("nocache")
    if not args.bfloat16 and "bfloat16" in wanted:
        wanted.remove("bfloat16")
    rounds, threads_used = {}, {}
    other_load = []  # per round: (other processes' CPU share, steal share)

    def best(key, measure, thread_counts=None):
        """Runs `measure(threads)` at each count; files the best."""
        speeds = {}
        for threads in thread_counts or counts:
            try:
                speeds[threads] = measure(threads)
            except Exception as e:  # noqa: BLE001  (reported in the JSON)
                print(f"{key} threads {threads}: {e}", file=sys.stderr)
        if not speeds:
            rounds.setdefault(key, []).append(None)
            return
        threads = max(speeds, key=speeds.get)
        rounds.setdefault(key, []).append(speeds[threads])
        threads_used.setdefault(key, []).append(threads)
        print(f"{key}: {speeds[threads]:.1f} tok/s ({threads} threads; "
              f"all: {speeds})", flush=True)

    def ours(batch, cache):
        def measure(threads):
            # TensorFlow fixes its pools at start-up: one thread count
            # per process, so other counts run in a child process.
            if threads == counts[0]:
                return bench_ours(model, batch, args, cache)
            return _child_ours(args, batch, cache, threads)
        return measure

    engine_names = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        converted = None
        if any(name.startswith("ctranslate2") for name in wanted):
            converted, engine_name = convert_ctranslate2(model, tmp / "m")
            engine_names = {"default": engine_name, "int8": engine_name}

        def default_path(path, batch):
            """`(measure, [its one thread count])`: the host search as
            `HostTranslator.from_tflite(path)` runs a batch by default."""
            workers = cpu_settings.tflite_workers()
            if batch == 1 or workers == 1:
                return (lambda threads: bench_tflite(
                    path, model, batch, args, threads,
                    whole_search=batch == 1),
                        [cpu_settings.tflite_threads()])
            return (lambda threads: bench_tflite(
                path, model, batch, args, threads, workers=True),
                    [workers])

        def ctranslate2_run(compute_type, batch, workers=1):
            return lambda threads: _child_ctranslate2(
                args, converted, compute_type, threads, workers, batch)
        tflite_paths = {}  # setting name ("tflite_float32_search") -> file
        for quantization, name in (("float32", "tflite_float32"),
                                   ("dynamic_range", "tflite_int8_weights")):
            # "ours" runs the float32 export as shipped: with the search.
            for setting in (name, f"{name}_search", f"{name}_workers") + (
                    ("ours",) if quantization == "float32" else ()):
                if setting not in wanted:
                    continue
                try:
                    if setting.endswith("_workers") and name in tflite_paths:
                        # The host loop's file.
                        tflite_paths[setting] = tflite_paths[name]
                        continue
                    whole = setting.endswith("_search") or setting == "ours"
                    reuse = f"{name}_search" if whole else name
                    tflite_paths[setting] = tflite_paths.get(
                        reuse) or build_tflite(model, tmp, quantization,
                                               whole_search=whole)
                except Exception as e:  # noqa: BLE001  (reported in JSON)
                    print(f"TFLite {quantization} export failed: {e}",
                          file=sys.stderr)
        caches = {"xla_default": "default", "graph": "growing",
                  "fixed_cache": "fixed",
                  "xla_search": "xla", "bfloat16": "bfloat16",
                  "nocache": "none"}
        settings = []  # (key, measure[, thread counts]), SETTINGS order
        for batch in (int(b) for b in args.batch_sizes.split(",")):
            key = f"beam{BEAM}_batch{batch}"
            for name in wanted:
                if name == "ours":
                    if name in tflite_paths:
                        settings.append((f"ours_{key}",) + default_path(
                            tflite_paths[name], batch))
                elif name in caches:
                    settings.append((f"ours_{name}_{key}",
                                     ours(batch, caches[name])))
                elif name.endswith("_two_workers"):
                    compute_type = "int8" if "int8" in name else "default"
                    if (converted is None or batch < TWO_WORKERS
                            or TWO_WORKERS not in counts):
                        continue
                    settings.append((f"{name}_{key}", ctranslate2_run(
                        compute_type, batch, TWO_WORKERS), [TWO_WORKERS]))
                elif name.startswith("ctranslate2"):
                    compute_type = "int8" if name.endswith("int8") else (
                        "default")
                    if converted is None:
                        continue
                    settings.append((f"{name}_{key}", ctranslate2_run(
                        compute_type, batch)))
                elif name in tflite_paths:
                    whole = name.endswith("_search")
                    workers = name.endswith("_workers")
                    if ((whole and batch != 1)
                            or (workers and (batch < TWO_WORKERS
                                             or TWO_WORKERS not in counts))):
                        continue
                    settings.append((
                        f"ours_{name}_{key}",
                        lambda threads, b=batch, path=tflite_paths[name],
                        whole=whole, workers=workers: bench_tflite(
                            path, model, b, args, threads,
                            whole_search=whole, workers=workers))
                        + (([TWO_WORKERS],) if workers else ()))
        # Rounds take turns, every other one in reverse order, so that no
        # setting always runs first or last as the machine's load drifts.
        for turn in range(args.rounds):
            with OtherLoad() as load:
                for setting in settings[::-1] if turn % 2 else settings:
                    best(*setting)
            other_load.append((load.other_share, load.steal_share))
            if load.busy():
                print(f"warning: round {turn + 1}: other processes took "
                      f"{load.other_share:.0%} of the CPU (steal "
                      f"{load.steal_share:.0%}); its figures are not "
                      "those of an idle machine", file=sys.stderr)
    results = {key: _median(speeds) for key, speeds in rounds.items()}
    best_threads = {key: max(set(used), key=used.count)
                    for key, used in threads_used.items()}
    ratio_rounds = {}
    for batch in (int(b) for b in args.batch_sizes.split(",")):
        key = f"beam{BEAM}_batch{batch}"
        if results.get(f"ours_graph_{key}") and results.get(
                f"ours_fixed_cache_{key}"):
            results[f"growing_over_fixed_cache_{key}"] = round(
                results[f"ours_graph_{key}"]
                / results[f"ours_fixed_cache_{key}"], 3)
        pairs = [(f"{ours}_{key}", f"{ct2}_{key}")
                 for ours, one, two in SIDE_BY_SIDE for ct2 in (one, two)]
        pairs += [(f"ours_{name}_{key}", f"ctranslate2_{key}")
                  for name in ("graph", "bfloat16")]
        for ours_key, ct2_key in pairs:
            if results.get(ours_key) and results.get(ct2_key):
                ratio = f"{ours_key}_over_{ct2_key}"
                results[ratio] = round(results[ours_key]
                                       / results[ct2_key], 3)
                ratio_rounds[ratio] = [
                    None if None in (a, b) else round(a / b, 3)
                    for a, b in zip(rounds[ours_key], rounds[ct2_key])]
    results["side_by_side"] = side_by_side(results)
    if args.rounds > 1:
        results["rounds"] = {key: [None if v is None else round(v, 1)
                                   for v in speeds]
                             for key, speeds in rounds.items()}
        results["ratio_rounds"] = ratio_rounds
    c = model.config
    results["command"] = " ".join(
        ["python", "benchmarks/task_space_decode_speed.py"]
        + [shlex.quote(a) for a in (argv if argv is not None
                                    else sys.argv[1:])])
    results["settings"] = {
        "unit": "target tokens/s (best hypothesis), median call "
                "(with rounds > 1: the median round)",
        "preset": args.preset,
        "model": {"num_layers": c.num_layers, "num_heads": c.num_heads,
                  "hidden_dim": c.hidden_dim,
                  "intermediate_dim": c.intermediate_dim,
                  "vocabulary_size": c.vocabulary_size},
        "beam_size": BEAM, "source_length": args.source_length,
        "output_length": args.output_length, "repeats": args.repeats,
        "rounds": args.rounds,
        "thread_counts": counts, "best_threads": best_threads,
        "simd_flags": simd_flags(), "cpu_count": os.cpu_count(),
        "load_average_at_end": os.getloadavg(),
        "other_cpu_share_per_round": [other for other, _ in other_load],
        "steal_share_per_round": [steal for _, steal in other_load],
        "cpu_model": cpu_model(),
        "tensorflow": tf.__version__,
        "ctranslate2": engine_names.get("default"),
        "int8": "CTranslate2 compute_type int8; ours: TFLite dynamic-range"
                " (int8 weights) through the batched host search",
        "ctranslate2_process": "each CTranslate2 setting and thread count "
                               "timed in a process of its own",
        "two_workers": f"CTranslate2 inter_threads={TWO_WORKERS}, "
                       "intra_threads=1, max_batch_size=ceil(batch / "
                       f"{TWO_WORKERS}): the batch split between parallel "
                       "workers",
        "tflite_shapes": "default: any source length, growing KV cache",
        "tflite_workers": f"ours_tflite_*_workers: {TWO_WORKERS} "
                          "interpreters of one thread each, each searching "
                          "every other sentence of the batch in its own "
                          "thread (gnmt_tf.host_workers, as HostTranslator "
                          "splits a batch by default)",
        "ours": "the default path of a model carrying its float32 TFLite "
                "export (the shipped models): the export with its search "
                "signature, at batch 1 its whole search on "
                f"{cpu_settings.tflite_threads()} interpreter thread(s), at "
                f"larger batches split between "
                f"{cpu_settings.tflite_workers()} single-threaded "
                "interpreters (HostTranslator's defaults, no best-of)",
        "xla_default": "ours_xla_default_*: Translator's XLA-compiled "
                       "search, the default for a model without an export",
        "tflite_search": "ours_tflite_*_search: an export with the "
                         f"search_beam{BEAM} signature, one call per "
                         "sentence (batch 1 only); the host loop's export "
                         "has no search signature",
        "machine": platform.processor() or platform.machine(),
        "weights": "random (seed 0), identical in both engines",
        "note": "other_cpu_share_per_round: the CPU share other processes "
                "took during each round (benchmarks/cpu_load.py; above "
                f"{BUSY_WARNING} the machine was not idle); on a shared "
                "machine the ratios are the useful part",
    }
    path = pathlib.Path(args.output)
    previous = json.loads(path.read_text()) if path.exists() else {}
    results = with_earlier(results, previous, args.keep_previous_as)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
