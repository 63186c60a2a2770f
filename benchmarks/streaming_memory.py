"""Benchmark: `gnmt-tf translate` keeps its memory bounded on a 1 GB input.

Writes a 1 GB text file (Multi30k English lines, repeated) into a temporary
folder (deleted afterwards, never in git), streams it through
`gnmt-tf translate --model M --beam-size 1` and, at line checkpoints of
the output (1k, 2k, 5k, ... 200k lines), samples the process's RSS
(`/proc/PID/status`) and how far it has read its input:

- ``file``: `--input FILE`; the read position is the offset of the
  process's descriptor of the file (`/proc/PID/fdinfo`);
- ``pipe``: the file written into the process's stdin by this script;
  the read position is at most the bytes written, at least that minus the
  pipe's buffer (64 KiB on Linux).

Translating the whole gigabyte takes hours on a CPU: each run stops after
`--max-lines` output lines or `--seconds` (whichever first) and is killed;
the figures show whether RSS grows with the input read and whether the CLI
reads ahead of what it translates (the input bytes of the lines output so
far, against the read position). Results go to `--out`.

    python benchmarks/streaming_memory.py --model benchmarks/runs/beam_tiny
"""

import argparse
import gzip
import json
import os
import pathlib
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time

# The packages before benchmarks/, whose alignment.py and pipeline.py
# would shadow them (this script runs with benchmarks/ as sys.path[0]).
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(1, str(HERE))  # after the repository root

from results_file import command_line, write_text_atomic  # noqa: E402

GNMT_TF = [sys.executable, "-m", "gnmt_tf.cli.main"]
CHECKPOINTS = (1000, 2000, 5000, 10000, 20000, 50000, 100000, 200000,
               300000, 500000)


def make_input(path, source, size):
    """Writes `source`'s lines repeated to `size` bytes; returns the block
    (one pass over the lines, as bytes) and its line count."""
    with gzip.open(source, "rb") as f:
        block = f.read()
    if not block.endswith(b"\n"):
        block += b"\n"
    with open(path, "wb") as f:
        written = 0
        while written < size:
            f.write(block)
            written += len(block)
    return block, block.count(b"\n")


def offset_of_line(block, lines, k):
    """Input bytes before line `k` (0-based) of the repeated file."""
    starts = offset_of_line.starts = getattr(offset_of_line, "starts", None) \
        or [0] + [i + 1 for i, b in enumerate(block) if b == 10]
    return (k // lines) * len(block) + starts[k % lines]


def _rss_mb(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return (int(fields["VmRSS"].split()[0]) / 1024,
            int(fields["VmHWM"].split()[0]) / 1024)


def _file_position(pid, path):
    """The read offset of `pid`'s descriptor of `path`, or None."""
    target = os.path.realpath(path)
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == target:
                with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                    return int(f.readline().split()[1])
        except OSError:
            continue
    return None


def run_mode(mode, args, path, block, lines_per_block, size):
    cmd = GNMT_TF + ["translate", "--model", args.model, "--beam-size", "1",
                     "--batch-size", str(args.batch_size)]
    if mode == "file":
        cmd += ["--input", str(path)]
    env = dict(os.environ, PYTHONPATH=str(HERE.parent))
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd, stdin=subprocess.PIPE if mode == "pipe" else subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    written = [0]

    def feed():
        try:
            with open(path, "rb") as f:
                while True:
                    chunk = f.read(1 << 16)
                    if not chunk:
                        break
                    proc.stdin.write(chunk)
                    written[0] += len(chunk)
            proc.stdin.close()
        except (BrokenPipeError, ValueError, OSError):
            pass

    if mode == "pipe":
        threading.Thread(target=feed, daemon=True).start()
    samples, count = [], 0
    marks = [c for c in CHECKPOINTS if c <= args.max_lines]
    first_line = None
    timer = threading.Timer(args.seconds, proc.kill)
    timer.start()
    try:
        for _ in iter(proc.stdout.readline, b""):
            count += 1
            if first_line is None:
                first_line = time.perf_counter() - start
            if marks and count == marks[0]:
                marks.pop(0)
                rss, peak = _rss_mb(proc.pid)
                read = (_file_position(proc.pid, path) if mode == "file"
                        else written[0])
                samples.append({
                    "lines_out": count,
                    "seconds": round(time.perf_counter() - start, 1),
                    "rss_mb": round(rss, 1), "peak_rss_mb": round(peak, 1),
                    "input_bytes_of_lines_out": offset_of_line(
                        block, lines_per_block, count),
                    "input_bytes_read" if mode == "file" else
                    "input_bytes_accepted_by_pipe": read})
                print(mode, json.dumps(samples[-1]), flush=True)
                if not marks:
                    break
    finally:
        timer.cancel()
        proc.kill()
        proc.wait()
    seconds = time.perf_counter() - start
    return {"samples": samples, "lines_out": count,
            "seconds": round(seconds, 1),
            "seconds_to_first_line": round(first_line or 0, 1),
            "stopped": ("after --max-lines" if count >= args.max_lines
                        else f"after --seconds {args.seconds}"),
            "input_fraction_translated": round(
                offset_of_line(block, lines_per_block, count) / size, 6)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--data", default="/work/shared/data/multi30k/"
                        "train.en.gz")
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--max-lines", type=int, default=200000)
    parser.add_argument("--seconds", type=float, default=240)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--modes", default="file,pipe")
    parser.add_argument("--out", default=str(HERE / "results" /
                                             "streaming_memory.json"))
    args = parser.parse_args()
    work = pathlib.Path(tempfile.mkdtemp(prefix="streaming_memory_"))
    try:
        path = work / "input.en"
        size = args.size_mb << 20
        begin = time.perf_counter()
        block, lines_per_block = make_input(path, args.data, size)
        size = path.stat().st_size
        print(f"wrote {size / 2**20:.0f} MiB ({size // len(block)} x "
              f"{lines_per_block} lines) in "
              f"{time.perf_counter() - begin:.0f} s", flush=True)
        modes = {mode: run_mode(mode, args, path, block, lines_per_block,
                                size)
                 for mode in args.modes.split(",")}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for result in modes.values():
        samples = result["samples"]
        if len(samples) >= 2:
            result["rss_growth_mb_first_to_last_sample"] = round(
                samples[-1]["rss_mb"] - samples[0]["rss_mb"], 1)
    result = {
        "command": command_line("streaming_memory.py"),
        "model": args.model, "search": "greedy (--beam-size 1)",
        "batch_size": args.batch_size,
        "input_bytes": size, "input_lines": (size // len(block))
        * lines_per_block, "data": f"{args.data}, repeated",
        "cpus": os.cpu_count(), "machine": platform.machine(),
        "note": "each run stops after --max-lines output lines or "
                "--seconds and is killed: translating the whole input "
                "would take hours",
        "modes": modes,
    }
    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out, json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
