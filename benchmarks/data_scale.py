"""Training input at scale: does the streaming data path stay flat from 1k to
5M sentence pairs?

No large public corpus can be downloaded here, so the corpus is synthetic:
each pair joins two random Multi30k en-de training pairs (source to source,
target to target), which gives unique, realistic-length pairs (about 26
words a side) at any count. It is about scale, not quality. One pass writes
gzip TSV files of 1k, 100k, 1M and 5M pairs (each a prefix of the next).

For each size, in one run:
- `gnmt-tf data prepare` (cleaning, dedup, shards): `prepare_seconds`,
  `prepare_pairs_per_s`, `prepare_peak_rss_mb`, `disk_mb` of the shards;
- `gnmt-tf train --preset transformer_small --data-config ...` at 2,048-token
  batches for `--steps` steps: `seconds_to_first_step` (from the command
  starting to the first step's log line, TensorFlow's import included),
  `peak_rss_mb`, and `target_tokens_per_s` over the steps after the first
  logged one, with its ratio to the 1k-pair run.

The vocabulary is the shipped `multi30k-transformer`'s (`--vocab`), so the
figures measure the data path, not SentencePiece training (which reads a
bounded sample whatever the corpus size).

    python benchmarks/data_scale.py                      # 1k,100k,1M,5M; 200 steps
    python benchmarks/data_scale.py --sizes 1000,100000 --steps 50   # a quick look

Writes `benchmarks/results/data_scale.json`.
"""

import argparse
import gzip
import json
import os
import pathlib
import random
import re
import subprocess
import sys
import tempfile
import time

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "benchmarks"))
sys.path.insert(0, str(REPO_ROOT))

RESULT = REPO_ROOT / "benchmarks" / "results" / "data_scale.json"
DATA_DIR = REPO_ROOT.parent / "shared" / "data" / "multi30k"
SPM = REPO_ROOT / "gnmt_tf" / "pretrained" / "multi30k-transformer" / "spm.model"
STEP_LINE = re.compile(r"^step (\d+)\s+loss [\d.]+\s+tgt_tok/s (\d+)")


def positive_ints(text):
    values = [int(v) for v in text.split(",") if v.strip()]
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError("a comma-separated list of "
                                         "integers >= 1")
    return sorted(values)


