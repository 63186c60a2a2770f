"""Benchmark: one 12-direction model against bilingual models, full budget.

`benchmarks/task_space_bleu.py` compares them at about a thousand steps;
this compares them at the shipped model's budget. The multi-direction model
is the first shipped `multi30k-transformer` (8000 steps of at most 4096
target tokens, kept in git history); each bilingual model is a
`transformer_small` run of one direction trained with the same settings and
the same number of steps, so both spend the same optimizer steps on the same
number of target tokens (the bilingual model all on its direction, the
multi-direction model on twelve). Both sides are the mean of their last
`--last` checkpoints in float16, as shipped, scored with sacreBLEU (beam 4,
length penalty 0.6) on Multi30k val, test_2016_flickr and test_2017_flickr.

    # the first shipped version of the multi-direction model
    git show 4cd1e49:gnmt_tf/pretrained/multi30k-transformer/...  > MULTI/...
    gnmt-tf train --preset transformer_small --model-dir runs/bi/en-de \\
        --directions en-de --tags caption --set train_steps=8000 ...
    python benchmarks/multi_vs_bilingual.py --multi MULTI \\
        --bilingual en-de=runs/bi/en-de [--bilingual en-fr=runs/bi/en-fr]

A bilingual run is averaged into `<run>-avg<last>` the first time (kept for
reruns). A run that has not reached the multi-direction model's steps is
reported with its steps and marked `partial_budget`.
"""

import argparse
import json
import os
import pathlib
import platform

# benchmarks/ is sys.path[0]; results_file puts the repository after it.
from results_file import command_line, write_text_atomic  # noqa: E402
from model_zoo import SPLITS, cpu_name, evaluate  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
RESULTS = HERE / "results" / "multi_vs_bilingual.json"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--multi", required=True,
                        help="the multi-direction model dir (averaged)")
    parser.add_argument("--multi-steps", type=int, default=8000,
                        help="its training steps (the budget)")
    parser.add_argument("--bilingual", action="append", required=True,
                        metavar="SRC-TGT=RUN_DIR",
                        help="a bilingual training run (repeatable)")
    parser.add_argument("--last", type=int, default=5,
                        help="checkpoints to average per bilingual run")
    parser.add_argument("--data-dir", default=os.environ.get(
        "GNMT_TF_DATA", str(HERE.parent.parent / "shared/data/multi30k")))
    parser.add_argument("--beam-size", type=int, default=4)
    parser.add_argument("--alpha", type=float, default=0.6)
    parser.add_argument("--limit", type=int, default=None,
                        help="score the first N sentences only (smoke)")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    runs = {}
    for item in args.bilingual:
        direction, sep, run_dir = item.partition("=")
        if not sep or direction.count("-") != 1 or not run_dir:
            parser.error(f"--bilingual {item!r}: expected SRC-TGT=RUN_DIR")
        runs[direction] = pathlib.Path(run_dir)
    args.bilingual = runs
    if args.last < 1 or args.multi_steps < 1 or args.beam_size < 1:
        parser.error("--last, --multi-steps and --beam-size must be >= 1")
    if args.limit is not None and args.limit < 1:
        parser.error("--limit must be >= 1")
    return args


def averaged_model(run_dir, last):
    """`(model dir, training record)` of the mean of a run's last
    checkpoints, in float16 like the shipped models."""
    from gnmt_tf.training.averaging import average_checkpoints

    target = run_dir.parent / f"{run_dir.name}-avg{last}"
    if not target.exists():
        average_checkpoints(run_dir, target, last=last, weights_only=True)
    averaged = json.loads((target / "averaged.json").read_text())
    progress = json.loads((run_dir / "progress.json").read_text())
    steps = int(averaged["checkpoints"][-1].rsplit("-", 1)[-1])
    config = json.loads((run_dir / "config.json").read_text())
    return target, {"steps": steps, "checkpoints": averaged["checkpoints"],
                    "target_tokens": progress.get("target_tokens"),
                    "train": config.get("train")}


def compare(multi_scores, bilingual_scores, directions):
    """Per direction and split: both BLEU scores, bilingual minus multi, and
    which wins on every split (`"tie"` when neither wins them all)."""
    table = {}
    for direction in directions:
        rows = {}
        for split, bleu in bilingual_scores[direction].items():
            multi = multi_scores[direction][split]
            rows[split] = {"multi": multi, "bilingual": bleu,
                           "bilingual_minus_multi": round(bleu - multi, 2)}
        differences = [r["bilingual_minus_multi"] for r in rows.values()]
        winner = ("bilingual" if all(d > 0 for d in differences) else
                  "multi" if all(d < 0 for d in differences) else "tie")
        table[direction] = {"splits": rows, "winner": winner}
    return table


def main(argv=None):
    args = parse_args(argv)
    from gnmt_tf.translator import SearchOptions

    options = SearchOptions(beam_size=args.beam_size,
                            length_penalty=args.alpha)
    directions = sorted(args.bilingual)
    multi = evaluate(args.multi, args.data_dir, None, options,
                     limit=args.limit, directions=directions)
    bilingual, training = {}, {}
    for direction in directions:
        model_dir, record = averaged_model(args.bilingual[direction],
                                           args.last)
        bilingual[direction] = evaluate(
            model_dir, args.data_dir, None, options, limit=args.limit,
            directions=[direction])["sacrebleu"][direction]
        record["partial_budget"] = record["steps"] < args.multi_steps
        training[direction] = record
    results = {
        "comparison": compare(multi["sacrebleu"], bilingual, directions),
        "bilingual_training": training,
        "multi_steps": args.multi_steps,
        "settings": {"beam_size": args.beam_size, "alpha": args.alpha,
                     "splits": list(SPLITS), "last_checkpoints": args.last,
                     "limit": args.limit,
                     "bleu_signature": multi["signatures"].get("bleu"),
                     "cpu": cpu_name(), "machine": platform.machine()},
        "command": command_line("multi_vs_bilingual.py", argv),
    }
    write_text_atomic(args.out, json.dumps(results, indent=2) + "\n")
    print(json.dumps(results["comparison"], indent=1))


if __name__ == "__main__":
    main()
