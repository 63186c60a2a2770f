"""Benchmark: `gnmt-tf translate-beam` on the DirectRunner against the plain
`gnmt-tf translate` CLI, on the same Multi30k lines, model and beam.

One after the other in this run, each as its own `gnmt-tf` process (so each
pays its start-up: Python, TensorFlow, the model, and for Beam the
pipeline and its workers):

- ``translate``: `gnmt-tf translate --model M --input all.en`;
- ``beam_in_memory``: `translate-beam` over `--shards` files, one worker;
- ``beam_threads_2``: `direct_num_workers=2`, `multi_threading`;
- ``beam_processes_2``: `direct_num_workers=2`, `multi_processing` (each
  worker process loads TensorFlow and the model).

Each Beam run writes to a fresh output prefix (a rerun would skip every
shard). Figures: wall seconds, lines/s, target tokens/s (SentencePiece
pieces of the output, the model's own vocabulary) and the ratio to
``translate``; every output is checked line for line against
``translate``'s. Results go to `--out`. Needs Apache Beam (the `beam`
extra's environment).

    .venv-beam/bin/python benchmarks/beam_translate.py \\
        --model benchmarks/runs/beam_tiny --lines 3000 --beam-size 4
"""

import argparse
import gzip
import json
import os
import pathlib
import platform
import subprocess
import sys
import tempfile
import time

# The packages before benchmarks/, whose alignment.py and pipeline.py
# would shadow them (this script runs with benchmarks/ as sys.path[0]).
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(1, str(HERE))  # after the repository root

from results_file import command_line, write_text_atomic  # noqa: E402

GNMT_TF = [sys.executable, "-m", "gnmt_tf.cli.main"]
BEAM_RUNS = {
    "beam_in_memory": ["--direct_num_workers=1",
                       "--direct_running_mode=in_memory"],
    "beam_threads_2": ["--direct_num_workers=2",
                       "--direct_running_mode=multi_threading"],
    "beam_processes_2": ["--direct_num_workers=2",
                         "--direct_running_mode=multi_processing"],
}


def _timed(argv):
    env = dict(os.environ, PYTHONPATH=str(HERE.parent))
    start = time.perf_counter()
    result = subprocess.run(argv, capture_output=True, env=env, text=True)
    seconds = time.perf_counter() - start
    if result.returncode:
        sys.exit(f"{' '.join(map(str, argv))} failed:\n{result.stderr}")
    return seconds, result


def _pieces(model_dir, lines):
    import sentencepiece

    sp = sentencepiece.SentencePieceProcessor(
        model_file=str(pathlib.Path(model_dir) / "spm.model"))
    return sum(len(sp.encode(line)) for line in lines if line)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--data", default="/work/shared/data/multi30k/"
                        "train.en.gz")
    parser.add_argument("--lines", type=int, default=3000)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--beam-size", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--runs", default=",".join(["translate", *BEAM_RUNS]))
    parser.add_argument("--out", default=str(HERE / "results" /
                                             "beam_translate.json"))
    args = parser.parse_args()

    with gzip.open(args.data, "rt", encoding="utf-8") as f:
        lines = [next(f).rstrip("\n") for _ in range(args.lines)]
    work = pathlib.Path(tempfile.mkdtemp(prefix="beam_bench_"))
    whole = work / "all.en"
    whole.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    per = -(-len(lines) // args.shards)
    for i in range(args.shards):
        (work / "shards").mkdir(exist_ok=True)
        (work / "shards" / f"{i:02d}.en").write_text(
            "".join(line + "\n" for line in lines[i * per:(i + 1) * per]),
            encoding="utf-8")
    search = ["--beam-size", str(args.beam_size), "--batch-size",
              str(args.batch_size)]
    runs, reference = {}, None
    for name in args.runs.split(","):
        if name == "translate":
            seconds, result = _timed(GNMT_TF + [
                "translate", "--model", args.model, "--input", whole,
                *search])
            output = result.stdout.splitlines()
            reference = output
        else:
            prefix = work / name / "de"
            seconds, result = _timed(GNMT_TF + [
                "translate-beam", "--model", args.model, "--input",
                work / "shards" / "*.en", "--output", prefix, *search,
                "--", *BEAM_RUNS[name]])
            output = []
            for i in range(args.shards):
                output += pathlib.Path(
                    f"{prefix}-{i:05d}-of-{args.shards:05d}").read_text(
                        encoding="utf-8").splitlines()
        tokens = _pieces(args.model, output)
        runs[name] = {
            "seconds": round(seconds, 2),
            "lines_per_second": round(len(lines) / seconds, 1),
            "target_tokens_per_second": round(tokens / seconds, 1),
            "target_tokens": tokens,
            "same_lines_as_translate": (None if reference is None
                                        else output == reference),
        }
        print(name, json.dumps(runs[name]), flush=True)
    if "translate" in runs:
        base = runs["translate"]["lines_per_second"]
        for run in runs.values():
            run["ratio_to_translate"] = round(run["lines_per_second"] / base,
                                              3)
    import apache_beam

    result = {
        "command": command_line("beam_translate.py"),
        "model": args.model, "lines": len(lines), "shards": args.shards,
        "data": f"first {len(lines)} lines of {args.data}",
        "beam_size": args.beam_size, "batch_size": args.batch_size,
        "apache_beam": apache_beam.__version__,
        "cpus": os.cpu_count(), "machine": platform.machine(),
        "note": "each run is a whole gnmt-tf process (start-up included), "
                "one after the other on a 2-core machine shared with other "
                "jobs",
        "runs": runs,
    }
    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out, json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