def positive_int(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be >= 1")
    return value


def read_gz(path):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def write_corpora(work, sizes, seed=1):
    """One pass writes `corpus_<n>.tsv.gz` for each size (prefixes of the
    largest); returns {size: path}."""
    # A few Multi30k lines hold a tab, which would add a TSV column.
    src = [s.replace("\t", " ") for s in read_gz(DATA_DIR / "train.en.gz")]
    tgt = [t.replace("\t", " ") for t in read_gz(DATA_DIR / "train.de.gz")]
    rng = random.Random(seed)
    paths = {n: work / f"corpus_{n}.tsv.gz" for n in sizes}
    files = {n: gzip.open(p, "wt", encoding="utf-8", compresslevel=1)
             for n, p in paths.items()}
    try:
        count = len(src)
        for i in range(max(sizes)):
            a, b = rng.randrange(count), rng.randrange(count)
            line = f"{src[a]} {src[b]}\t{tgt[a]} {tgt[b]}\n"
            for n, f in files.items():
                if i < n:
                    f.write(line)
    finally:
        for f in files.values():
            f.close()
    return paths


def run_measured(argv, env, on_line=None):
    """Runs `argv`; returns (seconds, peak RSS MB of the process tree's
    largest process, stdout+stderr lines with their times)."""
    wrapper = ("import resource, subprocess, sys\n"
               "code = subprocess.call(sys.argv[1:])\n"
               "print('PEAK_RSS_KB', resource.getrusage("
               "resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n"
               "sys.exit(code)\n")
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", wrapper, *argv], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    lines, peak_kb = [], None
    for line in proc.stdout:
        now = time.perf_counter() - start
        if line.startswith("PEAK_RSS_KB"):
            peak_kb = int(line.split()[1])
            continue
        lines.append((now, line.rstrip("\n")))
        if on_line:
            on_line(now, line.rstrip("\n"))
    code = proc.wait()
    seconds = time.perf_counter() - start
    if code != 0:
        tail = "\n".join(text for _, text in lines[-15:])
        raise RuntimeError(f"{' '.join(argv[:4])} failed ({code}):\n{tail}")
    return seconds, (peak_kb or 0) / 1024, lines


def gnmt_tf(*args):
    return [sys.executable, "-m", "gnmt_tf.cli.main", *map(str, args)]


def disk_mb(path):
    return sum(p.stat().st_size for p in pathlib.Path(path).rglob("*")
               if p.is_file()) / 2**20


def measure_size(work, size, corpus, steps, env):
    config = work / f"data_{size}.json"
    prepared = work / f"prepared_{size}"
    config.write_text(json.dumps({
        "prepared": str(prepared),
        "corpora": [{"name": "synthetic", "src_lang": "en", "tgt_lang": "de",
                     "format": "tsv", "path": str(corpus)}]}))
    print(f"[{size:,} pairs] prepare", flush=True)
    prep_s, prep_rss, prep_lines = run_measured(
        gnmt_tf("data", "prepare", "--data-config", config), env)
    model_dir = work / f"model_{size}"
    print(f"[{size:,} pairs] train {steps} steps", flush=True)
    steps_seen = []
    _, train_rss, _ = run_measured(
        gnmt_tf("train", "--preset", "transformer_small", "--data-config",
                config, "--model-dir", model_dir, "--vocab", SPM,
                "--log-every", "1", "--set", "max_tokens=2048",
                "--set", f"train_steps={steps}", "--set", "bleu_every=0",
                "--set", f"checkpoint_every={steps}",
                "--set", "validation_lines=0"),
        env, on_line=lambda t, line: _step(t, line, steps_seen))
    if len(steps_seen) < 2:
        raise RuntimeError(f"{size}: fewer than two step lines")
    # The first step's log line: from the command's start. Throughput: the
    # mean of the tokens/s the later steps' lines report (the first step
    # traces the graph).
    first_time = steps_seen[0][0]
    later = [rate for _, _, rate in steps_seen[1:]]
    return {
        "pairs": size,
        "prepare_seconds": round(prep_s, 1),
        "prepare_pairs_per_s": round(size / prep_s),
        "prepare_peak_rss_mb": round(prep_rss, 1),
        "prepare_report": [text for _, text in prep_lines][-12:],
        "disk_mb": round(disk_mb(prepared), 1),
        "seconds_to_first_step": round(first_time, 1),
        "first_logged_step": steps_seen[0][1],
        "peak_rss_mb": round(train_rss, 1),
        "target_tokens_per_s": round(sum(later) / len(later)),
        "steps": steps,
    }


def _step(now, line, seen):
    match = STEP_LINE.match(line)
    if match:
        seen.append((now, int(match.group(1)), int(match.group(2))))
        print(f"    {line}", flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=positive_ints,
                        default=[1000, 100_000, 1_000_000, 5_000_000])
    parser.add_argument("--steps", type=positive_int, default=200)
    parser.add_argument("--work-dir", help="keep the corpora and shards here "
                        "(default: a temporary directory, removed)")
    parser.add_argument("--out", default=str(RESULT))
    args = parser.parse_args(argv)

    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    with tempfile.TemporaryDirectory(dir=args.work_dir) as tmp:
        work = pathlib.Path(tmp)
        start = time.perf_counter()
        corpora = write_corpora(work, args.sizes)
        generate_s = time.perf_counter() - start
        print(f"generated {max(args.sizes):,} pairs in {generate_s:.0f} s",
              flush=True)
        rows = []
        for n in args.sizes:
            rows.append(measure_size(work, n, corpora[n], args.steps, env))
            write(args.out, result(args, argv, generate_s, rows))
    for row in rows:
        print(f"{row['pairs']:>9,} pairs: prepare {row['prepare_seconds']} s "
              f"({row['prepare_pairs_per_s']:,}/s, "
              f"{row['prepare_peak_rss_mb']} MB), first step "
              f"{row['seconds_to_first_step']} s, peak RSS "
              f"{row['peak_rss_mb']} MB, {row['target_tokens_per_s']} tok/s "
              f"({row['target_tokens_per_s_ratio_to_smallest']}x), shards "
              f"{row['disk_mb']} MB", flush=True)
    print(f"wrote {args.out}")
    return 0


def result(args, argv, generate_s, rows):
    """The results JSON of the sizes measured so far (written after each,
    so a run stopped part way keeps them)."""
    from results_file import command_line

    base = rows[0]["target_tokens_per_s"]
    for row in rows:
        row["target_tokens_per_s_ratio_to_smallest"] = round(
            row["target_tokens_per_s"] / base, 3)
    return {
        "command": command_line("data_scale.py", argv),
        "machine": f"{os.cpu_count()} CPUs",
        "generate_seconds": round(generate_s, 1),
        "vocabulary": "shipped multi30k-transformer spm.model (--vocab)",
        "sizes": rows,
        "complete": len(rows) == len(args.sizes),
    }


def write(path, data):
    from gnmt_tf.io_utils import write_text_atomic

    write_text_atomic(path, json.dumps(data, indent=2) + "\n")


if __name__ == "__main__":
    sys.exit(main())
