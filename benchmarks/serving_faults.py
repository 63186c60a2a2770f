"""Benchmark: the local server under a soak with faults (issue 18).

`gnmt-tf serve --enable_batching` serves a temporary copy of an export's
newest version while, for `--minutes` (after `--warmup-minutes` of the same
load and swaps), `--clients` client threads send a mix of

- normal requests (1-4 sentences of `serving_load.SENTENCES`, through
  `TranslationClient` with its usual retries): they must all succeed;
- over-large requests, rejected whole: 3,201 rows (more than the batching
  queue holds), 4,097 rows (over `--max_request_rows`), 512 sentences of 100
  words (over `--max_request_padded_bytes`);
- malformed requests: invalid UTF-8, a blank sentence, 0 rows (an empty
  result), a 4,096-byte sentence (the model's own length check), a DT_FLOAT
  input, a shape that disagrees with its values;
- expiring requests: 32 sentences of 20 words with a 0.5 s deadline;

while a new version is published every `--swap-seconds`, alternately by a
fast copy (copy elsewhere, then rename) and a slow one (`saved_model.pb`
first, the rest `--slow-copy-seconds` later, as a network copy does), and one
more client, every 10 s, starts a request and closes its channel mid-request.
A probe sends one sentence every 5 s (no retries).

Reported: `failed_good_requests` (normal requests that failed), `unexpected`
(any other request answered otherwise than expected, e.g. INTERNAL or a
multi-line message), `wedged` (after the load stops, one sentence is not
answered within 30 s), `rss_mb_start` / `rss_mb_end` (server RSS after the
warm-up and at the end, each with one version loaded) and the series, `p50_ms_good` / `p99_ms_good`,
`versions_served` (versions that answered normal requests) and each swap.

    python benchmarks/serving_faults.py \\
        --model_base_path benchmarks/runs/serving_faults/exports/gnmt \\
        --model_name gnmt [--minutes 10] \\
        [--out benchmarks/results/serving_faults.json]
"""

import argparse
import collections
import json
import os
import pathlib
import random
import shutil
import sys
import tempfile
import threading
import time

# The packages before benchmarks/, whose alignment.py and pipeline.py
# would shadow them (this script runs with benchmarks/ as sys.path[0]).
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import grpc
import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import serving_load  # noqa: E402

from gnmt_tf.serving import tensor_codec  # noqa: E402
from gnmt_tf.serving.client import TranslationClient  # noqa: E402
from gnmt_tf.serving.client import TranslationError  # noqa: E402
from gnmt_tf.serving.model_manager import list_versions  # noqa: E402
from gnmt_tf.serving.protos import predict_pb2  # noqa: E402
from gnmt_tf.serving.protos import prediction_service_pb2_grpc  # noqa: E402

OK, INVALID = "OK", "INVALID_ARGUMENT"
# kind -> (weight in the mix, {request name: expected status names})
MIX = {"normal": 80, "over_large": 6, "malformed": 11, "expiring": 3}
WORDS = " ".join(serving_load.SENTENCES).split()


def _sentence(words, rng):
    return " ".join(rng.choice(WORDS) for _ in range(words))


def _request(name, texts, shape=None, dtype_float=False):
    request = predict_pb2.PredictRequest()
    request.model_spec.name = name
    if dtype_float:
        request.inputs["text"].CopyFrom(tensor_codec.make_tensor(
            np.ones(len(texts), np.float32)))
    else:
        request.inputs["text"].CopyFrom(
            tensor_codec.string_tensor(texts, shape))
    return request


