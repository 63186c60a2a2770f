"""Benchmark: TFLite files whose KV cache grows in blocks against the
default growing cache, float32 and int8, on a trained task-space Transformer.

The default TFLite export's cache grows by one position a step, so every
step changes the interpreter's input shapes and it reallocates its tensors
(`AllocateTensors`, about 0.12 ms of a 0.8 ms int8 step at batch 1).
`gnmt-tf export tflite --cache-block N` grows it N positions at a time
(`gnmt_tf.export.tflite.StepModule`), so the shapes change every N steps, and each
step attends to up to N - 1 unused (masked) positions. This exports both
layouts in float32 (from `--model`) and int8 (from `--qat-model`), and
measures each file, as `benchmarks/export_bench.py` does:

- sacreBLEU on the test split, translated in chunks of 32, and that
  throughput (sentences/s);
- the translations identical to the same format's default file;
- the latency at batch 1 (ms per sentence over `--latency-sentences`, the
  files taking turns in each of `--latency-repeats` passes; the median,
  every pass kept);

and the ratios: blocked / default per format at both batch sizes, and int8
/ float32 at batch 1 in each layout (the ratio of the medians, and the
median of each pass's own ratio).

    python benchmarks/tflite_cache_block.py --model multi30k-transformer \\
        --qat-model QAT_DIR --task en,de,caption \\
        --data-dir ../shared/data/multi30k [--cache-block 16] \\
        [--latency-sentences 100] [--latency-repeats 11] [--work-dir DIR]

Writes `benchmarks/results/tflite_cache_block.json`.
"""

import argparse
import json
import pathlib
import statistics
import sys

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

import gnmt_tf  # noqa: E402,F401  (TF_USE_LEGACY_KERAS before TensorFlow)
from cpu_flags import simd_flags  # noqa: E402  (this script's folder)
from export_bench import measure_latency, measure_throughput  # noqa: E402
from gnmt_tf.flags.arg_types import positive_int  # noqa: E402
from gnmt_tf.io_utils import write_text_atomic  # noqa: E402
from results_file import command_line, with_earlier  # noqa: E402

RESULT = REPO_ROOT / "benchmarks" / "results" / "tflite_cache_block.json"
FORMATS = ("float32", "int8")
LAYOUTS = ("growing", "blocked")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True,
                        help="trained task-space model (float32 files)")
    parser.add_argument("--qat-model", required=True,
                        help="its QAT model directory (int8 files)")
    parser.add_argument("--task", default="en,de,caption",
                        help="SRC,TGT,TAGS every file translates")
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--test-split", default="test_2016_flickr")
    parser.add_argument("--max-sentences", type=positive_int, default=None)
    parser.add_argument("--cache-block", type=positive_int, default=16)
    parser.add_argument("--beam-size", type=positive_int, default=4)
    parser.add_argument("--latency-sentences", type=positive_int,
                        default=100)
    parser.add_argument("--latency-repeats", type=positive_int, default=11)
    parser.add_argument("--threads", type=positive_int, default=None,
                        help="interpreter threads (default: the runtime's)")
    parser.add_argument("--work-dir", default="benchmarks/runs/cache_block")
    parser.add_argument("--out", default=str(RESULT))
    parser.add_argument("--keep-previous-as", default=None)
    return parser.parse_args(argv)


def export_files(args, work):
    """`{(format, layout): path}` of the four files."""
    from gnmt_tf.export.tflite import export_tflite

    paths = {}
    for fmt in FORMATS:
        source = args.model if fmt == "float32" else args.qat_model
        for layout in LAYOUTS:
            block = args.cache_block if layout == "blocked" else None
            paths[fmt, layout] = export_tflite(
                source, work / f"{fmt}_{layout}", fmt,
                cache_block=block)["model"]
    return paths


