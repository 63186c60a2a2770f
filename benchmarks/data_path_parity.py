"""Nothing lost on the streaming data path: the same training on Multi30k
through the in-memory reader and through prepared shards, two seeds each.

For each seed and each path, `gnmt-tf train --preset transformer_small`
en->de on Multi30k train, the same budget (`--steps` steps, 4,096-token
batches, learning rate 0.001 with 200 warm-up steps, the shipped
`multi30k-transformer` vocabulary, scene tag `caption`), then `gnmt-tf
evaluate` on val (greedy, sacreBLEU). The in-memory path reads `--data-dir`; the streaming path reads
the shards of `gnmt-tf data prepare` (default cleaning: empty, over-long,
length-ratio outliers, duplicates and copies dropped, counted in the
manifest). The seed-to-seed difference on each path is the noise the
difference between the paths is compared with.

    python benchmarks/data_path_parity.py                 # 2 seeds, 600 steps
    python benchmarks/data_path_parity.py --steps 50 --seeds 1   # a quick look

Writes `benchmarks/results/data_path_parity.json` (after each run, so a
stopped run keeps what it measured).
"""

import argparse
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "benchmarks"))
sys.path.insert(0, str(REPO_ROOT))

from data_scale import (DATA_DIR, SPM, gnmt_tf, positive_int,  # noqa: E402
                        run_measured, write)

RESULT = REPO_ROOT / "benchmarks" / "results" / "data_path_parity.json"
PATHS = ("in_memory", "streaming")


def train_args(path, model_dir, seed, steps, data_dir, config):
    data = (["--data-dir", data_dir, "--directions", "en-de"]
            if path == "in_memory" else ["--data-config", config])
    return gnmt_tf(
        "train", "--preset", "transformer_small", "--model-dir", model_dir,
        *data, "--vocab", SPM, "--set", f"seed={seed}",
        "--set", f"train_steps={steps}", "--set", "max_tokens=4096",
        "--set", "learning_rate=0.001", "--set", "warmup_steps=200",
        "--set", f"checkpoint_every={steps}", "--set", "bleu_every=0",
        "--log-every", "100")


def val_bleu(model_dir, data_dir, work):
    scores = work / f"{pathlib.Path(model_dir).name}.scores.json"
    run_measured(gnmt_tf("evaluate", "--model", model_dir, "--data-dir",
                         data_dir, "--split", "val", "--directions", "en-de",
                         "--beam-size", "1",
                         "--scores-json", scores), dict(os.environ))
    data = json.loads(scores.read_text())
    return data


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=positive_int, default=600)
    parser.add_argument("--seeds", type=positive_int, default=2)
    parser.add_argument("--data-dir", default=str(DATA_DIR))
    parser.add_argument("--work", help="working directory (default: a "
                                       "temporary one)")
    parser.add_argument("--out", default=str(RESULT))
    args = parser.parse_args(argv)
    work = pathlib.Path(args.work or tempfile.mkdtemp(prefix="parity_"))
    work.mkdir(parents=True, exist_ok=True)
    data_dir = pathlib.Path(args.data_dir)
    config = work / "data.json"
    config.write_text(json.dumps({"prepared": "prepared", "corpora": [{
        "src_lang": "en", "tgt_lang": "de", "format": "text",
        "source": str(data_dir / "train.en.gz"),
        "target": str(data_dir / "train.de.gz")}]}))
    prepare_s, _, _ = run_measured(
        gnmt_tf("data", "prepare", "--data-config", config),
        dict(os.environ))
    manifest = json.loads((work / "prepared" / "manifest.json").read_text())
    runs = []
    for seed in range(1, args.seeds + 1):
        for path in PATHS:
            model_dir = work / f"{path}-{seed}"
            start = time.perf_counter()
            train_s, _, lines = run_measured(
                train_args(path, model_dir, seed, args.steps, data_dir,
                           config), dict(os.environ))
            scores = val_bleu(model_dir, data_dir, work)
            runs.append({"path": path, "seed": seed, "train_seconds":
                         round(train_s, 1), "val_scores": scores,
                         "wall_seconds": round(time.perf_counter() - start,
                                               1)})
            print(f"{path} seed {seed}: {json.dumps(scores)}", flush=True)
            write(pathlib.Path(args.out),
                  summary(args, argv, prepare_s, manifest, runs))
    return 0


def _bleu(scores):
    """The en-de val BLEU in `gnmt-tf evaluate --scores-json`'s output."""
    rows = scores["rows"] if "rows" in scores else scores
    row = rows[0] if isinstance(rows, list) else next(iter(rows.values()))
    return float(row["bleu"])


def summary(args, argv, prepare_s, manifest, runs):
    from results_file import command_line

    bleu = {path: {r["seed"]: _bleu(r["val_scores"]) for r in runs
                   if r["path"] == path} for path in PATHS}
    result = {
        "command": command_line("data_path_parity.py", argv),
        "machine": f"{os.cpu_count()} CPUs",
        "steps": args.steps,
        "prepare_seconds": round(prepare_s, 1),
        "prepare_counts": manifest.get("counts"),
        "runs": runs,
        "val_bleu": bleu,
    }
    means = {p: statistics.mean(b.values()) for p, b in bleu.items() if b}
    if len(means) == 2:
        result["mean_val_bleu"] = {p: round(m, 2) for p, m in means.items()}
        result["streaming_minus_in_memory"] = round(
            means["streaming"] - means["in_memory"], 2)
    spreads = [max(b.values()) - min(b.values()) for b in bleu.values()
               if len(b) > 1]
    if spreads:
        result["seed_spread"] = round(max(spreads), 2)
    return result


if __name__ == "__main__":
    sys.exit(main())