def fault_requests(name):
    """`{kind: {request name: (PredictRequest, expected statuses, timeout)}}`
    for the faulty kinds; built once, sent many times."""
    rng = random.Random(18)
    short = [_sentence(8, rng) for _ in range(64)]
    return {
        "over_large": {
            "3201_rows": (_request(name, short * 50 + short[:1]),
                          {INVALID}, 30),
            "4097_rows": (_request(name, short * 64 + short[:1]),
                          {INVALID}, 30),
            "512x100_words": (_request(
                name, [_sentence(100, rng) for _ in range(512)]),
                {INVALID}, 30),
        },
        "malformed": {
            "invalid_utf8": (_request(name, [b"caf\xe9", b"ok"]),
                             {INVALID}, 30),
            "blank": (_request(name, ["ok", "  "]), {INVALID}, 30),
            "zero_rows": (_request(name, []), {OK}, 30),
            "4096_bytes": (_request(name, [("the dog " * 512)[:4096]]),
                           {INVALID}, 30),
            "float_input": (_request(name, ["x", "y"], dtype_float=True),
                            {INVALID}, 30),
            "shape_mismatch": (_request(name, ["x", "y"], shape=[3]),
                               {INVALID}, 30),
        },
        "expiring": {
            "32x20_words_0.5s": (_request(
                name, [_sentence(20, rng) for _ in range(32)]),
                {"DEADLINE_EXCEEDED", OK}, 0.5),
        },
    }


class Tally:
    """Thread-safe counts, latencies and examples of what went wrong."""

    def __init__(self):
        self.lock = threading.Lock()
        self.counts = collections.defaultdict(collections.Counter)
        self.good_ms = []
        self.good_failures = []
        self.unexpected = []
        self.versions = collections.Counter()

    def good(self, ms=None, version=None, error=None):
        with self.lock:
            if error is None:
                self.counts["normal"][OK] += 1
                self.good_ms.append(ms)
                self.versions[version] += 1
            else:
                self.counts["normal"][error.code.name if error.code
                                      else "UNKNOWN"] += 1
                self.good_failures.append(str(error)[:300])

    def fault(self, kind, name, status, message, expected):
        with self.lock:
            self.counts[f"{kind}/{name}"][status] += 1
            if status not in expected or (message and "\n" in message):
                self.unexpected.append(f"{kind}/{name}: {status}: "
                                       f"{(message or '')[:300]}")


def client_loop(index, target, name, faults, tally, stop):
    rng = random.Random(index)
    channel = grpc.insecure_channel(target, options=[
        ("grpc.max_send_message_length", 64 << 20),
        ("grpc.max_receive_message_length", 64 << 20)])
    client = TranslationClient(target, name, timeout=30, channel=channel)
    stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
    kinds, weights = list(MIX), list(MIX.values())
    while not stop.is_set():
        kind = rng.choices(kinds, weights)[0]
        if kind == "normal":
            batch = rng.sample(serving_load.SENTENCES, rng.randint(1, 4))
            start = time.perf_counter()
            try:
                _, _, version = client.predict(batch)
                tally.good((time.perf_counter() - start) * 1000, version)
            except TranslationError as e:
                tally.good(error=e)
            continue
        name_, (request, expected, timeout) = rng.choice(
            sorted(faults[kind].items()))
        try:
            response = stub.Predict(request, timeout=timeout)
            rows = len(response.outputs["translations"].string_val)
            sent = tensor_codec.shape_of(request.inputs["text"])[0]
            status, message = (OK, None) if rows == sent else (
                "WRONG_ROWS", f"{rows} outputs for {sent} rows")
        except grpc.RpcError as e:
            status, message = e.code().name, e.details()
        tally.fault(kind, name_, status, message, expected)
    channel.close()


def disconnect_loop(target, faults, tally, stop, every_s=10.0):
    """Start a long request, then close the channel mid-request."""
    request, _, _ = faults["expiring"]["32x20_words_0.5s"]
    while not stop.wait(every_s):
        channel = grpc.insecure_channel(target)
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        future = stub.Predict.future(request, timeout=30)
        time.sleep(0.3)
        channel.close()
        try:
            future.result()
            status = OK
        except grpc.FutureCancelledError:
            status = "CANCELLED"
        except grpc.RpcError as e:
            status = e.code().name
        tally.fault("disconnect", "close_mid_request", status, None,
                    {"CANCELLED", OK})


def probe_loop(target, name, stop, log, every_s=5.0):
    """One sentence, no retries, every `every_s` seconds."""
    with TranslationClient(target, name, timeout=10, max_retries=0) as client:
        while not stop.wait(every_s):
            start = time.perf_counter()
            try:
                client.predict(["A black dog is running."])
                log.append(("ok", round((time.perf_counter() - start) * 1000)))
            except TranslationError as e:
                log.append((e.code.name if e.code else "UNKNOWN", str(e)[:200]))


