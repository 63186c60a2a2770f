"""Benchmark: the training step with and without XLA (`jit_compile`).

For each model (`gnmt_small`, `transformer_small`, vocabulary 8,000) a fresh
model is compiled by `gnmt_tf.training.trainer.compile_model` with
`TrainConfig.jit_compile` off, then on, and trained on random batches of
one fixed shape (`--batch` sentences x `--length` tokens on both sides, so
every target token is real). Reported: the first step's seconds (tracing,
and for XLA the compilation of that shape) and the median seconds of the
next `--steps` steps, with ``xla_speedup`` = plain / XLA median.

A training run compiles one program per batch shape: with
`jit_compile=True` the batches are padded to their length bucket's boundary
(about a dozen shapes for `max_length` 64), so the first-step cost is paid
about a dozen times per run.

    python benchmarks/xla_train_step.py [--models gnmt,transformer] \\
        [--batch 64] [--length 32] [--steps 15] [--threads N]

Writes `benchmarks/results/xla_train_step.json`.
"""

import argparse
import json
import os
import pathlib
import platform
import statistics
import sys
import time

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from results_file import command_line  # noqa: E402

RESULT = REPO_ROOT / "benchmarks" / "results" / "xla_train_step.json"
VOCABULARY = 8000


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="gnmt,transformer")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--length", type=int, default=32)
    parser.add_argument("--steps", type=int, default=15)
    parser.add_argument("--threads", type=int, default=None,
                        help="intra-op threads (default: TensorFlow's)")
    parser.add_argument("--out", default=str(RESULT))
    args = parser.parse_args(argv)
    for name in ("batch", "length", "steps"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1")
    models = args.models.split(",")
    unknown = set(models) - {"gnmt", "transformer"}
    if unknown:
        parser.error(f"unknown --models {sorted(unknown)}; "
                     "known: gnmt, transformer")
    args.models = models
    return args


def model_factory(name):
    """`(make_model, train_config, task_columns)` for `gnmt` or
    `transformer` (the `_small` presets at vocabulary 8,000)."""
    if name == "gnmt":
        from gnmt_tf.models.gnmt.model import GNMT
        from gnmt_tf.models.gnmt.presets import get_preset

        model_config, train_config = get_preset("gnmt_small")
        assert model_config.vocabulary_size == VOCABULARY
        return (lambda: GNMT(model_config)), train_config, {}
    from gnmt_tf.models.task_space.task_space_translation_model import (
                                                                        TaskSpaceTranslationModel)
    from gnmt_tf.models.task_space.training import get_preset

    model_config, train_config = get_preset("transformer_small")
    model_config = model_config.replace(vocabulary_size=VOCABULARY)
    return ((lambda: TaskSpaceTranslationModel(model_config)), train_config,
            {"src_lang": 0, "tgt_lang": 1, "tags": model_config.num_tags})


def random_batch(rng, batch, length, task_columns):
    import numpy as np

    source = rng.integers(4, VOCABULARY, size=(batch, length)).astype(np.int32)
    target = rng.integers(4, VOCABULARY, size=(batch, length)).astype(np.int32)
    features = {"source_ids": source, "target_in_ids": target}
    if task_columns:
        features["src_lang"] = np.full([batch], task_columns["src_lang"],
                                       np.int32)
        features["tgt_lang"] = np.full([batch], task_columns["tgt_lang"],
                                       np.int32)
        features["tags"] = np.zeros([batch, task_columns["tags"]], np.int32)
    return features, target


def time_steps(name, jit, args):
    """`{"first_step_s", "median_step_s"}` of one model, XLA on or off."""
    import numpy as np

    from gnmt_tf.config import apply_overrides
    from gnmt_tf.training.trainer import compile_model

    make_model, train_config, task_columns = model_factory(name)
    model = make_model()
    compile_model(model, apply_overrides(train_config,
                                         [f"jit_compile={jit}"]))
    rng = np.random.default_rng(0)
    times = []
    for _ in range(args.steps + 1):
        features, labels = random_batch(rng, args.batch, args.length,
                                        task_columns)
        start = time.perf_counter()
        model.train_on_batch(features, labels)
        times.append(time.perf_counter() - start)
    return {"first_step_s": round(times[0], 2),
            "median_step_s": round(statistics.median(times[1:]), 4)}


def main(argv=None):
    args = parse_args(argv)
    import gnmt_tf  # noqa: F401  (oneDNN on, as in training)
    import tensorflow as tf

    if args.threads:
        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    results = {"batch": args.batch, "length": args.length,
               "steps": args.steps, "machine": platform.processor()
               or platform.machine(), "cores": os.cpu_count(),
               "onednn": os.environ.get("TF_ENABLE_ONEDNN_OPTS")}
    for name in args.models:
        plain = time_steps(name, False, args)
        xla = time_steps(name, True, args)
        results[name] = {
            "plain": plain, "xla": xla,
            "xla_speedup": round(plain["median_step_s"]
                                 / xla["median_step_s"], 3)}
        print(f"{name}: plain {plain['median_step_s']:.3f} s/step, XLA "
              f"{xla['median_step_s']:.3f} s/step (first step "
              f"{plain['first_step_s']:.1f} / {xla['first_step_s']:.1f} s): "
              f"XLA {results[name]['xla_speedup']:.2f}x", flush=True)
    results["command"] = command_line("xla_train_step.py", argv)
    from gnmt_tf.io_utils import write_text_atomic

    write_text_atomic(args.out, json.dumps(results, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
