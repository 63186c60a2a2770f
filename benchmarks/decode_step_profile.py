"""Benchmark: where the in-graph beam search of the task-space Transformer
spends its time, and what XLA and a cheaper beam reorder change.

`transformer_small` (random weights, seed 0, as
`benchmarks/task_space_decode_speed.py`), beam 4, a fixed output length (no
end token, no early stopping), at each batch size. Timed in interleaved
repetitions (median), each a `tf.function`:

- ``search``: `gnmt_tf.decoding.beam_search` over `TaskSpaceTransformer.step`
  as it is now: state entries the step leaves unchanged (encoder keys and
  values, source mask, task vector) are not reordered (`reorder_beams`);
- ``search_reorder_all``: the same, with every state entry copied through
  the beam reorder at every step (the search before that change);
- ``search_xla_step``: the step function compiled with XLA
  (`jit_compile=True`) inside the search loop;
- ``search_xla_all``: the whole search function under `jit_compile=True`
  (or the reason it does not compile);
- ``step``, ``step_xla``: one `step` call at `B * K` rows, plain and XLA;
- ``reorder_cache``: one beam reorder of the self-attention caches;
- ``encode``: the encoder and initial state.

From these: the step's share of a search step, the reorder's, and the
search's own (top-k, penalties, bookkeeping). Also whether the XLA
search's best hypotheses equal the plain one's.

    python benchmarks/decode_step_profile.py [--batch-sizes 32,1] \\
        [--output-length 20] [--repeats 5] [--threads N] [--clock cpu]

Writes `benchmarks/results/decode_step_profile.json`.
"""

import argparse
import json
import os
import pathlib
import statistics
import sys
import time

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from results_file import command_line  # noqa: E402