def _copy_fast(source, base, version):
    staging = os.path.join(base, f".staging-{version}")
    shutil.copytree(source, staging)
    os.rename(staging, os.path.join(base, str(version)))


def _copy_slow(source, base, version, delay_s, stop):
    target = os.path.join(base, str(version))
    os.mkdir(target)
    shutil.copy(os.path.join(source, "saved_model.pb"), target)
    stop.wait(delay_s)
    for entry in sorted(os.listdir(source)):
        src, dst = os.path.join(source, entry), os.path.join(target, entry)
        if os.path.exists(dst):
            continue
        if os.path.isdir(src):
            shutil.copytree(src, dst)
        else:
            shutil.copy(src, dst)


def swap_loop(source, base, target, name, args, stop, swaps):
    """Publish the next version every `swap_seconds`, alternately fast and
    slow; record when each one became AVAILABLE; delete versions gone END."""
    with TranslationClient(target, name, timeout=10) as status_client:
        while not stop.wait(args.swap_seconds):
            version = max(list_versions(base)) + 1
            mode = "slow" if version % 2 else "fast"
            started = time.monotonic()
            swap = {"version": version, "copy": mode}
            swaps.append(swap)
            if mode == "fast":
                _copy_fast(source, base, version)
            else:
                _copy_slow(source, base, version, args.slow_copy_seconds,
                           stop)
            swap["copied_after_s"] = round(time.monotonic() - started, 1)
            while not stop.is_set():
                try:
                    status = status_client.model_status()
                except TranslationError:
                    status = {}
                if status.get(version) == "AVAILABLE":
                    swap["available_after_s"] = round(
                        time.monotonic() - started, 1)
                    break
                stop.wait(0.5)
            for old, state in status.items():
                if state == "END" and old < version - 1:
                    shutil.rmtree(os.path.join(base, str(old)),
                                  ignore_errors=True)


def wait_settled(target, name, timeout=120.0):
    """Wait until one version is AVAILABLE and every other one END (a swap
    done, the old version unloaded), then 2 s more."""
    deadline = time.monotonic() + timeout
    with TranslationClient(target, name, timeout=10) as client:
        while time.monotonic() < deadline:
            states = sorted(client.model_status().values())
            if states.count("AVAILABLE") == 1 and set(states) <= {
                    "AVAILABLE", "END"}:
                time.sleep(2.0)
                return True
            time.sleep(0.5)
    return False


def final_check(target, name, attempts=3):
    """True if one sentence is answered within 30 s (3 tries of 10 s)."""
    with TranslationClient(target, name, timeout=10, max_retries=0) as client:
        for _ in range(attempts):
            try:
                client.predict(["A black dog is running."])
                return True
            except TranslationError:
                time.sleep(1)
    return False


