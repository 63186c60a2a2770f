"""Benchmark: beam-search decoding speed of the task-space Transformer on CPU.

Target tokens per second of `transformer_small` (random weights) with beam 4
at batch 32 and batch 1, decoding a fixed number of tokens per sentence (no
end token can be produced, no early stopping), three ways:

- ours: `gnmt_tf.decoding.beam_search` in one `tf.function`, driving
  `TaskSpaceTransformer.step` with its KV cache;
- ours, no cache: the same search, but every step re-runs the whole
  teacher-forced decoder over the prefix generated so far (what a
  Transformer without incremental decoding does);
- CTranslate2: the SAME weights converted with
  `task_space.ctranslate2_converter` (the task vector folded into the
  position tables; per-token log-probabilities agree with ours to 1e-6),
  beam 4, `min_decoding_length = max_decoding_length` to fix the length.

Tokens/s counts the best hypothesis' tokens: batch * output length / wall
time of one call (median of the timed repeats, after one warm-up call).
Both engines get the same number of threads.

    python benchmarks/task_space_decode_speed.py [--threads 2] \\
        [--source-length 20] [--output-length 20] [--repeats 3]

Writes `benchmarks/results/task_space_decode_speed.json`.
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

from gnmt_tf.decoding import beam_search  # noqa: E402
from task_space.task_space_translation_model import (  # noqa: E402
    TaskSpaceTranslationModel)

RESULT = REPO_ROOT / "benchmarks" / "results" / "task_space_decode_speed.json"
BEAM = 4
TASK = ("en", "de", ("caption",))
NO_END_ID = -1  # never produced: every hypothesis runs to the fixed length


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


def ours_fn(model, output_length, cache=True):
    def search(source_ids, src_lang, tgt_lang, tags):
        encoded = model.encode(source_ids, src_lang, tgt_lang, tags)
        if cache:
            state, step = model.initial_state(encoded, output_length), \
                model.step
        else:
            initial_state, step = no_cache_step_fn(model, output_length)
            state = initial_state(encoded)
        batch = tf.shape(source_ids)[0]
        result = beam_search(
            step, state, tf.fill([batch], model.config.bos_id), NO_END_ID,
            BEAM, output_length, early_stopping="none")
        return result.ids[:, 0], result.lengths[:, 0]

    return tf.function(search, autograph=False)


def _time(call, repeats):
    call()  # warm-up (tracing, allocation)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench_ours(model, batch, args, cache):
    inputs = _inputs(model.config, batch, args.source_length, seed=batch)
    function = ours_fn(model, args.output_length, cache)
    ids, lengths = function(*inputs)
    assert np.all(lengths.numpy() == args.output_length), lengths
    repeats = args.repeats if batch > 1 else args.repeats * 3
    seconds = _time(lambda: [t.numpy() for t in function(*inputs)], repeats)
    return batch * args.output_length / seconds


def build_ctranslate2(model, directory, threads):
    try:
        import ctranslate2
        from task_space.ctranslate2_converter import (
            TaskSpaceCTranslate2Converter)
    except ImportError as e:
        print(f"CTranslate2 unavailable: {e}", file=sys.stderr)
        return None, str(e)
    vocabulary = ["<pad>", "<unk>", "<s>", "</s>"] + [
        f"t{i}" for i in range(4, model.config.vocabulary_size)]
    converter = TaskSpaceCTranslate2Converter(
        model, vocabulary, *TASK, max_positions=512)
    converter.convert(str(directory), force=True)
    translator = ctranslate2.Translator(
        str(directory), device="cpu", inter_threads=1, intra_threads=threads)
    return (translator, vocabulary), f"ctranslate2 {ctranslate2.__version__}"


def bench_ctranslate2(engine, model, batch, args):
    translator, vocabulary = engine
    source_ids = _inputs(model.config, batch, args.source_length,
                         seed=batch)[0].numpy()
    source = [[vocabulary[i] for i in row] for row in source_ids]

    def call():
        return translator.translate_batch(
            source, beam_size=BEAM, max_decoding_length=args.output_length,
            min_decoding_length=args.output_length, max_batch_size=batch)

    lengths = {len(r.hypotheses[0]) for r in call()}
    assert lengths == {args.output_length}, lengths
    repeats = args.repeats if batch > 1 else args.repeats * 3
    return batch * args.output_length / _time(call, repeats)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--preset", default="transformer_small")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--source-length", type=int, default=20,
                        help="source tokens per sentence, EOS included")
    parser.add_argument("--output-length", type=int, default=20,
                        help="target tokens decoded per sentence")
    parser.add_argument("--repeats", type=int, default=3,
                        help="timed calls at batch 32 (x3 at batch 1)")
    parser.add_argument("--batch-sizes", default="32,1")
    parser.add_argument("--output", default=str(RESULT))
    args = parser.parse_args(argv)

    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    tf.random.set_seed(0)
    model = TaskSpaceTranslationModel.from_preset(args.preset, dropout=0.0)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        engine, engine_name = build_ctranslate2(model, pathlib.Path(tmp) / "m",
                                                args.threads)
        for batch in (int(b) for b in args.batch_sizes.split(",")):
            key = f"beam{BEAM}_batch{batch}"
            results[f"ours_{key}"] = bench_ours(model, batch, args, True)
            print(f"ours {key}: {results[f'ours_{key}']:.1f} tok/s",
                  flush=True)
            results[f"ctranslate2_{key}"] = (
                bench_ctranslate2(engine, model, batch, args)
                if engine else None)
            print(f"ctranslate2 {key}: {results[f'ctranslate2_{key}']}",
                  flush=True)
            results[f"ours_nocache_{key}"] = bench_ours(model, batch, args,
                                                        False)
            print(f"ours no cache {key}: "
                  f"{results[f'ours_nocache_{key}']:.1f} tok/s", flush=True)
    c = model.config
    results["command"] = " ".join(
        ["python", "benchmarks/task_space_decode_speed.py"]
        + [shlex.quote(a) for a in (argv if argv is not None
                                    else sys.argv[1:])])
    results["settings"] = {
        "unit": "target tokens/s (best hypothesis), median call",
        "preset": args.preset,
        "model": {"num_layers": c.num_layers, "num_heads": c.num_heads,
                  "hidden_dim": c.hidden_dim,
                  "intermediate_dim": c.intermediate_dim,
                  "vocabulary_size": c.vocabulary_size},
        "beam_size": BEAM, "source_length": args.source_length,
        "output_length": args.output_length, "repeats": args.repeats,
        "threads": args.threads, "cpu_count": os.cpu_count(),
        "load_average_at_end": os.getloadavg(),
        "tensorflow": tf.__version__, "ctranslate2": engine_name,
        "machine": platform.processor() or platform.machine(),
        "weights": "random (seed 0), identical in both engines",
        "note": "2-core machine, other jobs paused (see "
                "load_average_at_end): ratios are the useful part",
    }
    path = pathlib.Path(args.output)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
