"""Benchmark: one task-space Transformer for 12 Multi30k directions.

Trains five `transformer_small` models with the same compute budget each
(the same number of optimizer steps of the same `max_tokens` target tokens),
then scores them with sacreBLEU (beam 4) on test_2016_flickr and
test_2017_flickr (which has no Czech):

    multi                   all 12 directions, task-space encodings
    bilingual_en-de         en->de only, same architecture
    bilingual_en-fr         en->fr only
    zero_shot               10 directions: all except fr<->cs
    zero_shot_tag_baseline  the same 10 directions, no task-space encodings,
                            a `<2xx>` target-language token on the source
                            (Johnson et al. 2017)

`zero_shot` against `zero_shot_tag_baseline` is both the zero-shot
comparison (fr->cs, cs->fr) and the task-space ablation (the supervised
en->de / en->fr scores of two models trained the same way, with and
without task-space encodings; without them *and* without a language token
a multi-direction model cannot know what to translate into).

It also plots the learned encoder- and decoder-side direction embeddings
(`E_src[s] + E_tgt[t]` of each side's `TaskSpaceEncoding`) of `multi` in 2-D
(PCA) and merges the decoding-speed figures of
`benchmarks/task_space_decode_speed.py` into the results file
`benchmarks/results/task_space.json`.

Stages run separately so trainings can go to background jobs:

    python benchmarks/task_space_bleu.py train multi --steps 1000
    python benchmarks/task_space_bleu.py evaluate multi
    python benchmarks/task_space_bleu.py report
    python benchmarks/task_space_bleu.py all --steps 1000   # everything

Training resumes from the run's checkpoints; evaluation results are cached
in `<run>/bleu.json`.
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
from gnmt_tf.progress import progress

HERE = pathlib.Path(__file__).resolve().parent
ZERO_SHOT = ("fr-cs", "cs-fr")
SUPERVISED_PROBES = ("en-de", "en-fr")

# name -> (direction spec, --set overrides, directions to evaluate).
RUNS = {
    "multi": ("all", [], "all"),
    "bilingual_en-de": ("en-de", [], "en-de"),
    "bilingual_en-fr": ("en-fr", [], "en-fr"),
    "zero_shot": ("all-except:fr-cs,cs-fr", [],
                  ",".join(ZERO_SHOT + SUPERVISED_PROBES)),
    "zero_shot_tag_baseline": (
        "all-except:fr-cs,cs-fr",
        ["use_task_space=false", "target_language_token=true"],
        ",".join(ZERO_SHOT + SUPERVISED_PROBES)),
}
TEST_SPLITS = ("test_2016_flickr", "test_2017_flickr")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stage", choices=("train", "evaluate", "report",
                                          "all"))
    parser.add_argument("runs", nargs="*", default=list(RUNS),
                        help=f"runs for train/evaluate (default: all of "
                             f"{', '.join(RUNS)})")
    parser.add_argument("--data-dir", default=os.environ.get(
        "GNMT_TF_DATA", str(HERE.parent.parent / "shared/data/multi30k")))
    parser.add_argument("--runs-dir", default=str(HERE / "runs" /
                                                  "task_space"))
    parser.add_argument("--preset", default="transformer_small")
    parser.add_argument("--steps", type=int, default=1000,
                        help="optimizer steps per model (the budget)")
    parser.add_argument("--set", dest="overrides", action="append",
                        default=[], help="extra key=value for every run")
    parser.add_argument("--beam-size", type=int, default=4)
    parser.add_argument("--alpha", type=float, default=0.6)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--max-sentences", type=int, default=None,
                        help="score the first N test sentences only (smoke)")
    parser.add_argument("--output", default=str(HERE / "results" /
                                                "task_space.json"))
    parser.add_argument("--plot", default=str(
        HERE / "results" / "task_space_direction_embeddings.png"))
    args = parser.parse_args(argv)
    unknown = sorted(set(args.runs) - set(RUNS))
    if unknown:
        parser.error(f"unknown runs {unknown}; known: {list(RUNS)}")
    return args


# Budget settings shared by every run (on top of the preset's TrainConfig):
# a short warm-up because the budget is about a thousand steps.
BUDGET_OVERRIDES = ["max_tokens=2048", "warmup_steps=300",
                    "learning_rate=0.002", "checkpoint_every=100",
                    "validation_lines=0"]


def train(args, name):
    from gnmt_tf.config import split_overrides
    from gnmt_tf.models.task_space.training import (TaskSpaceOptions, get_preset,
                                                    train_task_space)

    directions, overrides, _ = RUNS[name]
    model_config, train_config = get_preset(args.preset)
    overrides = BUDGET_OVERRIDES + [f"train_steps={args.steps}"] + \
        overrides + args.overrides
    model_config, train_config, options = split_overrides(
        overrides, model_config, train_config, TaskSpaceOptions())
    start = time.time()
    result = train_task_space(pathlib.Path(args.runs_dir) / name,
                              args.data_dir, directions, model_config,
                              train_config, options, log_every=50)
    print(f"{name}: {result.steps} steps, {result.seconds / 60:.1f} min of "
          f"training ({time.time() - start:.0f} s this call), "
          f"{result.target_tokens_per_s:.0f} target tokens/s",
          file=sys.stderr)


def evaluate(args, name):
    """sacreBLEU of one run on every test split its directions exist in;
    cached in `<run>/bleu.json`."""
    from gnmt_tf.evaluation import score_corpus
    from gnmt_tf.translator import SearchOptions, Translator
    from gnmt_tf.data import multiway as data_lib

    run_dir = pathlib.Path(args.runs_dir) / name
    cache = run_dir / "bleu.json"
    if cache.exists():
        return json.loads(cache.read_text())
    translator = Translator.from_model_dir(run_dir)
    options = SearchOptions(beam_size=args.beam_size,
                            length_penalty=args.alpha)
    scores, seconds, tokens = {}, 0.0, 0
    for split in TEST_SPLITS:
        for src, tgt in progress(data_lib.parse_directions(RUNS[name][2]),
                                 desc=f"{name} {split}"):
            try:
                examples = data_lib.load_multi30k(
                    args.data_dir, split, [(src, tgt)],
                    max_lines=args.max_sentences)
            except FileNotFoundError:  # no Czech in test_2017_flickr
                continue
            start = time.perf_counter()
            hypotheses = translator.translate(
                examples.sources, options, args.batch_size, src_lang=src,
                tgt_lang=tgt, tags=("caption",))
            seconds += time.perf_counter() - start
            tokens += sum(len(h.split()) for h in hypotheses)
            result = score_corpus(hypotheses, examples.targets)
            scores.setdefault(f"{src}-{tgt}", {})[split] = {
                "bleu": round(result.bleu, 2), "chrf": round(result.chrf, 2)}
            print(f"{name} {src}-{tgt} {split}: BLEU {result.bleu:.2f} "
                  f"chrF2 {result.chrf:.2f}", file=sys.stderr)
    progress = json.loads((run_dir / "progress.json").read_text())
    payload = {"scores": scores, "bleu_signature": result.bleu_signature,
               "train": {"steps": progress.get("step"),
                         "wall_minutes": round(progress["train_seconds"] / 60,
                                               1),
                         "target_tokens": progress["target_tokens"]},
               "decode_words_per_s": round(tokens / seconds, 1)}
    cache.write_text(json.dumps(payload, indent=2) + "\n")
    return payload


def direction_embeddings(run_dir):
    """`{side: (labels, [12, d] array)}` of `E_src[s] + E_tgt[t]`."""
    from gnmt_tf.model_dir import load_model
    from gnmt_tf.data.multiway import all_directions

    model, _, _ = load_model(run_dir)
    config = model.config
    result = {}
    for side, encoding in (("encoder", model.encoder_task_encoding),
                           ("decoder", model.decoder_task_encoding)):
        src = encoding.source_language_embeddings.numpy()
        tgt = encoding.target_language_embeddings.numpy()
        labels, rows = [], []
        for s, t in all_directions(config.languages):
            labels.append(f"{s}-{t}")
            rows.append(src[config.language_id(s)] + tgt[config.language_id(t)])
        result[side] = (labels, rows)
    return result


def plot_direction_embeddings(run_dir, path):
    """PCA of both sides' direction embeddings into one PNG; returns the
    cosine similarity of the two sides' (centred) direction vectors."""
    try:
        import matplotlib
    except ImportError as e:
        raise ImportError("the benchmark figures need matplotlib: pip "
                          "install 'gnmt-tf[bench]'") from e
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    sides = direction_embeddings(run_dir)
    fig, axes = plt.subplots(1, 2, figsize=(11, 5))
    similarity = {}
    for ax, (side, (labels, rows)) in zip(axes, sides.items()):
        x = np.asarray(rows)
        x = x - x.mean(axis=0)
        _, _, vt = np.linalg.svd(x, full_matrices=False)  # PCA by SVD
        points = x @ vt[:2].T
        ax.scatter(points[:, 0], points[:, 1])
        for label, (px, py) in zip(labels, points):
            ax.annotate(label, (px, py), fontsize=9)
        ax.set_title(f"{side}-side direction embeddings (PCA)")
        ax.set_xlabel("PC 1")
        ax.set_ylabel("PC 2")
        similarity[side] = x
    fig.tight_layout()
    pathlib.Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    enc, dec = similarity["encoder"], similarity["decoder"]
    cosine = float((enc * dec).sum() / (np.linalg.norm(enc) *
                                         np.linalg.norm(dec)))
    return cosine


