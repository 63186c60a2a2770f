"""Training choices compared at equal steps, from the runs' own logs.

Each run is a model directory trained by `gnmt-tf train` (a GNMT or a
task-space Transformer preset) with the same vocabulary, data and seed;
what differs is in its `config.json`. The trainer logs, every checkpoint
interval, the validation loss (label-smoothed, on all of val) and every
`bleu_every` steps the greedy BLEU of the first `bleu_lines` val
sentences (`metrics.csv`). This script lines them up by step, names what
each run changed against the first (the baseline) and writes
`benchmarks/results/gnmt_ablation.json` (`--output`, `--key`; `runs`: per
run its changes, steps, wall minutes and per-step validation figures;
`command`). With `--val-bleu DIRECTION` it also scores each run's last
checkpoint on all of val with beam search (`val_bleu`): the label-smoothed
loss does not compare across label-smoothing settings, BLEU does.

    python benchmarks/gnmt_ablation.py \\
        --run baseline=/work/zoo/multi30k-gnmt-en-de \\
        --run input_feeding=/work/ab/if \\
        --run input_feeding+dropout0.3=/work/ab/if_d3

    python benchmarks/gnmt_ablation.py --run baseline=/work/ab/base \\
        --run label_smoothing_0=/work/ab/ls0 --val-bleu en-de \\
        --data-dir ../shared/data/multi30k --key multi30k_transformer_en_de \\
        --output benchmarks/results/transformer_ablation.json
"""

import argparse
import json
import pathlib
import sys

from results_file import REPO_ROOT, command_line, update_section
from gnmt_tf.flags.arg_types import non_negative_float, positive_int

RESULTS = REPO_ROOT / "benchmarks" / "results" / "gnmt_ablation.json"
# Fields that do not change what is learned (budgets, logging, bookkeeping).
IGNORED = {"max_minutes", "train_steps", "checkpoint_every",
           "keep_checkpoints", "bleu_every", "bleu_lines"}
# What a run whose config.json predates a field ran with.
BEFORE_FIELD = {"input_feeding": False, "recompute": False,
                "bucket_width": 0, "jit_compile": False}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", action="append", required=True,
                        metavar="NAME=MODEL_DIR",
                        help="a run; the first is the baseline")
    parser.add_argument("--key", default="multi30k_en_de",
                        help="the results file key this comparison replaces")
    parser.add_argument("--output", default=str(RESULTS))
    parser.add_argument("--val-bleu", metavar="SRC-TGT",
                        help="also score each run's last checkpoint on all "
                             "of val in this direction (beam search)")
    parser.add_argument("--data-dir", help="Multi30k (for --val-bleu)")
    parser.add_argument("--beam-size", type=positive_int, default=4)
    parser.add_argument("--alpha", type=non_negative_float, default=0.6)
    args = parser.parse_args(argv)
    if args.val_bleu and not args.data_dir:
        parser.error("--val-bleu needs --data-dir")
    return args


def read_run(model_dir):
    """`(config fields, {step: {metric: value}}, progress)` of a run."""
    from gnmt_tf.training.callbacks import read_progress
    from gnmt_tf.training.metrics_log import read_metrics

    model_dir = pathlib.Path(model_dir)
    payload = json.loads((model_dir / "config.json").read_text())
    fields = {**BEFORE_FIELD, **payload["model"], **payload["train"]}
    validation = {}
    for row in read_metrics(model_dir):
        if row.split == "validation":
            validation.setdefault(row.step, {})[row.metric] = round(
                row.value, 4)
    return fields, validation, read_progress(model_dir / "progress.json")


def changes(fields, baseline):
    """`{field: value}` where `fields` differ from `baseline`."""
    return {k: v for k, v in fields.items()
            if k not in IGNORED and baseline.get(k) != v}


def main(argv=None):
    args = parse_args(argv)
    runs = []
    for spec in args.run:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            print(f"error: --run takes NAME=MODEL_DIR, got {spec!r}",
                  file=sys.stderr)
            return 2
        try:
            runs.append((name, *read_run(path)))
        except (OSError, ValueError, KeyError) as e:
            print(f"error: {path}: {e}", file=sys.stderr)
            return 2
    baseline = runs[0][1]
    result = {"runs": {}}
    for name, fields, validation, progress in runs:
        result["runs"][name] = {
            "changes": changes(fields, baseline),
            "steps": progress.get("step"),
            "train_minutes": round(progress.get("train_seconds", 0) / 60, 1),
            "validation": {str(step): values
                           for step, values in sorted(validation.items())}}
    if args.val_bleu:
        import zoo_tuning  # (this script's folder)

        for (name, *_), spec in zip(runs, args.run):
            path = pathlib.Path(spec.partition("=")[2])
            bleu = zoo_tuning.val_bleu(
                path, [args.val_bleu], args.data_dir, args.alpha,
                args.beam_size, 32, None)[args.val_bleu]
            result["runs"][name]["val_bleu"] = bleu
            print(f"{name}: val BLEU {bleu} ({args.val_bleu}, beam "
                  f"{args.beam_size}, alpha {args.alpha})", flush=True)
        result["val_bleu_settings"] = {
            "direction": args.val_bleu, "beam_size": args.beam_size,
            "alpha": args.alpha, "checkpoint": "last", "split": "val"}
    steps = sorted({s for _, _, v, _ in runs for s in v})
    print("step  " + "  ".join(f"{name:>24}" for name, *_ in runs))
    for step in steps:
        cells = []
        for _, _, validation, _ in runs:
            values = validation.get(step, {})
            cells.append(f"{values.get('loss', float('nan')):>10.4f} "
                         f"{values.get('bleu', float('nan')):>6.2f}       ")
        print(f"{step:>5} " + "  ".join(cells))
    update_section(args.output, args.key, result,
                   command_line("gnmt_ablation.py", argv))
    print(f"wrote {args.output} [{args.key}]", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
