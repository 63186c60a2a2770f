"""Benchmark: the local gRPC server under concurrent load, with and without
server-side dynamic batching, plus failed requests during a hot version reload.

Two `gnmt-tf serve` processes, without and with server-side batching, run
side by side on free 127.0.0.1 ports; for each client count (default 1, 8,
32, 64), `--repeats` pairs of runs (the order alternating) send, from N
client threads, `Predict` requests of `--sentences-per-request` sentences
back to back for `--seconds`. Each run records throughput (sentences/s),
p50/p99 latency, errors and the server's RSS before/after; `batching_gain`
is, per client count, the batched over the unbatched throughput of each
pair and their median (pairs, not two far-apart runs: this machine's speed
drifts by a fifth within minutes). Without `--batching_parameters_file`
batching uses `DEFAULT_BATCHING`. RSS that stops growing over the repeats is
warm-up (allocator pools, thread stacks), not a leak. The hot-reload check
serves a temporary base folder whose version folders are symlinks to the
newest real version, adds version N+1 while 8 clients run, keeps them
running until N+1 is AVAILABLE and N unloaded (plus two seconds), and
counts failed requests.

    python benchmarks/serving_load.py --model_base_path exports/gnmt \\
        --model_name gnmt [--seconds 30] [--out benchmarks/results/serving_load.json]
    python benchmarks/serving_load.py --model_base_path exports/ts \\
        --model_name transformer_small --task en,de,caption --append

Task-space exports need `--task SRC,TGT,TAGS` (sent as `src_lang`,
`tgt_lang`, `tags` with every sentence). `--append` keeps the other models'
runs already in `--out`.

Point it at a real export for real figures; toy-model runs go to
`serving_load_toy.json`.
"""

import argparse
import contextlib
import json
import os
import pathlib
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from gnmt_tf.serving.batching_config import BatchingParameters  # noqa: E402
from gnmt_tf.serving.client import TranslationClient  # noqa: E402
from gnmt_tf.serving.client import TranslationError  # noqa: E402
from gnmt_tf.serving.model_manager import list_versions  # noqa: E402
from gnmt_tf.io_utils import write_text_atomic  # noqa: E402

SENTENCES = [
    "A man in a blue shirt is standing on a ladder.",
    "Two dogs play in the snow.",
    "A group of people are sitting at a table in a restaurant.",
    "The girl is reading a book.",
    "A woman with a large purse is walking by a gate.",
    "Children are playing soccer on a field of grass.",
    "A black dog is running.",
    "Several men in hard hats are operating a giant pulley system.",
    "A little girl climbing into a wooden playhouse.",
    "People are fixing the roof of a house.",
    "A man sleeping in a green room on a couch.",
    "A boy wearing headphones sits on a woman's shoulders.",
]


# A batch thread per core, batches of at most 16: at 32 clients two batches
# of 16 run at once, which kept 2 cores busier than one of 32. 30 ms: the
# answers of a batch come back as new requests spread over several ms (Python
# clients and server threads), and a shorter timeout cuts them into smaller
# batches. Chosen with benchmarks/serving_batching_configs.py on the shipped
# Transformer at 32 clients (docs/serving.md, "Batching on CPU").
DEFAULT_BATCHING = BatchingParameters(
    max_batch_size=16, batch_timeout_micros=30_000, max_enqueued_batches=1000,
    num_batch_threads=os.cpu_count() or 1,
    allowed_batch_sizes=(1, 2, 4, 8, 16))


def task_inputs(spec):
    """`"en,de,caption"` -> the task-space request inputs (None for None)."""
    if not spec:
        return None
    src, tgt, tags = (spec.split(",", 2) + ["", ""])[:3]
    return {"src_lang": src, "tgt_lang": tgt, "tags": tags}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None


def rss_loop(pid, series, stop, every_s=15.0):
    """Appends `rss_mb(pid)` to `series` every `every_s` seconds until
    `stop` is set (a thread's target)."""
    while not stop.wait(every_s):
        series.append(rss_mb(pid))


def percentile(values, q):
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q / 100 * (len(values) - 1))))]


