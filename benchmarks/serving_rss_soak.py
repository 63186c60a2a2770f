"""Benchmark: the local server's RSS over a long batched load ("soak").

Starts `gnmt-tf serve` with dynamic batching (`max_batch_size` 32, 2 ms,
2 batch threads), then runs `--runs` rounds of `--clients` clients for
`--seconds` each and records the server's RSS after every round: memory
that levels off is warm-up (allocator pools, thread stacks, per-shape
buffers), memory that keeps growing round after round is a leak.

    python benchmarks/serving_rss_soak.py \\
        --model_base_path benchmarks/runs/export_bench/savedmodel/gnmt \\
        --model_name gnmt_small --runs 30

Variants tell a leak from warm-up: `--label tcmalloc` with
`LD_PRELOAD=.../libtcmalloc_minimal.so.4` in the environment (another
allocator), `--sentence 7` (every request the same sentence: batches differ
only in their row count), `--allowed-batch-sizes 1,2,4,8,16,32` (batches
padded to six sizes: TensorFlow's memory grows with every new batch size it
sees, see docs/benchmarks.md). The allocator settings in the environment
(`LD_PRELOAD`, `MALLOC_*`) are recorded with the result.

Adds `rss_soak[<model_name>]` (or `rss_soak["<model_name> (<label>)"]`) to
`benchmarks/results/serving_load.json`.
"""

import argparse
import json
import os
import pathlib
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import serving_load  # noqa: E402

from gnmt_tf.progress import progress  # noqa: E402
from gnmt_tf.serving.batching_config import BatchingParameters  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model_base_path", required=True)
    parser.add_argument("--model_name", required=True)
    parser.add_argument("--task", help="SRC,TGT,TAGS for task-space exports")
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--sentence", type=int,
                        help="send only this one of serving_load.SENTENCES")
    parser.add_argument("--label", help="result key suffix for a variant")
    parser.add_argument("--allowed-batch-sizes",
                        help="e.g. 1,2,4,8,16,32: pad batches to these sizes")
    parser.add_argument("--out", default=str(HERE / "results" /
                                             "serving_load.json"))
    args = parser.parse_args(argv)
    task = serving_load.task_inputs(args.task)
    if args.sentence is not None:
        serving_load.SENTENCES = [serving_load.SENTENCES[args.sentence]]

    with tempfile.TemporaryDirectory() as tmp:
        batching = os.path.join(tmp, "batching_parameters.txt")
        allowed = tuple(int(size) for size in
                        (args.allowed_batch_sizes or "").split(",") if size)
        pathlib.Path(batching).write_text(BatchingParameters(
            max_batch_size=32, batch_timeout_micros=2000,
            max_enqueued_batches=1000, num_batch_threads=2,
            allowed_batch_sizes=allowed).to_text())
        server = serving_load.ServerProcess(args.model_base_path,
                                            args.model_name, batching)
        try:
            server.wait_ready(args.model_name, 300)
            rss = [serving_load.rss_mb(server.process.pid)]
            requests = errors = 0
            for round_ in progress(range(args.runs), desc="rounds"):
                sent, failed, _ = serving_load.load(
                    server.target, args.model_name, args.clients,
                    args.seconds, 1, task)
                requests, errors = requests + sent, errors + failed
                rss.append(serving_load.rss_mb(server.process.pid))
                print(f"round {round_ + 1}: {sent} requests, RSS {rss[-1]} MB",
                      flush=True)
        finally:
            server.stop()

    soak = {"clients": args.clients, "seconds_per_round": args.seconds,
            "rss_mb_after_each_round": rss, "requests": requests,
            "errors": errors, "sentences": serving_load.SENTENCES,
            "allowed_batch_sizes": args.allowed_batch_sizes,
            "allocator_environment": {
                k: v for k, v in os.environ.items()
                if k == "LD_PRELOAD" or k.startswith("MALLOC_")},
            "command": " ".join(["python", "benchmarks/serving_rss_soak.py"]
                                + sys.argv[1:])}
    out = pathlib.Path(args.out)
    result = json.loads(out.read_text()) if out.exists() else {}
    key = args.model_name + (f" ({args.label})" if args.label else "")
    result.setdefault("rss_soak", {})[key] = soak
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(soak))
    return 0


if __name__ == "__main__":
    sys.exit(main())
