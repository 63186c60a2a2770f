"""Export benchmark: float SavedModel vs int8 (QAT) / dynamic-range / float16 TFLite.

On a trained GNMT or task-space Transformer model directory (with
`--task SRC,TGT,TAGS`, e.g. ``en,de,caption``: the direction and scene every
artifact translates) and a test split (default Multi30k en->de
test_2016_flickr) it measures, for each of the six artifacts
(float SavedModel; int8 QAT, dynamic-range from the QAT model's weights,
dynamic-range, float16 and float32 TFLite):

- sacreBLEU of the detokenised, cased output (signature printed);
- size on disk in MB (the SavedModel directory; the .tflite file);
- CPU latency per sentence at batch 1 (ms per sentence over
  `--latency-sentences`, the median of `--latency-repeats` passes in which
  the artifacts take turns; every pass is kept);
- throughput at batch 32 (sentences/s over the whole test set). The
  SavedModel searches 32 sentences per call; the TFLite models' `encode`
  takes one sentence (see `gnmt_tf.export.tflite.StepModule`), and the host-side
  search then runs the 32 together (`gnmt_tf.decoding.host_beam_search.beam_search_batch`:
  one `decode_step` call per output position for all their hypotheses);
  ``tflite_float32_over_savedmodel_batch32`` and
  ``tflite_int8_over_float32_batch1`` are the ratios the export aims at
  (>= 0.8 and >= 1.5; the latter also as the median of each pass's own
  ratio, ``..._median_of_repeats``);

and the SavedModel's parity with the in-process `Translator`: the fraction of
`--parity-sentences` sentences (from the test split, then `val`) translated
identically. The QAT model comes from `--qat-model` or is fine-tuned here
(`--qat-steps`, `--qat-minutes`). Results go to `--out` (JSON).

Example (full run)::

    python benchmarks/export_bench.py --model benchmarks/runs/gnmt_small_en_de \\
        --data-dir /work/shared/data/multi30k --qat-steps 1000 --qat-minutes 20

Task-space Transformer (results in their own file)::

    python benchmarks/export_bench.py --model benchmarks/runs/task_space/multi \\
        --task en,de,caption --data-dir /work/shared/data/multi30k \\
        --beam-size 4 --qat-steps 300 --work-dir benchmarks/runs/export_bench_ts \\
        --out benchmarks/results/export_transformer.json

Smoke test::

    python benchmarks/export_bench.py --model MODEL --data-dir DATA \\
        --max-sentences 20 --parity-sentences 20 --qat-steps 5 \\
        --out /tmp/export.json
"""

import argparse
import json
import pathlib
import shlex
import statistics
import sys
import time

# The packages before benchmarks/, whose alignment.py and pipeline.py
# would shadow them (this script runs with benchmarks/ as sys.path[0]).
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)
from gnmt_tf.flags.arg_types import (non_negative_float, number,  # noqa: E402
                                     positive_float, positive_int)
from gnmt_tf.io_utils import write_text_atomic  # noqa: E402
from results_file import with_earlier  # noqa: E402  (this script's folder)

# tflite_float32 is the like-for-like speed reference of the TFLite
# variants (same host-side search, same runtime).
KEYS = ("savedmodel_float", "tflite_int8_qat", "tflite_dynamic_range_qat",
        "tflite_dynamic_range", "tflite_float16", "tflite_float32")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True,
                        help="trained float GNMT or task-space model directory")
    parser.add_argument("--task",
                        help="SRC,TGT,TAGS for a task-space model (the test "
                             "languages are --src-lang/--tgt-lang)")
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--src-lang", default="en")
    parser.add_argument("--tgt-lang", default="de")
    parser.add_argument("--test-split", default="test_2016_flickr")
    parser.add_argument("--qat-model",
                        help="existing QAT model directory (else fine-tune)")
    parser.add_argument("--qat-steps", type=positive_int, default=1000)
    parser.add_argument("--qat-minutes", type=positive_float, default=None)
    parser.add_argument("--work-dir", default="benchmarks/runs/export_bench",
                        help="where exports (and a fine-tuned QAT model) go")
    parser.add_argument("--beam-size", type=positive_int, default=5)
    parser.add_argument("--alpha", type=non_negative_float, default=0.6)
    parser.add_argument("--max-sentences", type=positive_int,
                        help="use only the first N test sentences")
    parser.add_argument("--latency-sentences", type=positive_int, default=100)
    parser.add_argument("--latency-repeats", type=positive_int, default=3,
                        help="batch-1 passes, the artifacts taking turns "
                             "(the median is reported)")
    parser.add_argument("--parity-sentences", type=positive_int, default=500)
    parser.add_argument("--max-source-length",
                        type=number(integer=True, minimum=2), default=None,
                        help="TFLite source limit (default: per model type)")
    parser.add_argument("--threads", type=positive_int, default=None,
                        help="TFLite interpreter threads (default: LiteRT's)")
    parser.add_argument("--out", default="benchmarks/results/export.json")
    parser.add_argument("--keep-previous-as", default=None,
                        help="file the output's previous figures under this "
                             "key (its host_search and earlier* sections are "
                             "always kept)")
    return parser.parse_args(argv)


