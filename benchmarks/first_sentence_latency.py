"""Benchmark: how long one input line takes through `gnmt-tf translate
--model multi30k-transformer`, from the command's start to its output.

Each run is a fresh process (`python -m gnmt_tf.cli.main translate`, one
en->de caption on stdin, the default search: beam 5), with its own empty
or prepared caches, so the figures are what a user sees:

- ``default_first_run``: the default engine (``auto``) with empty caches:
  the shipped model's gzipped float32 TFLite export is unpacked into the
  cache and translates (one sentence at the default beam: its whole-search
  signature, one interpreter call); no TensorFlow;
- ``default_next_run``: the same again, the export already unpacked;
- ``xla_first_run`` / ``xla_next_run``: ``--engine xla`` with an empty,
  then a filled persistent XLA cache (what a model without a shipped
  export runs until its export is cached);
- ``graph``: ``--engine graph``, the search as a TensorFlow graph.

Each is the median wall time of `--repeats` runs. In-process, the same
steps are then timed part by part (``parts``): the imports, the model
load, the first call (tracing and XLA compiling included) and a second
call, for the XLA engine and for the TFLite host translator.

    python benchmarks/first_sentence_latency.py [--repeats 3]

Writes `benchmarks/results/first_sentence_latency.json`.
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

from results_file import (REPO_ROOT, command_line,  # (this script's folder)
                          with_earlier)
from cpu_flags import simd_flags

from gnmt_tf.flags.arg_types import positive_int
from gnmt_tf.io_utils import write_text_atomic

RESULT = REPO_ROOT / "benchmarks" / "results" / "first_sentence_latency.json"
MODEL = "multi30k-transformer"
LINE = "A black dog is running through the snow.\n"
TASK = ["--src-lang", "en", "--tgt-lang", "de", "--tags", "caption"]

# In-process parts (a child process each, so that imports are cold).
_PARTS = r"""
import json, sys, time
start = time.perf_counter()
parts = {}
engine = sys.argv[1]
task = dict(src_lang="en", tgt_lang="de", tags=["caption"])
if engine == "tflite":
    from gnmt_tf import tflite_cache
    from gnmt_tf.host_translator import HostTranslator
    from gnmt_tf.pretrained import locate
    from gnmt_tf.translation import SearchOptions
    parts["import_s"] = time.perf_counter() - start
    mark = time.perf_counter()
    translator = HostTranslator.from_tflite(tflite_cache.cached(locate("%s")))
else:
    import tensorflow  # noqa: F401
    parts["import_tensorflow_s"] = time.perf_counter() - start
    mark = time.perf_counter()
    from gnmt_tf import SearchOptions, Translator
    parts["import_gnmt_tf_s"] = time.perf_counter() - mark
    mark = time.perf_counter()
    translator = Translator.from_model_dir("%s", jit_compile_search=True)
parts["load_model_s"] = time.perf_counter() - mark
for key in ("first_call_s", "second_call_s"):
    mark = time.perf_counter()
    out = translator.translate(["%s"], SearchOptions(), **task)
    parts[key] = time.perf_counter() - mark
parts["tensorflow_loaded"] = "tensorflow" in sys.modules
parts["output"] = out[0]
print("PARTS " + json.dumps(parts))
""" % (MODEL, MODEL, LINE.strip())


def _env(caches, **extra):
    return dict(os.environ, GNMT_TF_XLA_CACHE=os.path.join(caches, "xla"),
                GNMT_TF_TFLITE_CACHE=os.path.join(caches, "tflite"),
                TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=str(REPO_ROOT), **extra)


def run_translate(caches, engine):
    """Wall seconds and output of one `gnmt-tf translate` process."""
    start = time.perf_counter()
    process = subprocess.run(
        [sys.executable, "-m", "gnmt_tf.cli.main", "translate", "--model",
         MODEL, "--engine", engine, *TASK], input=LINE,
        capture_output=True, text=True, env=_env(caches))
    seconds = time.perf_counter() - start
    if process.returncode:
        raise RuntimeError(process.stderr[-2000:])
    return seconds, process.stdout.strip()


def run_parts(caches, engine):
    process = subprocess.run([sys.executable, "-c", _PARTS, engine],
                             capture_output=True, text=True,
                             env=_env(caches))
    lines = [line for line in process.stdout.splitlines()
             if line.startswith("PARTS ")]
    if process.returncode or not lines:
        raise RuntimeError(process.stderr[-2000:])
    return {key: round(value, 3) if isinstance(value, float) else value
            for key, value in json.loads(lines[-1][6:]).items()}


def measure(repeats):
    """`{key: median seconds}`, the outputs, and every run's seconds."""
    runs = {key: [] for key in ("default_first_run", "default_next_run",
                                "xla_first_run", "xla_next_run", "graph")}
    outputs = set()
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as caches:
            for key, engine in (("default_first_run", "auto"),
                                ("default_next_run", "auto")):
                seconds, output = run_translate(caches, engine)
                runs[key].append(seconds)
                outputs.add(output)
        with tempfile.TemporaryDirectory() as caches:
            for key, engine in (("xla_first_run", "xla"),
                                ("xla_next_run", "xla"), ("graph", "graph")):
                seconds, output = run_translate(caches, engine)
                runs[key].append(seconds)
                outputs.add(output)
    return ({key: round(statistics.median(v), 3) for key, v in runs.items()},
            sorted(outputs), {k: [round(s, 3) for s in v]
                              for k, v in runs.items()})


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=positive_int, default=3)
    parser.add_argument("--output", default=str(RESULT))
    parser.add_argument("--keep-previous-as", default=None,
                        help="file the output's previous figures under this "
                             "key (e.g. earlier_beam4)")
    args = parser.parse_args(argv)

    medians, outputs, runs = measure(args.repeats)
    parts = {}
    with tempfile.TemporaryDirectory() as caches:
        parts["xla_empty_cache"] = run_parts(caches, "xla")
        parts["xla_filled_cache"] = run_parts(caches, "xla")
        run_translate(caches, "auto")  # unpacks the shipped export
        parts["tflite"] = run_parts(caches, "tflite")
    for name, figures in {**medians, **parts}.items():
        print(f"{name}: {figures}")
    results = {
        **{f"{key}_s": value for key, value in medians.items()},
        "parts": parts,
        "outputs": outputs,
        "runs_s": runs,
        "command": command_line("first_sentence_latency.py", argv),
        "settings": {
            "model": MODEL, "input": LINE.strip(), "search": "the default (beam 5)",
            "repeats": args.repeats, "cpu_count": os.cpu_count(),
            "simd_flags": simd_flags(),
            "load_average_at_end": list(os.getloadavg()),
            "note": "wall time of a fresh process from start to output; "
                    "caches in a new temporary folder per repeat",
        },
    }
    path = pathlib.Path(args.output)
    previous = json.loads(path.read_text()) if path.exists() else {}
    results = with_earlier(results, previous, args.keep_previous_as)
    write_text_atomic(path, json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
