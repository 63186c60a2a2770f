"""Benchmark: SGNMT predictors, an ensemble of two models and an n-gram LM.

Two model directories of one vocabulary (e.g. trained with different seeds,
the second with `--vocab` of the first) translate Multi30k
`test_2016_flickr` alone and as an ensemble (`gnmt_tf.predictor_model`:
log-linear, weights 1,1, and probability averaging), all with the same beam
search; `ensemble` in `benchmarks/results/decoding.json` holds the BLEU of
each (sacreBLEU, detokenised). Then a 4-gram LM over the first model's
pieces is estimated on the Multi30k train target side (`gnmt_tf.lm.arpa`)
and added to the first model as an ``lm`` predictor, with a ``wc``
word-count bonus to make up for the LM's pull towards short outputs; the
weights are chosen on the first `--tune-sentences` of `val` from
`--lm-weights` x `--wc-weights` (and LM off), and `lm_predictor_bleu_delta`
holds the test BLEU of the chosen setting and of the best one with the LM
on (and the val BLEU of each setting tried).

    python benchmarks/decoding_predictors.py --model-a A [--model-b B] \\
        [--tags caption] [--data-dir ../shared/data/multi30k] [--beam-size 4] \\
        [--num-sentences 1000] [--lm-weights 0.1,0.2,0.4] [--note "..."]
"""

import argparse
import gzip
import pathlib
import sys
import tempfile
import time

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

import gnmt_tf  # noqa: E402,F401  (TF_USE_LEGACY_KERAS before TensorFlow)

from results_file import command_line  # noqa: E402  (benchmarks/ is sys.path[0])
from results_file import update_section  # noqa: E402

RESULT = REPO_ROOT / "benchmarks" / "results" / "decoding.json"


def _lines(data_dir, split, lang, count=None):
    path = pathlib.Path(data_dir) / f"{split}.{lang}.gz"
    with gzip.open(path, "rt", encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f]
    return lines[:count] if count else lines


def _bleu(hyps, refs):
    import sacrebleu

    return round(sacrebleu.corpus_bleu(hyps, [refs]).score, 2)


def _task(model, args):
    """The task arguments the model takes (a task-space model's direction
    and tags; none for a model of one direction)."""
    given = {"src_lang": args.src, "tgt_lang": args.tgt,
             "tags": [t for t in args.tags.split(",") if t]}
    names = {t.name for t in model.task_inputs()}
    return {k: v for k, v in given.items() if k in names}