def report(args):
    runs = {}
    for name in RUNS:
        cache = pathlib.Path(args.runs_dir) / name / "bleu.json"
        if cache.exists():
            runs[name] = json.loads(cache.read_text())
        else:
            print(f"missing: {name} has not been evaluated", file=sys.stderr)

    def bleu_table(name, directions=None):
        scores = runs.get(name, {}).get("scores", {})
        return {d: {split: v["bleu"] for split, v in s.items()}
                for d, s in scores.items()
                if directions is None or d in directions}

    def zero_shot(name):
        scores = runs.get(name, {}).get("scores", {})
        return {d: scores[d]["test_2016_flickr"]["bleu"]
                for d in ZERO_SHOT if d in scores}

    results = {
        "multi_direction": bleu_table("multi"),
        "bilingual": {d: bleu_table(f"bilingual_{d}").get(d, {})
                      for d in SUPERVISED_PROBES},
        "zero_shot": zero_shot("zero_shot"),
        "zero_shot_tag_baseline": zero_shot("zero_shot_tag_baseline"),
        "ablation_task_space": {
            "with_task_space": bleu_table("zero_shot", SUPERVISED_PROBES),
            "without_task_space_target_token": bleu_table(
                "zero_shot_tag_baseline", SUPERVISED_PROBES),
            "note": "the two zero-shot models (10 directions, same steps): "
                    "task-space encodings vs a <2xx> target-language token",
        },
        "chrf": {name: {d: {split: v["chrf"] for split, v in s.items()}
                        for d, s in run["scores"].items()}
                 for name, run in runs.items()},
        "training": {name: run["train"] for name, run in runs.items()},
    }
    speed_path = HERE / "results" / "task_space_decode_speed.json"
    if speed_path.exists():
        speed = json.loads(speed_path.read_text())
        results["decode_target_tokens_per_s"] = {
            k: v for k, v in speed.items() if k.startswith(("ours",
                                                             "ctranslate2"))}
        results["decode_speed_command"] = speed.get("command")
    if "multi" in runs:
        results["direction_embeddings_plot"] = os.path.relpath(
            args.plot, HERE.parent)
        results["direction_embeddings_encoder_decoder_cosine"] = round(
            plot_direction_embeddings(pathlib.Path(args.runs_dir) / "multi",
                                      args.plot), 3)
    signature = next(iter(runs.values()))["bleu_signature"] if runs else None
    results["settings"] = {
        "preset": args.preset,
        "steps_per_model": {name: run["train"]["steps"]
                            for name, run in runs.items()},
        "budget_overrides": BUDGET_OVERRIDES + args.overrides,
        "budget": "the same optimizer steps of at most max_tokens target "
                  "tokens for every model; wall minutes include contention "
                  "with other jobs and pauses, so they are not comparable",
        "beam_size": args.beam_size, "alpha": args.alpha,
        "bleu_signature": signature, "cpu_count": os.cpu_count(),
        "machine": platform.machine(),
    }
    script = "python benchmarks/task_space_bleu.py"
    extra = " ".join(shlex.quote(f"--set={o}") for o in args.overrides)
    results["command"] = "; ".join(
        [f"{script} train {name} --steps {run['train']['steps']} {extra}".strip()
         for name, run in runs.items()]
        + [f"{script} evaluate", f"{script} report"])
    pathlib.Path(args.output).write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps({k: results[k] for k in ("multi_direction", "bilingual",
                                              "zero_shot",
                                              "zero_shot_tag_baseline")},
                     indent=1))


def main(argv=None):
    args = parse_args(argv)
    if args.stage in ("train", "all"):
        for name in args.runs:
            train(args, name)
    if args.stage in ("evaluate", "all"):
        for name in args.runs:
            evaluate(args, name)
    if args.stage in ("report", "all"):
        report(args)


if __name__ == "__main__":
    main()