def size_mb(path):
    path = pathlib.Path(path)
    if path.is_file():
        return path.stat().st_size / 2**20
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20


def chunks(items, size):
    return [items[i:i + size] for i in range(0, len(items), size)]


def measure_throughput(translate_batch, sentences):
    """`(hypotheses, sentences_per_s_batch32)` over all `sentences`."""
    translate_batch(sentences[:2])  # warm-up (tracing, allocation)
    hypotheses = []
    start = time.perf_counter()
    for batch in chunks(sentences, 32):
        hypotheses.extend(translate_batch(batch))
    throughput = len(sentences) / (time.perf_counter() - start)
    return hypotheses, throughput


def measure_latency(runners, sentences, repeats):
    """`{key: [ms per sentence at batch 1, one per repeat]}`.

    The runners take turns within each repeat (each translates all of
    `sentences` one at a time; in reverse order every other repeat), so a
    slow spell of this shared machine lands on every artifact instead of
    on whichever one ran then; the ratios the export aims at are read
    from medians, and per repeat."""
    times = {key: [] for key in runners}
    for repeat in range(repeats):
        order = list(runners.items())
        for key, translate_batch in order[::-1] if repeat % 2 else order:
            start = time.perf_counter()
            for sentence in sentences:
                translate_batch([sentence])
            times[key].append(round(1000 * (time.perf_counter() - start)
                                    / len(sentences), 2))
    return times


