"""Benchmark: process RSS against the variety of batch sizes a SavedModel sees.

Calls an export's `serving_default` in-process (no server) for `--seconds`
per mode, with batches of Multi30k-like sentences whose row count is:

- ``variable``: uniform in 1..32 (what dynamic batching produces);
- ``pow2``: one of 1, 2, 4, 8, 16, 32 (dynamic batching with
  `allowed_batch_sizes` 1,2,4,8,16,32);
- ``fixed``: always 32;

and records RSS every `--every` seconds. Each mode runs in a fresh process,
so the modes do not share warm-up. Results go to `rss_by_batch_sizes` in
`--out` (default `benchmarks/results/serving_load.json`).

    python benchmarks/batch_shape_rss.py \\
        --export benchmarks/runs/export_bench/savedmodel/gnmt/1 --seconds 240
"""

import argparse
import json
import os
import pathlib
import random
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import serving_load  # noqa: E402

MODES = ("variable", "pow2", "fixed")


def batch_size(mode, rng):
    return {"variable": lambda: rng.randint(1, 32),
            "pow2": lambda: 2 ** rng.randint(0, 5),
            "fixed": lambda: 32}[mode]()


def run_mode(export, mode, seconds, every):
    """In this process: calls for `seconds`; returns the RSS curve."""
    import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS)
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the export's SentencePiece ops)

    serve = tf.saved_model.load(export).signatures["serving_default"]
    rng = random.Random(0)
    curve, calls, rows = [], 0, 0
    start = last = time.monotonic()
    while time.monotonic() - start < seconds:
        size = batch_size(mode, rng)
        serve(text=tf.constant([rng.choice(serving_load.SENTENCES)
                                for _ in range(size)]))
        calls, rows = calls + 1, rows + size
        if time.monotonic() - last >= every:
            last = time.monotonic()
            curve.append({"calls": calls, "rows": rows,
                          "rss_mb": serving_load.rss_mb(os.getpid())})
            print(mode, curve[-1], flush=True)
    return curve


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--export", required=True,
                        help="a SavedModel version directory")
    parser.add_argument("--seconds", type=float, default=240)
    parser.add_argument("--every", type=float, default=20)
    parser.add_argument("--mode", choices=MODES,
                        help="run one mode here and print its curve as JSON")
    parser.add_argument("--out", default=str(HERE / "results" /
                                             "serving_load.json"))
    args = parser.parse_args(argv)
    if args.mode:
        curve = run_mode(args.export, args.mode, args.seconds, args.every)
        print("CURVE" + json.dumps(curve))
        return 0

    results = {}
    for mode in MODES:
        proc = subprocess.run(
            [sys.executable, __file__, "--export", args.export, "--mode", mode,
             "--seconds", str(args.seconds), "--every", str(args.every)],
            capture_output=True, text=True, check=True)
        line = next(l for l in proc.stdout.splitlines() if l.startswith("CURVE"))
        results[mode] = json.loads(line[len("CURVE"):])
        first, final = results[mode][0], results[mode][-1]
        print(f"{mode}: RSS {first['rss_mb']} -> {final['rss_mb']} MB over "
              f"{final['rows']} rows", flush=True)
    out = pathlib.Path(args.out)
    result = json.loads(out.read_text()) if out.exists() else {}
    result["rss_by_batch_sizes"] = {
        "curves": results, "seconds_per_mode": args.seconds,
        "command": " ".join(["python", "benchmarks/batch_shape_rss.py"]
                            + (argv if argv is not None else sys.argv[1:]))}
    out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
