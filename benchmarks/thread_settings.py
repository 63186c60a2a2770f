"""Benchmark: TensorFlow CPU settings for beam-search decoding.

For each combination of `TF_ENABLE_ONEDNN_OPTS` (0, 1), intra-op threads
and inter-op threads, a fresh process (the settings only take effect
before TensorFlow starts) times the in-graph beam search of
`transformer_small` (random weights, beam 4, fixed output length: as
`benchmarks/task_space_decode_speed.py`'s ``ours``) at each batch size,
and reports target tokens/s (median of `--repeats` calls). The best
setting per batch size and its gain over TensorFlow's defaults
(``default``: oneDNN on, threads chosen by TensorFlow) are reported;
nothing is applied automatically unless a rerun on a quiet machine shows
a clear gain.

    python benchmarks/thread_settings.py [--batch-sizes 1,32] \\
        [--threads 1,2,4] [--repeats 3]

Writes `benchmarks/results/thread_settings.json`.
"""

import argparse
import itertools
import json
import os
import pathlib
import subprocess
import sys

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from results_file import command_line  # noqa: E402

RESULT = REPO_ROOT / "benchmarks" / "results" / "thread_settings.json"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch-sizes", default="1,32")
    parser.add_argument("--threads", default=None,
                        help="intra-op thread counts to try (default: 1, 2 "
                             "and the CPU count)")
    parser.add_argument("--inter-op", default="1,2")
    parser.add_argument("--source-length", type=int, default=20)
    parser.add_argument("--output-length", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=str(RESULT))
    return parser.parse_args(argv)


def child(argv):
    """`--child INTRA INTER BATCHES SOURCE OUTPUT REPEATS`: prints a JSON
    `{batch: tokens/s}` line for the settings of this process."""
    intra, inter, batches, source, output, repeats = argv
    import gnmt_tf  # noqa: F401  (TF_USE_LEGACY_KERAS before TensorFlow)
    import tensorflow as tf

    if int(intra):
        tf.config.threading.set_intra_op_parallelism_threads(int(intra))
    if int(inter):
        tf.config.threading.set_inter_op_parallelism_threads(int(inter))
    import task_space_decode_speed as bench
    from gnmt_tf.models.task_space.task_space_translation_model import (
                                                                        TaskSpaceTranslationModel)

    tf.random.set_seed(0)
    model = TaskSpaceTranslationModel.from_preset("transformer_small",
                                                  dropout=0.0)
    args = argparse.Namespace(source_length=int(source),
                              output_length=int(output),
                              repeats=int(repeats))
    speeds = {batch: bench.bench_ours(model, int(batch), args, True)
              for batch in batches.split(",")}
    print("RESULT " + json.dumps(speeds), flush=True)
    return 0


def main(argv=None):
    args = parse_args(argv)
    cpus = os.cpu_count()
    threads = ([int(t) for t in args.threads.split(",")] if args.threads
               else sorted({1, 2, cpus}))
    settings = [("default", None, 0, 0)] + [
        (f"onednn{onednn}_intra{intra}_inter{inter}", onednn, intra, inter)
        for onednn, intra, inter in itertools.product(
            (0, 1), threads, (int(i) for i in args.inter_op.split(",")))]
    results = {}
    for name, onednn, intra, inter in settings:
        env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
        if onednn is not None:
            env["TF_ENABLE_ONEDNN_OPTS"] = str(onednn)
        process = subprocess.run(
            [sys.executable, __file__, "--child", str(intra), str(inter),
             args.batch_sizes, str(args.source_length),
             str(args.output_length), str(args.repeats)],
            env=env, capture_output=True, text=True)
        lines = [l for l in process.stdout.splitlines()
                 if l.startswith("RESULT ")]
        if process.returncode or not lines:
            results[name] = {"error": process.stderr[-1000:]}
        else:
            results[name] = {k: round(v, 1) for k, v in
                             json.loads(lines[-1][len("RESULT "):]).items()}
        print(name, results[name], file=sys.stderr, flush=True)
    best = {}
    for batch in args.batch_sizes.split(","):
        ok = {n: r[batch] for n, r in results.items() if batch in r}
        if not ok:
            continue
        name = max(ok, key=ok.get)
        best[f"batch{batch}"] = {
            "setting": name, "tokens_per_s": ok[name],
            "over_default": (round(ok[name] / ok["default"], 3)
                             if "default" in ok else None)}
    out = {"tokens_per_s": results, "best": best,
           "settings": {"batch_sizes": args.batch_sizes,
                        "source_length": args.source_length,
                        "output_length": args.output_length,
                        "repeats": args.repeats, "cpu_count": cpus,
                        "load_average_at_end": os.getloadavg(),
                        "unit": "target tokens/s, beam 4, "
                                "transformer_small (random weights)"},
           "command": command_line("thread_settings.py", argv)}
    path = pathlib.Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        sys.exit(child(sys.argv[2:]))
    sys.exit(main())
