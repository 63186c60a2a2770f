"""Benchmark: gnmt_small on Multi30k en->de within a CPU time budget.

Trains (or resumes: the budget counts wall time across restarts, from the
model dir's progress.json) `gnmt_small` with `model.fit`, tunes GNMT's length
and coverage penalties on val with beam 5, then reports sacreBLEU / chrF on val,
test_2016_flickr and test_2017_flickr, training throughput and decoding
throughput (beam 5 and greedy). Writes benchmarks/results/multi30k_gnmt.json.

    python benchmarks/multi30k_gnmt.py --minutes 90 --data-dir ../shared/data/multi30k
"""

import argparse
import json
import os
import pathlib
import platform
import shlex
import sys
import time

# The packages before benchmarks/, whose alignment.py and pipeline.py
# would shadow them (this script runs with benchmarks/ as sys.path[0]).
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import gnmt_tf  # noqa: F401

HERE = pathlib.Path(__file__).resolve().parent


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=90.0,
                        help="training wall-time budget")
    parser.add_argument("--data-dir", default=os.environ.get("GNMT_TF_DATA"))
    parser.add_argument("--model-dir", default=str(HERE / "runs" / "gnmt_small_en_de"))
    parser.add_argument("--preset", default="gnmt_small")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--alphas", default="0.2,0.6,1.0")
    parser.add_argument("--betas", default="0.1,0.2")
    parser.add_argument("--beam-size", type=int, default=5)
    parser.add_argument("--max-sentences", type=int, default=None,
                        help="evaluate on the first N sentences only (smoke runs)")
    parser.add_argument("--output", default=str(HERE / "results" / "multi30k_gnmt.json"))
    return parser.parse_args(argv)


def timed_translate(translator, sentences, options):
    translator.translate(sentences[:8], options)  # trace and warm up first
    start = time.perf_counter()
    hyps = translator.translate(sentences, options, batch_size=64)
    return hyps, len(sentences) / (time.perf_counter() - start)


def main(argv=None):
    args = parse_args(argv)
    from gnmt_tf.config import split_overrides
    from gnmt_tf.data import corpus
    from gnmt_tf.evaluation import score_corpus
    from gnmt_tf.model_dir import load_model
    from gnmt_tf.models.gnmt.presets import get_preset
    from gnmt_tf.training.callbacks import read_progress
    from gnmt_tf.models.gnmt.training import train_gnmt
    from gnmt_tf.translator import SearchOptions, Translator

    data_dir = corpus.resolve_data_dir(args.data_dir)
    model_config, train_config = get_preset(args.preset)
    model_config, train_config = split_overrides(
        args.overrides + [f"max_minutes={args.minutes}"], model_config, train_config)
    train_gnmt(args.model_dir, data_dir, "en", "de", model_config, train_config)
    progress = read_progress(pathlib.Path(args.model_dir) / "progress.json")

    model, subwords, _ = load_model(args.model_dir)
    translator = Translator(model, subwords)
    splits = {}
    for split in ("val", "test_2016_flickr", "test_2017_flickr"):
        src, ref = corpus.read_parallel(data_dir, split, "en", "de")
        splits[split] = (src[:args.max_sentences], ref[:args.max_sentences])

    def bleu(split, options):
        src, ref = splits[split]
        hyps = translator.translate(src, options, batch_size=64)
        return score_corpus(hyps, ref), hyps

    # Tune alpha with beta = 0, then beta at the best alpha, on val.
    tuning = {}
    best = SearchOptions(beam_size=args.beam_size, length_penalty=0.0)
    best_bleu = bleu("val", best)[0].bleu
    tuning["alpha=0.0,beta=0.0"] = best_bleu
    for alpha in [float(a) for a in args.alphas.split(",")]:
        options = SearchOptions(beam_size=args.beam_size, length_penalty=alpha)
        tuning[f"alpha={alpha},beta=0.0"] = score = bleu("val", options)[0].bleu
        if score > best_bleu:
            best, best_bleu = options, score
    for beta in [float(b) for b in args.betas.split(",")]:
        options = SearchOptions(beam_size=args.beam_size,
                                length_penalty=best.length_penalty,
                                coverage_penalty=beta)
        tuning[f"alpha={best.length_penalty},beta={beta}"] = score = bleu("val", options)[0].bleu
        if score > best_bleu:
            best, best_bleu = options, score
    print(f"val tuning (BLEU): {json.dumps(tuning)}", flush=True)

    results = {"sacrebleu": {}, "chrf": {}, "signatures": {}}
    examples = []
    for split in splits:
        scores, hyps = bleu(split, best)
        results["sacrebleu"][split] = round(scores.bleu, 2)
        results["chrf"][split] = round(scores.chrf, 2)
        results["signatures"] = {"bleu": scores.bleu_signature,
                                 "chrf": scores.chrf_signature}
        print(f"{split}: {scores.format()}", flush=True)
        if split == "test_2016_flickr":
            examples = [{"src": s, "hyp": h, "ref": r} for s, h, r in
                        zip(splits[split][0][:5], hyps[:5], splits[split][1][:5])]

    test_src = splits["test_2016_flickr"][0]
    _, beam_rate = timed_translate(translator, test_src, best)
    _, greedy_rate = timed_translate(translator, test_src, SearchOptions(beam_size=1))
    results.update({
        "search": {"beam_size": best.beam_size, "alpha": best.length_penalty,
                   "beta": best.coverage_penalty, "early_stopping": best.early_stopping},
        "val_tuning_bleu": tuning,
        "train_minutes": round(progress["train_seconds"] / 60.0, 1),
        "train_steps": progress["step"],
        "train_target_tokens_per_s": round(
            progress["target_tokens"] / max(progress["train_seconds"], 1e-9), 1),
        "decode_sentences_per_s": {f"beam{best.beam_size}": round(beam_rate, 2),
                                   "greedy": round(greedy_rate, 2)},
        "model": args.preset,
        "load_average_1min_at_end": round(os.getloadavg()[0], 2),
        "examples": examples,
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs",
        "command": "python " + " ".join(
            shlex.quote(a) for a in [os.path.relpath(__file__)] + sys.argv[1:]),
    })
    out = pathlib.Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    print(json.dumps({k: results[k] for k in (
        "sacrebleu", "chrf", "train_minutes", "train_target_tokens_per_s",
        "decode_sentences_per_s")}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