def run_phase(seconds, target, name, faults, tally, pid, args, source, base,
              swaps, probes, rss_series):
    stop = threading.Event()
    threads = [threading.Thread(target=client_loop,
                                args=(i, target, name, faults, tally, stop))
               for i in range(args.clients)]
    threads += [
        threading.Thread(target=disconnect_loop,
                         args=(target, faults, tally, stop)),
        threading.Thread(target=probe_loop, args=(target, name, stop, probes)),
        threading.Thread(target=serving_load.rss_loop, args=(pid, rss_series, stop)),
    ]
    threads.append(threading.Thread(
        target=swap_loop, args=(source, base, target, name, args, stop,
                                swaps)))
    for t in threads:
        t.start()
    stop.wait(seconds)
    stop.set()
    for t in threads:
        t.join()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model_base_path", required=True,
                        help="BASE/NAME folder of a GNMT export")
    parser.add_argument("--model_name", required=True)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--warmup-minutes", type=float, default=3.0,
                        help="same load and swaps first, not measured: RSS "
                             "grows while new batch shapes arrive")
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--swap-seconds", type=float, default=45.0)
    parser.add_argument("--slow-copy-seconds", type=float, default=15.0)
    parser.add_argument("--out", default=str(HERE / "results" /
                                             "serving_faults.json"))
    args = parser.parse_args(argv)
    real = os.path.abspath(args.model_base_path)
    versions = list_versions(real)
    if not versions:
        raise SystemExit(f"no version folders in {real}")
    source = os.path.join(real, str(versions[-1]))

    with tempfile.TemporaryDirectory() as tmp:
        base = os.path.join(tmp, args.model_name)
        os.mkdir(base)
        _copy_fast(source, base, 1)
        server = serving_load.ServerProcess(
            base, args.model_name, extra_args=["--enable_batching"])
        faults = fault_requests(args.model_name)
        tally, swaps, probes, rss_series = Tally(), [], [], []
        warmup_swaps = []
        try:
            server.wait_ready(args.model_name, 300)
            pid = server.process.pid
            rss_after_load = serving_load.rss_mb(pid)
            run_phase(args.warmup_minutes * 60, server.target,
                      args.model_name, faults, Tally(), pid, args, source,
                      base, warmup_swaps, [], [])
            wait_settled(server.target, args.model_name)
            rss_start = serving_load.rss_mb(pid)
            run_phase(args.minutes * 60, server.target, args.model_name,
                      faults, tally, pid, args, source, base, swaps, probes,
                      rss_series)
            wait_settled(server.target, args.model_name)
            rss_end = serving_load.rss_mb(pid)
            wedged = not final_check(server.target, args.model_name)
            with TranslationClient(server.target, args.model_name) as client:
                final_status = client.model_status()
            exit_code = server.process.poll()
        finally:
            server.stop()
            server.log.seek(0)
            log = server.log.read()
    log_tail = log[-2000:]
    version_log = [line.split(" ", 2)[-1] for line in log.splitlines()
                   if " version " in line and ("serving " in line
                                               or "loading " in line
                                               or "unloaded " in line)]

    good = tally.counts["normal"]
    result = {
        "model": args.model_name, "minutes": args.minutes,
        "warmup_minutes": args.warmup_minutes, "clients": args.clients,
        "failed_good_requests": sum(n for k, n in good.items() if k != OK),
        "good_requests": sum(good.values()),
        "unexpected": len(tally.unexpected),
        "unexpected_examples": tally.unexpected[:10],
        "failed_good_examples": tally.good_failures[:10],
        "wedged": wedged,
        "server_exited_during_run": exit_code is not None,
        "rss_mb_after_load": rss_after_load,
        "rss_measured": "after the warm-up and after the run, each once one "
                        "version is AVAILABLE and the others END",
        "rss_mb_start": rss_start, "rss_mb_end": rss_end,
        "rss_change_pct": round(100 * (rss_end - rss_start) / rss_start, 1),
        "rss_mb_every_15_s": rss_series,
        "p50_ms_good": round(serving_load.percentile(tally.good_ms, 50), 1),
        "p99_ms_good": round(serving_load.percentile(tally.good_ms, 99), 1),
        "versions_served": sorted(v for v in tally.versions if v),
        "good_requests_by_version": {str(k): v for k, v in
                                     sorted(tally.versions.items())},
        "swaps": swaps,
        "warmup_swaps": warmup_swaps,
        "server_version_log": version_log,
        "final_status": {str(k): v for k, v in final_status.items()},
        "probe_failures": sum(1 for status, _ in probes if status != "ok"),
        "probes": len(probes),
        "requests": {k: dict(v) for k, v in sorted(tally.counts.items())},
        "command": " ".join(["python", "benchmarks/serving_faults.py"]
                            + sys.argv[1:]),
    }
    if result["failed_good_requests"] or result["unexpected"] or wedged:
        result["server_log_tail"] = log_tail
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    print(json.dumps({k: v for k, v in result.items()
                      if k not in ("rss_mb_every_15_s", "requests", "swaps")},
                     indent=1))
    return 0 if not (result["failed_good_requests"] or wedged) else 1


if __name__ == "__main__":
    sys.exit(main())