class ServerProcess:
    """`gnmt-tf serve` in a subprocess, stopped with SIGTERM; `extra_args`
    are more `gnmt-tf serve` flags."""

    def __init__(self, base, name, batching_file=None, poll_s=1.0,
                 extra_args=()):
        self.port = free_port()
        self.target = f"127.0.0.1:{self.port}"
        command = [sys.executable, "-m", "gnmt_tf.cli.main", "serve",
                   "--model_base_path", base, "--model_name", name,
                   "--port", str(self.port), "--grpc_threads", "128",
                   "--file_system_poll_wait_seconds", str(poll_s)]
        if batching_file:
            command += ["--batching_parameters_file", batching_file]
        command += list(extra_args)
        self.log = tempfile.TemporaryFile(mode="w+")
        self.process = subprocess.Popen(command, cwd=REPO_ROOT,
                                        stdout=self.log, stderr=self.log)

    def wait_ready(self, name, timeout):
        with TranslationClient(self.target, name) as client:
            try:
                client.wait_until_available(timeout=timeout)
            except TimeoutError:
                self.log.seek(0)
                raise RuntimeError("server did not start:\n"
                                   + self.log.read()[-3000:]) from None

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)


def load(target, name, clients, seconds, per_request, task=None,
         keep_going=None):
    """`clients` threads sending for `seconds` (then for as long as
    `keep_going()` is true, if given); returns (requests, errors, latencies
    in ms)."""
    latencies, errors, lock = [], [0], threading.Lock()
    stop_at = time.monotonic() + seconds

    def running():
        return time.monotonic() < stop_at or (keep_going and keep_going())

    def worker(i):
        client = TranslationClient(target, name, timeout=30, max_retries=0,
                                   task_inputs=task)
        n = i
        while running():
            batch = [SENTENCES[(n + j) % len(SENTENCES)]
                     for j in range(per_request)]
            n += per_request
            start = time.perf_counter()
            try:
                client.predict(batch)
                elapsed = (time.perf_counter() - start) * 1000
                with lock:
                    latencies.append(elapsed)
            except TranslationError:
                with lock:
                    errors[0] += 1
        client.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return len(latencies) + errors[0], errors[0], latencies


def one_run(server, args, clients, batching, repeat):
    """`clients` clients against `server` for `args.seconds`: one record."""
    before = rss_mb(server.process.pid)
    requests, errors, latencies = load(
        server.target, args.model_name, clients, args.seconds,
        args.sentences_per_request, args.task)
    run = {
        "model": args.model_name, "clients": clients, "repeat": repeat,
        "server_batching": batching,
        "seconds": args.seconds, "requests": requests, "errors": errors,
        "sentences_per_s": round(len(latencies) * args.sentences_per_request
                                 / args.seconds, 1),
        "p50_ms": percentile(latencies, 50),
        "p99_ms": percentile(latencies, 99),
        "server_rss_mb_before": before,
        "server_rss_mb_after": rss_mb(server.process.pid)}
    for key in ("p50_ms", "p99_ms"):
        if run[key] is not None:
            run[key] = round(run[key], 2)
    print(json.dumps(run), flush=True)
    return run


@contextlib.contextmanager
def side_by_side(base, name, batching_files, start_timeout, task=None):
    """`{key: ServerProcess}`, one a `batching_files` entry (`{key: path or
    None}`), all up and warmed at once; stopped on exit."""
    servers = {key: ServerProcess(base, name, path)
               for key, path in batching_files.items()}
    try:
        for server in servers.values():
            server.wait_ready(name, start_timeout)
            load(server.target, name, 4, 2.0, 1, task)
        yield servers
    finally:
        for server in servers.values():
            server.stop()


def run_interleaved(args, batching_file, clients_list):
    """Both servers (without and with batching) up at once; for each client
    count, `args.repeats` pairs of runs, the order alternating, so that a
    drift in the machine's speed hits both settings alike. Returns the runs
    and `{clients: {"per_pair": [...], "median": x}}` (batched over
    unbatched sentences/s)."""
    runs, gains = [], {}
    with side_by_side(args.model_base_path, args.model_name,
                      {False: None, True: batching_file},
                      args.start_timeout, args.task) as servers:
        for clients in clients_list:
            pairs = []
            for repeat in range(args.repeats):
                order = (False, True) if repeat % 2 == 0 else (True, False)
                pair = {b: one_run(servers[b], args, clients, b, repeat)
                        for b in order}
                runs += [pair[b] for b in order]
                if pair[False]["sentences_per_s"]:
                    pairs.append(round(pair[True]["sentences_per_s"]
                                       / pair[False]["sentences_per_s"], 3))
            gains[str(clients)] = {
                "per_pair": pairs,
                "median": statistics.median(pairs) if pairs else None}
            print(f"{clients} clients: batching gain {gains[str(clients)]}",
                  flush=True)
    return runs, gains


