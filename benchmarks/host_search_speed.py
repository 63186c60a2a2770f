"""Benchmark: the host-side search (TFLite) against the in-graph one.

On a trained model directory and a test split it exports the float32 TFLite
model twice, once (into `--work-dir`, reused on later runs): the default,
`decode_step` at any source length with a growing KV cache where the model
has one, in ``dynamic/``, and `--fixed-shapes` (the state at the longest
source, a fixed cache) in ``fixed/``. It translates the same `--sentences`
sentences, in interleaved repetitions, with:

- ``translator_batch32``: the in-process `Translator` (the SavedModel's
  graph: encoder + `tf.while_loop` beam search), 32 sentences per call;
- ``tflite_batch32``: `HostTranslator` over LiteRT, 32 sentences searched
  together (`gnmt_tf.decoding.host_beam_search.beam_search_batch`);
- ``tflite_batch1``: the same, one sentence at a time (what the host
  search did before it was batched);
- ``tflite_auto``: the default, `HostTranslator.auto_batch_size`
  sentences together (``auto_batch_size`` in the settings);
- ``tflite_fixed_batch32``, ``tflite_fixed_batch1``: the fixed-shape
  export, 32 and 1 sentences together.

It reports sentences/s (median of `--repeats`), the ratios
``tflite_batch32_over_translator`` and ``tflite_batch32_over_batch1``, and
whether the translations agree (TFLite batch 32 vs batch 1: identical
search, so identical text; TFLite vs `Translator`: float rounding between
runtimes may flip a rare near-tie).

    python benchmarks/host_search_speed.py --model /tmp/ts_model \\
        --task en,de,caption --data-dir /work/shared/data/multi30k \\
        --sentences 96 --repeats 3 [--clock cpu]

Writes the ``host_search`` section of `benchmarks/results/export.json`
(`results_file.update_section`).
"""

import argparse
import pathlib
import statistics
import sys
import time

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from gnmt_tf.flags.arg_types import non_negative_float  # noqa: E402
from gnmt_tf.flags.arg_types import number, positive_int  # noqa: E402
from results_file import command_line, update_section  # noqa: E402

RESULT = REPO_ROOT / "benchmarks" / "results" / "export.json"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True, help="model directory")
    parser.add_argument("--task", default=None,
                        help="SRC,TGT,TAGS for a task-space model")
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--src-lang", default="en")
    parser.add_argument("--tgt-lang", default="de")
    parser.add_argument("--test-split", default="test_2016_flickr")
    parser.add_argument("--sentences", type=positive_int, default=96)
    parser.add_argument("--repeats", type=positive_int, default=3)
    parser.add_argument("--beam-size", type=positive_int, default=4)
    parser.add_argument("--alpha", type=non_negative_float, default=0.6)
    parser.add_argument("--threads", type=positive_int, default=None,
                        help="TFLite interpreter threads (default: LiteRT's)")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="cpu: this process's CPU time, for ratios on "
                        "a machine shared with other jobs")
    parser.add_argument("--max-source-length",
                        type=number(integer=True, minimum=2), default=None)
    parser.add_argument("--max-target-length", type=positive_int, default=None)
    parser.add_argument("--work-dir", default="benchmarks/runs/host_search")
    parser.add_argument("--out", default=str(RESULT))
    parser.add_argument("--keep-previous-as", default=None,
                        help="keep the section's previous figures under "
                        "this key (e.g. earlier_before_fast_top_k)")
    return parser.parse_args(argv)


def chunks(items, size):
    return [items[i:i + size] for i in range(0, len(items), size)]


