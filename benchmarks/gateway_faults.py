"""Benchmark: the HTTP gateway serving well-behaved clients while others
abuse it.

`gnmt-tf gateway --model MODEL` runs in a subprocess (this worktree's code)
on a free 127.0.0.1 port. `--clients` threads send ordinary document
requests back to back (JSON, 2-4 sentences of `serving_load.SENTENCES`,
`src_lang` auto, `--tgt-lang`): first for `--warmup-seconds` (not
measured: the model compiles its batch shapes), then for `--seconds`
without abuse, then for `--seconds` more while one abusive client of each
kind loops (`--abuse-pause-seconds` between attempts):

- `chunked_body`: a `--huge-body-mb` JSON body sent chunked, without
  Content-Length, until the gateway answers (expected: 413, long before
  the end);
- `huge_line`: a document of one `--huge-line-words`-word line (400);
- `disconnect`: a `--big-document-sentences`-sentence document, the
  connection closed `--disconnect-after-seconds` after sending it (as
  `curl -m`); the gateway should stop translating it;
- `nested_json`: `--nesting-depth` nested JSON lists (400).

Reported: `failed_good_requests` (good requests not answered 200, both
phases; aim 0), `p50_ms` / `p99_ms` of good requests without and with
abuse and their ratio (aim: p99 within 2x), the gateway's RSS before the
abuse (end of the quiet phase), during it (the largest of a sample every
second) and `--settle-seconds` after it (aim: within 10% of before), its
CPU seconds per phase, and each abusive kind's outcomes (status counts,
median time to the answer, bytes sent before the 413).

    python benchmarks/gateway_faults.py [--model multi30k-transformer] \\
        [--clients 32] [--seconds 300] \\
        [--out benchmarks/results/gateway_faults.json]
"""

import argparse
import collections
import http.client
import json
import os
import pathlib
import random
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import serving_load  # noqa: E402
from results_file import REPO_ROOT  # noqa: E402
from results_file import command_line  # noqa: E402
from results_file import update_section  # noqa: E402

from gnmt_tf.flags.arg_types import positive_float  # noqa: E402
from gnmt_tf.flags.arg_types import positive_int  # noqa: E402

GOOD, ABUSE_KINDS = "good", ("chunked_body", "huge_line", "disconnect",
                             "nested_json")
EXPECTED = {"chunked_body": {413}, "huge_line": {400}, "nested_json": {400},
            "disconnect": {"closed"}}


class GatewayProcess:
    """`gnmt-tf gateway` on a free port, with this worktree's packages."""

    def __init__(self, args):
        self.port = serving_load.free_port()
        self.log = tempfile.TemporaryFile(mode="w+")
        env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gnmt_tf.cli.main", "gateway",
             "--model", args.model, "--port", str(self.port),
             "--request-timeout", str(args.request_timeout)],
            cwd=REPO_ROOT, env=env, stdout=self.log, stderr=self.log)

    def wait_ready(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            try:
                status, _ = request(self.port, "GET", "/healthz", None, 5)
                if status == 200:
                    return
            except OSError:
                pass
            time.sleep(1)
        self.log.seek(0)
        raise RuntimeError("the gateway did not start:\n"
                           + self.log.read()[-3000:])

    def cpu_seconds(self):
        with open(f"/proc/{self.process.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf(
            "SC_CLK_TCK")

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)


def request(port, method, path, body, timeout):
    """`(status, parsed JSON or None)` of one request."""
    connection = http.client.HTTPConnection("127.0.0.1", port,
                                            timeout=timeout)
    try:
        headers = {"Content-Type": "application/json"} if body else {}
        connection.request(method, path, body, headers)
        response = connection.getresponse()
        data = response.read()
        try:
            return response.status, json.loads(data)
        except ValueError:
            return response.status, None
    finally:
        connection.close()


class Tally:
    """Thread-safe latencies of good requests, failures and abuse
    outcomes."""

    def __init__(self):
        self.lock = threading.Lock()
        self.good_ms = []
        self.good_failures = collections.Counter()
        self.failure_examples = []
        self.abuse = collections.defaultdict(collections.Counter)
        self.abuse_ms = collections.defaultdict(list)
        self.abuse_bytes = collections.defaultdict(list)
        self.unexpected = []

    def good(self, ms, status, error=None):
        with self.lock:
            if status == 200:
                self.good_ms.append(ms)
            else:
                self.good_failures[str(status)] += 1
                if len(self.failure_examples) < 10:
                    self.failure_examples.append(f"{status}: {error}")

    def abused(self, kind, outcome, ms, sent=None, message=None):
        with self.lock:
            self.abuse[kind][str(outcome)] += 1
            self.abuse_ms[kind].append(ms)
            if sent is not None:
                self.abuse_bytes[kind].append(sent)
            if outcome not in EXPECTED[kind] or (message and "\n" in message):
                self.unexpected.append(f"{kind}: {outcome}: {message}"[:300])