def main(argv=None):
    args = parse_args(argv)
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (SentencePiece ops of the SavedModel)

    from gnmt_tf.export.savedmodel import export_savedmodel
    from gnmt_tf.export.tflite import export_tflite
    from gnmt_tf.tflite_translator import TFLiteTranslator
    from gnmt_tf.data import corpus
    from gnmt_tf.evaluation.sacrebleu_scores import score_corpus
    from gnmt_tf.translator import SearchOptions

    from serving_load import task_inputs  # (this script's folder)

    task = task_inputs(args.task)
    work = pathlib.Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    src, ref = corpus.read_parallel(args.data_dir, args.test_split,
                                    args.src_lang, args.tgt_lang)
    if args.max_sentences:
        src, ref = src[:args.max_sentences], ref[:args.max_sentences]
    options = SearchOptions(beam_size=args.beam_size,
                            length_penalty=args.alpha)
    log = lambda message: print(message, file=sys.stderr, flush=True)  # noqa

    # Exports.
    qat_dir = args.qat_model
    if not qat_dir:
        from gnmt_tf.export.qat import qat_finetune

        qat_dir = work / "qat_model"
        log(f"QAT fine-tuning into {qat_dir}")
        qat_finetune(args.model, qat_dir, args.data_dir, args.qat_steps,
                     args.qat_minutes)
    version = 1
    name = "transformer" if task else "gnmt"
    savedmodel_dir = work / "savedmodel" / name / str(version)
    if savedmodel_dir.exists():
        import shutil

        shutil.rmtree(savedmodel_dir)
    log("exporting SavedModel and TFLite models")
    export_savedmodel(args.model, savedmodel_dir, options,
                      max_source_length=250)
    length = args.max_source_length
    paths = {
        "tflite_int8_qat": export_tflite(
            qat_dir, work / "tflite", "int8", length)["model"],
        # The QAT model's fine-tuned weights as int8, float activations.
        "tflite_dynamic_range_qat": export_tflite(
            qat_dir, work / "tflite_qat_weights", "dynamic_range",
            length)["model"],
        **{f"tflite_{q}": export_tflite(args.model, work / "tflite", q,
                                        length)["model"]
           for q in ("dynamic_range", "float16", "float32")},
    }
    sizes = {"savedmodel_float": size_mb(savedmodel_dir),
             **{k: size_mb(p) for k, p in paths.items()}}

    # Translations, timings, BLEU.
    serve = tf.saved_model.load(str(savedmodel_dir)).signatures[
        "serving_default"]

    def savedmodel_batch(batch):
        inputs = {"text": tf.constant(batch)}
        if task:
            inputs.update({key: tf.constant([value] * len(batch))
                           for key, value in task.items()})
        out = serve(**inputs)["translations"].numpy()
        return [t.decode("utf-8") for t in out]

    runners = {"savedmodel_float": savedmodel_batch}
    for key, path in paths.items():
        translator = TFLiteTranslator(path, num_threads=args.threads)
        runners[key] = (lambda t: lambda batch: t.translate(
            batch, **(task or {}), beam_size=args.beam_size,
            length_penalty=args.alpha))(translator)
    results = {"sacrebleu": {}, "size_mb": sizes, "latency_ms_batch1": {},
               "throughput_sentences_per_s_batch32": {}}
    signatures = {}
    for key in KEYS:
        log(f"translating {len(src)} sentences with {key}")
        hyps, throughput = measure_throughput(runners[key], src)
        scores = score_corpus(hyps, ref)
        results["sacrebleu"][key] = round(scores.bleu, 2)
        results["throughput_sentences_per_s_batch32"][key] = round(
            throughput, 2)
        signatures[key] = scores.bleu_signature
        log(f"  {key}: BLEU {scores.bleu:.2f}  {throughput:.1f} "
            f"sentences/s  {sizes[key]:.2f} MB")
    log(f"batch-1 latency: {args.latency_repeats} passes of "
        f"{min(args.latency_sentences, len(src))} sentences, taking turns")
    repeats = measure_latency({key: runners[key] for key in KEYS},
                              src[:args.latency_sentences],
                              args.latency_repeats)
    results["latency_ms_batch1"] = {key: round(statistics.median(times), 2)
                                    for key, times in repeats.items()}
    results["latency_ms_batch1_repeats"] = repeats
    for key, times in repeats.items():
        log(f"  {key}: {results['latency_ms_batch1'][key]:.1f} ms/sentence "
            f"(passes: {times})")

    # SavedModel parity with the in-process Translator.
    parity_src = list(src)
    if len(parity_src) < args.parity_sentences and not args.max_sentences:
        try:
            val_src, _ = corpus.read_parallel(args.data_dir, "val",
                                              args.src_lang, args.tgt_lang)
            parity_src += val_src
        except FileNotFoundError:
            pass
    parity_src = parity_src[:args.parity_sentences]
    from gnmt_tf.translator import Translator

    in_process = Translator.from_model_dir(args.model).translate(
        parity_src, options, **(task or {}))
    served = [t for batch in chunks(parity_src, 32)
              for t in savedmodel_batch(batch)]
    same = sum(a == b for a, b in zip(in_process, served))
    results["savedmodel_parity_exact"] = round(same / len(parity_src), 4)
    results["savedmodel_parity_sentences"] = len(parity_src)
    results["bleu_signature"] = signatures["savedmodel_float"]
    speed = results["throughput_sentences_per_s_batch32"]
    latency = results["latency_ms_batch1"]
    results["tflite_float32_over_savedmodel_batch32"] = round(
        speed["tflite_float32"] / speed["savedmodel_float"], 3)
    results["tflite_int8_over_float32_batch1"] = round(
        latency["tflite_float32"] / latency["tflite_int8_qat"], 3)
    results["tflite_dynamic_range_qat_over_float32_batch1"] = round(
        latency["tflite_float32"] / latency["tflite_dynamic_range_qat"], 3)
    # Paired: each pass's own ratio (the two ran minutes apart, not a
    # whole run apart), and their median, steadier than the ratio of the
    # two medians when the machine's speed drifts between passes.
    results["tflite_int8_over_float32_batch1_per_repeat"] = [
        round(f / q, 3) for f, q in zip(repeats["tflite_float32"],
                                        repeats["tflite_int8_qat"])]
    results["tflite_int8_over_float32_batch1_median_of_repeats"] = round(
        statistics.median(
            results["tflite_int8_over_float32_batch1_per_repeat"]), 3)
    results["settings"] = {
        "test_split": args.test_split, "sentences": len(src),
        "task": args.task,
        "beam_size": args.beam_size, "alpha": args.alpha,
        "tflite_threads": args.threads, "qat_model": str(qat_dir),
        "latency_sentences": min(args.latency_sentences, len(src)),
        "latency_repeats": args.latency_repeats,
        "max_source_length": args.max_source_length}
    results["command"] = "python " + " ".join(
        shlex.quote(a) for a in [sys.argv[0], *(argv or sys.argv[1:])])
    out = pathlib.Path(args.out)
    previous = json.loads(out.read_text()) if out.exists() else {}
    results = with_earlier(results, previous, args.keep_previous_as,
                           keep=("host_search",))
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out, json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