def hot_reload(args, batching_file):
    """Failed requests while version N+1 replaces N (symlinks to the newest
    real version, so the user's folder is untouched)."""
    real = os.path.abspath(args.model_base_path)
    versions = list_versions(real)
    if not versions:
        raise FileNotFoundError(f"no version folders in {real}")
    with tempfile.TemporaryDirectory() as tmp:
        base = os.path.join(tmp, args.model_name)
        os.mkdir(base)
        source = os.path.join(real, str(versions[-1]))
        os.symlink(source, os.path.join(base, "1"))
        server = ServerProcess(base, args.model_name, batching_file, poll_s=0.5)
        swapped_at = []
        try:
            server.wait_ready(args.model_name, args.start_timeout)
            status_client = TranslationClient(server.target, args.model_name)
            deadline = time.monotonic() + args.start_timeout

            def swapping():
                """Until version 2 serves alone (+2 s), or the deadline."""
                if time.monotonic() > deadline:
                    return False
                if not swapped_at:
                    status = status_client.model_status()
                    if status.get(2) == "AVAILABLE" and status.get(1) in (
                            None, "END"):
                        swapped_at.append(time.monotonic())
                    return True
                return time.monotonic() < swapped_at[0] + 2.0

            result = {}
            runner = threading.Thread(target=lambda: result.update(zip(
                ("requests", "errors", "latencies"),
                load(server.target, args.model_name, 8, args.reload_seconds,
                     args.sentences_per_request, args.task, swapping))))
            runner.start()
            time.sleep(args.reload_seconds / 4)
            added_at = time.monotonic()
            os.symlink(source, os.path.join(base, "2"))
            runner.join()
            status = status_client.model_status()
            status_client.close()
        finally:
            server.stop()
    result["swap_seconds"] = (round(swapped_at[0] - added_at, 1)
                              if swapped_at else None)
    print(f"hot reload: {result['requests']} requests, {result['errors']} "
          f"failed; version 2 alone after {result['swap_seconds']} s; final "
          f"status {status}", flush=True)
    return {"requests": result["requests"], "failed": result["errors"],
            "version_2_alone_after_s": result["swap_seconds"],
            "final_status": {str(k): v for k, v in status.items()}}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model_base_path", required=True)
    parser.add_argument("--model_name", required=True)
    parser.add_argument("--clients", default="1,8,32,64")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--sentences-per-request", type=int, default=1)
    parser.add_argument("--batching_parameters_file",
                        help="default: DEFAULT_BATCHING (max_batch_size 16, "
                             "30 ms, a batch thread per core)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="pairs of runs (without, with batching) per "
                             "client count")
    parser.add_argument("--reload-seconds", type=float, default=8.0)
    parser.add_argument("--start-timeout", type=float, default=300.0)
    parser.add_argument("--task", help="SRC,TGT,TAGS for task-space exports "
                                       "(e.g. en,de,caption)")
    parser.add_argument("--append", action="store_true",
                        help="keep other models' results in --out")
    parser.add_argument("--out", default=str(
        REPO_ROOT / "benchmarks" / "results" / "serving_load.json"))
    args = parser.parse_args(argv)
    clients_list = [int(c) for c in args.clients.split(",")]
    if args.seconds <= 0 or args.repeats < 1 or min(clients_list) < 1:
        parser.error("--seconds must be > 0, --repeats and --clients >= 1")
    args.task = task_inputs(args.task)

    with tempfile.TemporaryDirectory() as tmp:
        batching_file = args.batching_parameters_file
        if batching_file is None:
            batching_file = os.path.join(tmp, "batching_parameters.txt")
            with open(batching_file, "w") as f:
                f.write(DEFAULT_BATCHING.to_text())
        with open(batching_file) as f:
            batching_text = f.read()
        runs, gains = run_interleaved(args, batching_file, clients_list)
        reload = hot_reload(args, batching_file)

    command = " ".join([os.path.relpath(sys.argv[0], REPO_ROOT)] + sys.argv[1:])
    result = {"runs": [], "hot_reload": {}, "commands": {}}
    if args.append and os.path.exists(args.out):
        with open(args.out) as f:
            old = json.load(f)
        result["runs"] = [r for r in old.get("runs", [])
                          if r["model"] != args.model_name]
        result["hot_reload"] = old.get("hot_reload", {})
        result["commands"] = old.get("commands", {})
        for key in ("rss_soak", "rss_by_batch_sizes"):  # other benchmarks
            if key in old:
                result[key] = old[key]
    result["runs"] += runs
    for key, value in (("batching_gain", gains),
                       ("batching_parameters", batching_text)):
        result.setdefault(key, {})[args.model_name] = value
    result["hot_reload"][args.model_name] = reload
    result["commands"][args.model_name] = command
    result["hot_reload_failed_requests"] = sum(
        r["failed"] for r in result["hot_reload"].values())
    result["command"] = "; ".join(result["commands"].values())
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    write_text_atomic(args.out, json.dumps(result, indent=2))
    print(f"wrote {args.out}")
    return 0 if reload["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