def good_loop(index, port, args, tally, stop):
    rng = random.Random(index)
    while not stop.is_set():
        text = " ".join(rng.sample(serving_load.SENTENCES, rng.randint(2, 4)))
        body = json.dumps({"text": text, "tgt_lang": args.tgt_lang})
        start = time.perf_counter()
        try:
            status, out = request(port, "POST", "/v1/translate", body,
                                  args.request_timeout + 30)
            error = None if status == 200 else (out or {}).get("error")
        except OSError as e:
            status, error = type(e).__name__, str(e)
        tally.good((time.perf_counter() - start) * 1000, status, error)


def _chunked_body(port, args):
    """Streams a huge JSON body in 64 KB chunks until the gateway answers;
    `(status, bytes sent)`."""
    chunk = b"%x\r\n%s\r\n" % (65536, b" " * 65536)
    limit = args.huge_body_mb * 1_000_000
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(b"POST /v1/translate HTTP/1.1\r\nHost: gateway\r\n"
                     b"Content-Type: application/json\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\n"
                     b'5\r\n{"x":\r\n')
        sent = 0
        try:
            while sent < limit and not select.select([sock], [], [], 0)[0]:
                sock.sendall(chunk)
                sent += 65536
            if sent >= limit:
                sock.sendall(b"1\r\n}\r\n0\r\n\r\n")
        except OSError:
            pass  # the gateway answered and closed the connection
        head = sock.recv(65536)
    status = int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/") \
        else "no answer"
    return status, sent


def _disconnect(port, args, document):
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(b"POST /v1/translate HTTP/1.1\r\nHost: gateway\r\n"
                     b"Content-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n%s"
                     % (len(document), document))
        time.sleep(args.disconnect_after_seconds)
    return "closed"


def abuse_loop(kind, port, args, tally, stop):
    rng = random.Random(kind)
    document = json.dumps({"text": " ".join(
        rng.choice(serving_load.SENTENCES)
        for _ in range(args.big_document_sentences)),
        "tgt_lang": args.tgt_lang}).encode()
    huge_line = json.dumps({"text": "word " * args.huge_line_words,
                            "tgt_lang": args.tgt_lang})
    nested = (b'{"text": "A dog.", "tgt_lang": "de", "glossary": '
              + b"[" * args.nesting_depth + b"]" * args.nesting_depth + b"}")
    while not stop.is_set():
        start = time.perf_counter()
        sent, message = None, None
        try:
            if kind == "chunked_body":
                outcome, sent = _chunked_body(port, args)
            elif kind == "disconnect":
                outcome = _disconnect(port, args, document)
            else:
                outcome, out = request(
                    port, "POST", "/v1/translate",
                    huge_line if kind == "huge_line" else nested, 60)
                message = (out or {}).get("error")
        except OSError as e:
            outcome, message = type(e).__name__, str(e)
        tally.abused(kind, outcome, (time.perf_counter() - start) * 1000,
                     sent, message)
        stop.wait(args.abuse_pause_seconds)


def run_phase(seconds, port, args, tally, abuse, rss_series, pid):
    stop = threading.Event()
    threads = [threading.Thread(target=good_loop,
                                args=(i, port, args, tally, stop))
               for i in range(args.clients)]
    if abuse:
        threads += [threading.Thread(target=abuse_loop,
                                     args=(kind, port, args, tally, stop))
                    for kind in ABUSE_KINDS]
    threads.append(threading.Thread(target=serving_load.rss_loop,
                                    args=(pid, rss_series, stop, 1.0)))
    for t in threads:
        t.start()
    stop.wait(seconds)
    stop.set()
    for t in threads:
        t.join()


def _ms(values, q):
    value = serving_load.percentile(values, q)
    return None if value is None else round(value, 1)