def main(argv=None):
    args = parse_args(argv)
    from gnmt_tf.data import corpus
    from gnmt_tf.evaluation.sacrebleu_scores import score_corpus
    from gnmt_tf.tflite_translator import TFLiteTranslator

    from serving_load import task_inputs  # (this script's folder)

    task = task_inputs(args.task)
    src, ref = corpus.read_parallel(args.data_dir, args.test_split,
                                    *args.task.split(",")[:2])
    if args.max_sentences:
        src, ref = src[:args.max_sentences], ref[:args.max_sentences]
    work = pathlib.Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    log = lambda message: print(message, file=sys.stderr, flush=True)  # noqa
    log(f"exporting {len(FORMATS) * len(LAYOUTS)} TFLite files to {work}")
    paths = export_files(args, work)
    runners = {}
    for (fmt, layout), path in paths.items():
        translator = TFLiteTranslator(path, num_threads=args.threads)
        runners[f"{fmt}_{layout}"] = (lambda t: lambda batch: t.translate(
            batch, **task, beam_size=args.beam_size))(translator)

    results = {"sacrebleu": {}, "throughput_sentences_per_s_batch32": {},
               "identical_to_growing": {}}
    outputs = {}
    for key, runner in runners.items():
        log(f"translating {len(src)} sentences with {key}")
        outputs[key], speed = measure_throughput(runner, src)
        results["sacrebleu"][key] = round(score_corpus(outputs[key],
                                                       ref).bleu, 2)
        results["throughput_sentences_per_s_batch32"][key] = round(speed, 2)
        log(f"  {key}: BLEU {results['sacrebleu'][key]}, "
            f"{speed:.1f} sentences/s")
    for fmt in FORMATS:
        same = sum(a == b for a, b in zip(outputs[f"{fmt}_growing"],
                                          outputs[f"{fmt}_blocked"]))
        results["identical_to_growing"][fmt] = f"{same}/{len(src)}"

    log(f"batch-1 latency: {args.latency_repeats} passes of "
        f"{min(args.latency_sentences, len(src))} sentences, taking turns")
    passes = measure_latency(runners, src[:args.latency_sentences],
                             args.latency_repeats)
    latency = {key: round(statistics.median(times), 2)
               for key, times in passes.items()}
    results["latency_ms_batch1"] = latency
    results["latency_ms_batch1_repeats"] = passes
    speed = results["throughput_sentences_per_s_batch32"]
    for fmt in FORMATS:
        results[f"blocked_over_growing_{fmt}_batch1"] = round(
            latency[f"{fmt}_growing"] / latency[f"{fmt}_blocked"], 3)
        results[f"blocked_over_growing_{fmt}_batch32"] = round(
            speed[f"{fmt}_blocked"] / speed[f"{fmt}_growing"], 3)
    for layout in LAYOUTS:
        per_pass = [round(f / q, 3) for f, q in zip(
            passes[f"float32_{layout}"], passes[f"int8_{layout}"])]
        results[f"int8_over_float32_batch1_{layout}"] = round(
            latency[f"float32_{layout}"] / latency[f"int8_{layout}"], 3)
        results[f"int8_over_float32_batch1_{layout}_per_repeat"] = per_pass
        results[f"int8_over_float32_batch1_{layout}_median_of_repeats"] = (
            round(statistics.median(per_pass), 3))
    results["settings"] = {
        "test_split": args.test_split, "sentences": len(src),
        "task": args.task, "beam_size": args.beam_size,
        "cache_block": args.cache_block, "threads": args.threads,
        "latency_sentences": min(args.latency_sentences, len(src)),
        "latency_repeats": args.latency_repeats,
        "qat_model": str(args.qat_model), "simd_flags": simd_flags()}
    results["command"] = command_line("tflite_cache_block.py", argv)
    out = pathlib.Path(args.out)
    previous = json.loads(out.read_text()) if out.exists() else {}
    results = with_earlier(results, previous, args.keep_previous_as)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out, json.dumps(results, indent=2) + "\n")
    print(json.dumps({k: v for k, v in results.items()
                      if not k.endswith("repeats")}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