def main(argv=None):
    args = parse_args(argv)
    import gnmt_tf  # noqa: F401  (TF_USE_LEGACY_KERAS before TensorFlow)

    from gnmt_tf.export.tflite import export_tflite
    from gnmt_tf.data import corpus
    from gnmt_tf.host_translator import HostTranslator
    from gnmt_tf.translator import SearchOptions, Translator
    from serving_load import task_inputs  # (this script's folder)

    task = task_inputs(args.task) or {}
    src, _ = corpus.read_parallel(args.data_dir, args.test_split,
                                  args.src_lang, args.tgt_lang)
    src = src[:args.sentences]
    work = pathlib.Path(args.work_dir)
    options = SearchOptions(beam_size=args.beam_size,
                            length_penalty=args.alpha)
    translator = Translator.from_model_dir(args.model)
    hosts = {}
    for layout, fixed_shapes in (("dynamic", False), ("fixed", True)):
        model_path = work / layout / "model_float32.tflite"
        if not model_path.exists():
            export_tflite(args.model, work / layout, "float32",
                          args.max_source_length, args.max_target_length,
                          fixed_shapes)
        hosts[layout] = HostTranslator.from_tflite(model_path,
                                                   num_threads=args.threads)
    host, fixed = hosts["dynamic"], hosts["fixed"]
    search = dict(beam_size=args.beam_size, length_penalty=args.alpha)
    runners = {
        "translator_batch32": lambda batch: translator.translate(
            batch, options, 32, **task),
        "tflite_batch32": lambda batch: host.translate(
            batch, batch_size=32, **search, **task),
        "tflite_batch1": lambda batch: host.translate(
            batch, batch_size=1, **search, **task),
        "tflite_auto": lambda batch: host.translate(batch, **search, **task),
        "tflite_fixed_batch32": lambda batch: fixed.translate(
            batch, batch_size=32, **search, **task),
        "tflite_fixed_batch1": lambda batch: fixed.translate(
            batch, batch_size=1, **search, **task),
    }
    outputs, times = {}, {key: [] for key in runners}
    for key, run in runners.items():  # warm-up: tracing, allocation
        run(src[:2])
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    for repeat in range(args.repeats):
        for key, run in runners.items():
            start = clock()
            outputs[key] = [t for batch in chunks(src, 32)
                            for t in run(batch)]
            times[key].append(clock() - start)
            print(f"repeat {repeat} {key}: {times[key][-1]:.2f} s",
                  file=sys.stderr, flush=True)
    speed = {key: round(len(src) / statistics.median(t), 2)
             for key, t in times.items()}

    def agree(a, b):
        return round(sum(x == y for x, y in zip(outputs[a], outputs[b]))
                     / len(src), 4)

    import os

    section = {
        "sentences_per_s": speed,
        "tflite_batch32_over_translator": round(
            speed["tflite_batch32"] / speed["translator_batch32"], 3),
        "tflite_batch32_over_batch1": round(
            speed["tflite_batch32"] / speed["tflite_batch1"], 3),
        "same_text_tflite_batch32_vs_batch1": agree("tflite_batch32",
                                                     "tflite_batch1"),
        "same_text_tflite_vs_translator": agree("tflite_batch32",
                                                 "translator_batch32"),
        "growing_cache": bool(getattr(translator.model,
                                      "supports_growing_cache", False)
                              and args.max_target_length is None),
        "settings": {"model": args.model, "task": args.task,
                     "test_split": args.test_split, "sentences": len(src),
                     "beam_size": args.beam_size, "alpha": args.alpha,
                     "repeats": args.repeats, "tflite_threads": args.threads,
                     "clock": args.clock,
                     "auto_batch_size": host.auto_batch_size(
                         args.beam_size, host.task_arrays(**task)[1]),
                     "load_average_at_end": os.getloadavg(),
                     "cpu_count": os.cpu_count()},
    }
    section["dynamic_over_fixed_shapes_batch32"] = round(
        speed["tflite_batch32"] / speed["tflite_fixed_batch32"], 3)
    section["dynamic_over_fixed_shapes_batch1"] = round(
        speed["tflite_batch1"] / speed["tflite_fixed_batch1"], 3)
    section["same_text_dynamic_vs_fixed_shapes"] = agree(
        "tflite_batch32", "tflite_fixed_batch32")
    update_section(args.out, "host_search", section,
                   command_line("host_search_speed.py", argv),
                   args.keep_previous_as)
    import json

    print(json.dumps(section, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
