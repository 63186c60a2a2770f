"""Benchmark: server-side batching parameters compared under the same load.

One `gnmt-tf serve` process per setting ("none": no batching; otherwise a
`BatchingParameters` given as `TIMEOUT_US:THREADS:MAX_BATCH[:padded]`, padded
to powers of two up to MAX_BATCH), all up side by side; `--rounds` rounds,
each running `--clients` clients against every server in turn for
`--seconds`, so that a drift in the machine's speed hits every setting alike.
Prints sentences/s per round and the ratio to "none" in the same round.

    python benchmarks/serving_batching_configs.py --model_base_path EXPORT \\
        --model_name ts --task en,de,caption \\
        --settings none,30000:1:32:padded,30000:2:16:padded,2000:2:32:padded
"""

import argparse
import json
import os
import pathlib
import sys
import tempfile

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(REPO_ROOT / "benchmarks"))

from gnmt_tf.io_utils import write_text_atomic  # noqa: E402
from gnmt_tf.serving.batching_config import BatchingParameters  # noqa: E402
from serving_load import load, percentile, side_by_side  # noqa: E402
from serving_load import task_inputs  # noqa: E402


def parse_setting(text):
    """`"none"` -> None; `"30000:2:16:padded"` -> `BatchingParameters`."""
    if text == "none":
        return None
    parts = text.split(":")
    if len(parts) not in (3, 4) or (len(parts) == 4 and parts[3] != "padded"):
        raise ValueError(f"setting {text!r}: TIMEOUT_US:THREADS:MAX_BATCH"
                         "[:padded] or none")
    timeout, threads, size = (int(p) for p in parts[:3])
    sizes = ()
    if len(parts) == 4:
        sizes = tuple(s for s in (1, 2, 4, 8, 16, 32, 64, 128, 256)
                      if s < size) + (size,)
    return BatchingParameters(max_batch_size=size,
                              batch_timeout_micros=timeout,
                              num_batch_threads=threads,
                              max_enqueued_batches=1000,
                              allowed_batch_sizes=sizes)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model_base_path", required=True)
    parser.add_argument("--model_name", required=True)
    parser.add_argument("--task", help="SRC,TGT,TAGS for task-space exports")
    parser.add_argument("--settings", required=True)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", help="write the results here as JSON")
    args = parser.parse_args(argv)
    if args.clients < 1 or args.seconds <= 0 or args.rounds < 1:
        parser.error("--clients and --rounds must be >= 1, --seconds > 0")
    try:
        settings = {s: parse_setting(s) for s in args.settings.split(",")}
    except ValueError as e:
        parser.error(str(e))
    if "none" not in settings:
        parser.error("--settings must include none (the reference)")
    task = task_inputs(args.task)
    rates = {name: [] for name in settings}
    with tempfile.TemporaryDirectory() as tmp:
        files = {}
        for i, (name, params) in enumerate(settings.items()):
            files[name] = None
            if params is not None:
                files[name] = os.path.join(tmp, f"{i}.txt")
                with open(files[name], "w") as f:
                    f.write(params.to_text())
        with side_by_side(args.model_base_path, args.model_name, files, 300,
                          task) as servers:
            for r in range(args.rounds):
                for name, server in servers.items():
                    _, _, latencies = load(server.target, args.model_name,
                                           args.clients, args.seconds, 1,
                                           task)
                    rates[name].append(round(len(latencies) / args.seconds,
                                             1))
                    print(f"round {r} {name}: {rates[name][-1]} sentences/s,"
                          f" p50 {percentile(latencies, 50):.0f} ms",
                          flush=True)
    result = {"clients": args.clients, "seconds": args.seconds,
              "sentences_per_s": rates,
              "over_none_per_round": {
                  name: [round(a / b, 2) for a, b in zip(v, rates["none"])]
                  for name, v in rates.items()},
              "command": " ".join(["benchmarks/serving_batching_configs.py"]
                                  + (argv or sys.argv[1:]))}
    print(json.dumps(result["over_none_per_round"]))
    if args.out:
        write_text_atomic(args.out, json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