def _run(translator, options, sources, refs, args):
    """`{"bleu", "seconds"}` of one system on `sources`."""
    start = time.perf_counter()
    hyps = translator.translate(sources, options, batch_size=32,
                                **_task(translator.model, args))
    seconds = time.perf_counter() - start
    return {"bleu": _bleu(hyps, refs), "seconds": round(seconds, 1)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-a", required=True)
    parser.add_argument("--model-b", default=None,
                        help="second model of the same vocabulary (without "
                        "it, only the LM predictor is measured)")
    parser.add_argument("--data-dir",
                        default=str(REPO_ROOT.parent / "shared" / "data"
                                    / "multi30k"))
    parser.add_argument("--src", default="en")
    parser.add_argument("--tgt", default="de")
    parser.add_argument("--tags", default="caption",
                        help="scene tags, for a model that takes them")
    parser.add_argument("--split", default="test_2016_flickr")
    parser.add_argument("--num-sentences", type=int, default=None)
    parser.add_argument("--beam-size", type=int, default=4)
    parser.add_argument("--alpha", type=float, default=0.6)
    parser.add_argument("--lm-order", type=int, default=4)
    parser.add_argument("--lm-weights", default="0.1,0.2,0.4")
    parser.add_argument("--wc-weights", default="0",
                        help="word-count bonus weights tried with each LM "
                        "weight (SGNMT's length compensation)")
    parser.add_argument("--tune-sentences", type=int, default=200)
    parser.add_argument("--skip-lm", action="store_true")
    parser.add_argument("--note", default="")
    parser.add_argument("--output", default=str(RESULT))
    args = parser.parse_args(argv)
    command = command_line("decoding_predictors.py", argv)

    from gnmt_tf.lm.arpa import estimate_arpa
    from gnmt_tf.lm.predictor import lm_tokens
    from gnmt_tf.predictor_model import load_predictors
    from gnmt_tf.translator import SearchOptions
    from gnmt_tf.translator import Translator

    options = SearchOptions(beam_size=args.beam_size,
                            length_penalty=args.alpha)
    sources = _lines(args.data_dir, args.split, args.src, args.num_sentences)
    refs = _lines(args.data_dir, args.split, args.tgt, args.num_sentences)
    models = [args.model_a] + ([args.model_b] if args.model_b else [])
    systems = {"model_a": (models[:1], None, None, "loglinear")}
    if args.model_b:
        systems.update({
            "model_b": (models[1:], None, None, "loglinear"),
            "ensemble_loglinear": (models, None, [1.0, 1.0], "loglinear"),
            "ensemble_average": (models, None, None, "average")})
    results = {}
    for name, (dirs, predictors, weights, mode) in systems.items():
        model, subwords = load_predictors(dirs, predictors, weights, None,
                                          mode)
        results[name] = _run(Translator(model, subwords), options, sources,
                             refs, args)
        print(name, results[name], flush=True)
    if args.model_b:
        update_section(args.output, "ensemble", {
            "models": models, "split": args.split,
            "direction": f"{args.src}-{args.tgt}", "sentences": len(sources),
            "beam_size": args.beam_size, "alpha": args.alpha,
            "bleu": {k: v["bleu"] for k, v in results.items()},
            "seconds": {k: v["seconds"] for k, v in results.items()},
            "note": args.note}, command)
    if args.skip_lm:
        return 0

    _, subwords = load_predictors(models[:1])
    train = _lines(args.data_dir, "train", args.tgt)
    with tempfile.TemporaryDirectory() as tmp:
        arpa = pathlib.Path(tmp) / "lm.arpa"
        start = time.perf_counter()
        sizes = estimate_arpa(lm_tokens(subwords, subwords.encode(train)),
                              args.lm_order, arpa)
        lm_seconds = round(time.perf_counter() - start, 1)
        print("LM", sizes, lm_seconds, "s", flush=True)
        tune_src = _lines(args.data_dir, "val", args.src, args.tune_sentences)
        tune_ref = _lines(args.data_dir, "val", args.tgt, args.tune_sentences)
        grid = [(0.0, 0.0)] + [
            (float(lm), float(wc)) for lm in args.lm_weights.split(",")
            for wc in args.wc_weights.split(",")]

        def system(lm, wc):
            names, weights = ["nmt", "lm"], [1.0, lm]
            if wc:
                names, weights = names + ["wc"], weights + [wc]
            model, subwords = load_predictors(models[:1], names, weights,
                                              arpa)
            return Translator(model, subwords)

        def key(lm, wc):
            return f"lm={lm:g},wc={wc:g}"

        tuning = {}
        for lm, wc in grid:
            tuning[key(lm, wc)] = _run(system(lm, wc), options, tune_src,
                                       tune_ref, args)["bleu"]
            print("val", key(lm, wc), tuning[key(lm, wc)], flush=True)
        best = max(grid, key=lambda g: (tuning[key(*g)], -g[0], -g[1]))
        # With the LM on: the best such setting on val, scored on test even
        # when the LM is best left off (then `delta` is 0).
        best_lm = max(grid[1:], key=lambda g: (tuning[key(*g)], -g[0]))
        with_lm = _run(system(*best_lm), options, sources, refs, args)
        print("test with", key(*best_lm), with_lm, flush=True)
    chosen_bleu = (with_lm["bleu"] if best == best_lm
                   else results["model_a"]["bleu"])
    update_section(args.output, "lm_predictor_bleu_delta", {
        "model": models[0], "split": args.split,
        "direction": f"{args.src}-{args.tgt}", "sentences": len(sources),
        "beam_size": args.beam_size, "alpha": args.alpha,
        "lm": {"order": args.lm_order, "unit": "SentencePiece pieces",
               "data": f"train.{args.tgt} ({len(train)} sentences)",
               "estimator": "gnmt_tf.lm.arpa (modified Kneser-Ney)",
               "ngrams": sizes, "estimate_seconds": lm_seconds},
        "val_bleu_by_weight": tuning,
        "tune_sentences": len(tune_src), "chosen_weights": key(*best),
        "bleu_without_lm": results["model_a"]["bleu"],
        "bleu_chosen": chosen_bleu,
        "delta": round(chosen_bleu - results["model_a"]["bleu"], 2),
        "best_with_lm": {"weights": key(*best_lm),
                         "val_bleu": tuning[key(*best_lm)],
                         "test_bleu": with_lm["bleu"],
                         "test_delta": round(with_lm["bleu"]
                                             - results["model_a"]["bleu"],
                                             2)},
        "seconds_without_lm": results["model_a"]["seconds"],
        "seconds_with_lm": with_lm["seconds"],
        "note": args.note}, command)
    return 0


if __name__ == "__main__":
    sys.exit(main())