def summary(tally):
    return {"good_requests": len(tally.good_ms)
            + sum(tally.good_failures.values()),
            "failed_good_requests": sum(tally.good_failures.values()),
            "failed_good_by_status": dict(tally.good_failures),
            "failed_good_examples": tally.failure_examples,
            "p50_ms": _ms(tally.good_ms, 50), "p99_ms": _ms(tally.good_ms, 99)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="multi30k-transformer",
                        help="model directory or shipped model name")
    parser.add_argument("--tgt-lang", default="de")
    parser.add_argument("--clients", type=positive_int, default=32,
                        help="well-behaved clients (default 32)")
    parser.add_argument("--seconds", type=positive_float, default=300.0,
                        help="length of each measured phase (default 300)")
    parser.add_argument("--warmup-seconds", type=positive_float, default=30.0)
    parser.add_argument("--settle-seconds", type=positive_float,
                        default=10.0, help="idle time before the RSS after "
                        "the abuse is read")
    parser.add_argument("--abuse-pause-seconds", type=positive_float,
                        default=1.0)
    parser.add_argument("--huge-body-mb", type=positive_int, default=1200)
    parser.add_argument("--huge-line-words", type=positive_int,
                        default=20_000)
    parser.add_argument("--big-document-sentences", type=positive_int,
                        default=600)
    parser.add_argument("--disconnect-after-seconds", type=positive_float,
                        default=4.0)
    parser.add_argument("--nesting-depth", type=positive_int, default=100_000)
    parser.add_argument("--request-timeout", type=positive_float,
                        default=120.0, help="the gateway's flag")
    parser.add_argument("--start-timeout", type=positive_float,
                        default=600.0)
    parser.add_argument("--out", default=str(HERE / "results" /
                                             "gateway_faults.json"))
    args = parser.parse_args(argv)

    gateway = GatewayProcess(args)
    try:
        gateway.wait_ready(args.start_timeout)
        pid, port = gateway.process.pid, gateway.port
        rss_after_load = serving_load.rss_mb(pid)
        run_phase(args.warmup_seconds, port, args, Tally(), False, [], pid)
        quiet, abused = Tally(), Tally()
        cpu0 = gateway.cpu_seconds()
        run_phase(args.seconds, port, args, quiet, False, [], pid)
        cpu1 = gateway.cpu_seconds()
        rss_before = serving_load.rss_mb(pid)
        rss_during = []
        run_phase(args.seconds, port, args, abused, True, rss_during, pid)
        cpu2 = gateway.cpu_seconds()
        time.sleep(args.settle_seconds)
        rss_after = serving_load.rss_mb(pid)
        alive = request(port, "GET", "/healthz", None, 30)[0] == 200
        exit_code = gateway.process.poll()
    finally:
        gateway.stop()
        gateway.log.seek(0)
        log = gateway.log.read()

    without, with_abuse = summary(quiet), summary(abused)
    result = {
        "model": args.model, "clients": args.clients,
        "seconds_per_phase": args.seconds,
        "failed_good_requests": without["failed_good_requests"]
        + with_abuse["failed_good_requests"],
        "p50_ms_without_abuse": without["p50_ms"],
        "p99_ms_without_abuse": without["p99_ms"],
        "p50_ms_with_abuse": with_abuse["p50_ms"],
        "p99_ms_with_abuse": with_abuse["p99_ms"],
        "p50_ratio": _ratio(with_abuse["p50_ms"], without["p50_ms"]),
        "p99_ratio": _ratio(with_abuse["p99_ms"], without["p99_ms"]),
        "rss_mb_after_load": rss_after_load,
        "rss_mb_before_abuse": rss_before,
        "rss_mb_during_abuse_max": max(filter(None, rss_during),
                                       default=None),
        "rss_mb_after_abuse": rss_after,
        "rss_after_vs_before_pct": round(
            100 * (rss_after - rss_before) / rss_before, 1),
        "gateway_cpu_s": {"without_abuse": round(cpu1 - cpu0, 1),
                          "with_abuse": round(cpu2 - cpu1, 1)},
        "without_abuse": without, "with_abuse": with_abuse,
        "abuse": {kind: {"outcomes": dict(abused.abuse[kind]),
                         "p50_ms_to_answer": _ms(abused.abuse_ms[kind], 50),
                         **({"p50_bytes_sent": serving_load.percentile(
                             abused.abuse_bytes[kind], 50)}
                            if abused.abuse_bytes[kind] else {})}
                  for kind in ABUSE_KINDS},
        "unexpected": abused.unexpected[:10],
        "gateway_alive_after": alive,
        "gateway_exited_during_run": exit_code is not None,
        "rss_mb_every_second_during_abuse": rss_during,
    }
    if result["failed_good_requests"] or not alive:
        result["gateway_log_tail"] = log[-2000:]
    update_section(args.out, args.model, result,
                   command_line("gateway_faults.py", argv))
    print(json.dumps({k: v for k, v in result.items()
                      if k != "rss_mb_every_second_during_abuse"},
                     indent=1))
    return 0 if not result["failed_good_requests"] and alive else 1


def _ratio(a, b):
    return None if not a or not b else round(a / b, 2)


if __name__ == "__main__":
    sys.exit(main())