RESULT = REPO_ROOT / "benchmarks" / "results" / "decode_step_profile.json"
BEAM = 4
TASK = ("en", "de", ("caption",))
NO_END_ID = -1


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--preset", default="transformer_small")
    parser.add_argument("--batch-sizes", default="32,1")
    parser.add_argument("--source-length", type=int, default=20)
    parser.add_argument("--output-length", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="cpu: this process's CPU time, for ratios on "
                        "a machine shared with other jobs (with "
                        "--threads 1)")
    parser.add_argument("--out", default=str(RESULT))
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    import gnmt_tf  # noqa: F401
    import numpy as np
    import tensorflow as tf

    from gnmt_tf.decoding.beam_search import beam_search, tile_beams
    from gnmt_tf.decoding.beam_search import reorder_beams
    from gnmt_tf.models.task_space.task_space_translation_model import (
                                                                        TaskSpaceTranslationModel)

    if args.threads:
        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
        tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    tf.random.set_seed(0)
    model = TaskSpaceTranslationModel.from_preset(args.preset, dropout=0.0)
    config = model.config
    length = args.output_length

    def changed_only(state, new_state):
        """`new_state` with the entries `state` had kept as they were."""
        return {name: (state[name] if name in ("source_mask", "decoder_task")
                       else dict(state[name], self_key=new_state[name][
                           "self_key"], self_value=new_state[name][
                               "self_value"]) if name.startswith("layer_")
                       else new_state[name]) for name in state}

    xla_inner = tf.function(model.step, jit_compile=True, autograph=False)

    def xla_step(ids, state):
        log_probs, attention, new_state = xla_inner(ids, state)
        return log_probs, attention, changed_only(state, new_state)

    def reorder_all_step(ids, state):
        log_probs, attention, new_state = model.step(ids, state)
        return log_probs, attention, tf.nest.map_structure(tf.identity,
                                                           new_state)

    def search_fn(step, jit=False):
        def search(source_ids, src_lang, tgt_lang, tags):
            encoded = model.encode(source_ids, src_lang, tgt_lang, tags)
            state = model.initial_state(encoded, length)
            batch = tf.shape(source_ids)[0]
            result = beam_search(step, state, tf.fill([batch], config.bos_id),
                                 NO_END_ID, BEAM, length,
                                 early_stopping="none")
            return result.ids[:, 0]
        return tf.function(search, autograph=False, jit_compile=jit)

    results = {}
    for batch in (int(b) for b in args.batch_sizes.split(",")):
        rng = np.random.default_rng(batch)
        ids = rng.integers(4, config.vocabulary_size,
                           (batch, args.source_length - 1))
        source = tf.constant(np.concatenate(
            [ids, np.full((batch, 1), config.eos_id)], 1), tf.int32)
        task = config.task_features(*TASK)
        inputs = (source, tf.fill([batch], task["src_lang"]),
                  tf.fill([batch], task["tgt_lang"]),
                  tf.constant([task["tags"]] * batch, tf.int32))
        encode = tf.function(lambda *x: tile_beams(model.initial_state(
            model.encode(*x), length), BEAM), autograph=False)
        state = encode(*inputs)
        rows = batch * BEAM
        step_ids = tf.fill([rows], config.bos_id)
        step = tf.function(model.step, autograph=False)
        beam = tf.constant(rng.integers(0, BEAM, (batch, BEAM)), tf.int32)
        caches = {name: value for name, value in state.items()
                  if name.startswith("layer_")}
        reorder = tf.function(lambda c: tf.nest.map_structure(
            lambda x: reorder_beams(x, beam, BEAM), {
                n: {k: c[n][k] for k in ("self_key", "self_value")}
                for n in c}), autograph=False)
        calls = {
            "search": search_fn(model.step),
            "search_reorder_all": search_fn(reorder_all_step),
            "search_xla_step": search_fn(xla_step),
            "search_xla_all": search_fn(model.step, jit=True),
            "step": lambda *_: step(step_ids, state),
            "step_xla": lambda *_: xla_inner(step_ids, state),
            "reorder_cache": lambda *_: reorder(caches),
            "encode": lambda *x: encode(*x),
        }
        outputs, failed = {}, {}
        for name, call in list(calls.items()):
            try:
                outputs[name] = call(*inputs)  # warm-up, tracing
            except Exception as e:  # noqa: BLE001  (reported, not hidden)
                failed[name] = f"{type(e).__name__}: {str(e)[:300]}"
                del calls[name]
        times = {name: [] for name in calls}
        clock = (time.process_time if args.clock == "cpu"
                 else time.perf_counter)
        for _ in range(args.repeats):
            for name, call in calls.items():
                start = clock()
                tf.nest.map_structure(lambda t: t.numpy(), call(*inputs))
                times[name].append(clock() - start)
        ms = {name: round(1000 * statistics.median(t), 3)
              for name, t in times.items()}
        entry = {"ms": ms, "failed": failed}
        per_step = ms["search"] / length
        entry["search_ms_per_step"] = round(per_step, 3)
        entry["step_share_of_search_step"] = round(ms["step"] / per_step, 3)
        entry["cache_reorder_share_of_search_step"] = round(
            ms["reorder_cache"] / per_step, 3)
        for name in ("search_reorder_all", "search_xla_step",
                     "search_xla_all"):
            if name in ms:
                entry[f"{name}_over_search"] = round(
                    ms["search"] / ms[name], 3)
                entry[f"{name}_same_best"] = bool(np.array_equal(
                    outputs[name].numpy(), outputs["search"].numpy()))
        entry["target_tokens_per_s"] = round(
            batch * length / (ms["search"] / 1000), 1)
        results[f"beam{BEAM}_batch{batch}"] = entry
        print(json.dumps({f"batch{batch}": entry}, indent=1), flush=True)
    results["settings"] = {
        "preset": args.preset, "beam_size": BEAM,
        "source_length": args.source_length, "output_length": length,
        "repeats": args.repeats, "threads": args.threads,
        "clock": args.clock,
        "cpu_count": os.cpu_count(), "load_average_at_end": os.getloadavg(),
        "tensorflow": tf.__version__,
        "onednn": os.environ.get("TF_ENABLE_ONEDNN_OPTS", "default"),
        "unit": "ms per call, median of interleaved repeats; X_over_search"
                " = speed of X relative to search (> 1: faster)"}
    results["command"] = command_line("decode_step_profile.py", argv)
    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
