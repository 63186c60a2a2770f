"""Benchmark: GNMT's RL refinement (Wu et al. 2016, §5), BLEU and GLEU
before and after.

Scores an ML-trained model directory on val and test_2016_flickr, refines it
(`gnmt_tf.training.rl_refinement.refine_rl`: mixed objective, sampled
hypotheses, mean-reward baseline) into `--output-dir` for `--minutes`, and
scores the refined model the same way. Writes the `rl_refinement` section of
`benchmarks/results/decoding.json`.

    python benchmarks/decoding_rl.py --model-dir /tmp/ml_model \\
        --output-dir /tmp/ml_model-rl [--data-dir ../shared/data/multi30k] \\
        [--minutes 10] [--alpha 0.017] [--samples 4] [--sampler sample] \\
        [--set max_tokens=512 ...] [--beam-size 1] \\
        [--ml-note "how the ML model was trained"]

`--ml-note` records how the ML model was trained (its command and budget).
BLEU is sacreBLEU's (13a), GLEU the corpus GLEU of Wu et al. (NLTK's;
`gnmt_tf.evaluation.gleu`), both on detokenised text.
"""

import argparse
import json
import pathlib
import sys
import time

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))
sys.path.append(str(REPO_ROOT / "benchmarks"))  # results_file, after the packages

import gnmt_tf  # noqa: E402,F401  (TF_USE_LEGACY_KERAS before TensorFlow)

from results_file import command_line, update_section  # noqa: E402

RESULT = REPO_ROOT / "benchmarks" / "results" / "decoding.json"
SPLITS = ("val", "test_2016_flickr")


def evaluate(model_dir, data_dir, beam_size, batch_size=64):
    """`{split: {"bleu", "gleu", "seconds"}}` of a model directory."""
    from gnmt_tf.data import corpus
    from gnmt_tf.evaluation import corpus_gleu, score_corpus
    from gnmt_tf.model_dir import read_config
    from gnmt_tf.translator import SearchOptions, Translator

    payload = read_config(model_dir)
    translator = Translator.from_model_dir(model_dir)
    options = SearchOptions(beam_size=beam_size)
    scores = {}
    for split in SPLITS:
        src, ref = corpus.read_parallel(data_dir, split, payload["src_lang"],
                                        payload["tgt_lang"])
        start = time.monotonic()
        hyp = translator.translate(src, options, batch_size)
        scores[split] = {
            "bleu": round(score_corpus(hyp, ref).bleu, 2),
            "gleu": round(100 * corpus_gleu(hyp, ref), 2),
            "sentences": len(src),
            "seconds": round(time.monotonic() - start, 1)}
        print(f"{model_dir} {split}: {scores[split]}", flush=True)
    return scores


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", required=True)
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--data-dir",
                        default=str(REPO_ROOT.parent / "shared" / "data"
                                    / "multi30k"))
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--alpha", type=float, default=0.017)
    parser.add_argument("--samples", type=int, default=4)
    parser.add_argument("--sampler", default="sample")
    parser.add_argument("--set", dest="overrides", action="append",
                        default=[])
    parser.add_argument("--beam-size", type=int, default=1)
    parser.add_argument("--ml-note", default="")
    parser.add_argument("--output", default=str(RESULT))
    args = parser.parse_args(argv)

    from gnmt_tf.training.rl_refinement import RLOptions, refine_rl

    before = evaluate(args.model_dir, args.data_dir, args.beam_size)
    options = RLOptions(alpha=args.alpha, num_samples=args.samples,
                        sampler=args.sampler)
    start = time.monotonic()
    result = refine_rl(args.model_dir, args.output_dir, args.data_dir,
                       options, minutes=args.minutes,
                       overrides=args.overrides, log_every=5)
    wall = time.monotonic() - start
    after = evaluate(args.output_dir, args.data_dir, args.beam_size)
    steps, minutes = ml_training(args.model_dir)
    section = {
        "ml_model": {"note": args.ml_note, "steps": steps,
                     "train_minutes": round(minutes, 1)},
        "refinement": {"alpha": args.alpha, "samples": args.samples,
                       "sampler": args.sampler, "settings": args.overrides,
                       "minutes_budget": args.minutes,
                       "steps": result.steps,
                       "train_minutes": round(result.seconds / 60, 1),
                       "wall_minutes_with_setup": round(wall / 60, 1)},
        "search": f"beam {args.beam_size}" if args.beam_size > 1
        else "greedy",
        "before": before,
        "after": after,
        "delta": {split: {m: round(after[split][m] - before[split][m], 2)
                          for m in ("bleu", "gleu")} for split in SPLITS},
        "machine": "2 CPU cores shared with other jobs (load 5-10)",
    }
    update_section(args.output, "rl_refinement", section,
                   command_line("decoding_rl.py", argv))
    print(json.dumps(section, indent=2))


def ml_training(model_dir):
    """`(steps, minutes)` of the ML model's training: a run's
    progress.json, or a shipped model's scores.json (it has no progress)."""
    from gnmt_tf.pretrained import locate

    directory = locate(model_dir)
    progress = directory / "progress.json"
    if progress.exists():
        done = json.loads(progress.read_text())
        return done["step"], done["train_seconds"] / 60
    scores = json.loads((directory / "scores.json").read_text())
    return scores["train_steps"], scores["train_hours"] * 60


if __name__ == "__main__":
    main()
