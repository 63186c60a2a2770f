"""Benchmark: training speed (target tokens/s), ours against references.

Two comparisons, each run one after the other on the same machine, with the
same data (Multi30k en->de train), batches of `--max-tokens` target tokens
(default 2,048) and the same number of steps:

1. ``transformer``: our `transformer_small` (`gnmt-tf task-space train
   --directions en-de`: 3+3 layers, d 256, 4 heads, FFN 1024, tied
   embeddings) against OpenNMT-tf 2.32's `Transformer` of the same
   dimensions (shared embeddings, same SentencePiece pieces as input, so the
   same vocabulary and token counts). OpenNMT-tf runs in its own virtualenv
   (`--opennmt-venv`; made here with `--python`, default
   ``/usr/bin/python3.11``, and ``OpenNMT-tf==2.32.0`` +
   ``tensorflow-cpu==2.13.*`` installed from PyPI unless present).
   Reported: ``ours_over_opennmt`` (the issue aims at >= 1.3), and
   ``matmul_bound`` (`matmul_bound.py`: the step's dense products alone,
   timed after the trainings at the shapes of their first batches, an
   upper estimate of any float32 implementation on this machine). With
   `--bfloat16`, ours also trains with ``precision=mixed_bfloat16``
   (``ours_bfloat16_over_opennmt``, ``bfloat16_over_float32``): faster only
   on CPUs with bfloat16 matmuls (``settings.simd_flags``).
2. ``gnmt``: our `gnmt_small` (`gnmt-tf train`), whose LSTMs are written
   by hand (`gnmt_tf.models.gnmt.lstm`), against the same model with each LSTM's
   sequence pass done by `keras.layers.LSTM` on the same weights
   (``ours_over_keras_lstm``).

Target tokens/s is the median of the per-interval rates each trainer logs
(ours: ``metrics.csv``, every `--log-every` steps; OpenNMT-tf: the target
tokens/s of its log line every `--log-every` steps), leaving out the first interval
(tracing, warm-up). Both count target tokens with the end token.

    python benchmarks/training_speed.py --data-dir /work/shared/data/multi30k \\
        [--steps 300] [--log-every 50] [--threads N] [--only transformer]
        [--geometric-buckets] [--bfloat16] [--no-matmul-bound]
        [--bound-batches 16] [--keep-previous-as earlier_before_x]

Writes `benchmarks/results/training_speed.json`.
"""

import argparse
import csv
import json
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import time

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from results_file import command_line, with_earlier  # noqa: E402
from cpu_flags import simd_flags  # noqa: E402

from gnmt_tf.flags.arg_types import positive_int  # noqa: E402
from gnmt_tf.io_utils import write_text_atomic  # noqa: E402

RESULT = REPO_ROOT / "benchmarks" / "results" / "training_speed.json"
OPENNMT_REQUIREMENTS = ("OpenNMT-tf==2.32.0", "tensorflow-cpu==2.13.*")

OPENNMT_MODEL = """\
import opennmt


def model():
    return opennmt.models.Transformer(
        num_layers={layers}, num_units={hidden}, num_heads={heads},
        ffn_inner_dim={ffn}, dropout={dropout}, attention_dropout=0.0,
        ffn_dropout={dropout},
        share_embeddings=opennmt.models.EmbeddingsSharingLevel.ALL)
"""

OPENNMT_CONFIG = """\
model_dir: {model_dir}
data:
  train_features_file: {src}
  train_labels_file: {tgt}
  source_vocabulary: {vocab}
  target_vocabulary: {vocab}
params:
  optimizer: Adam
  optimizer_params: {{beta_1: 0.9, beta_2: 0.998}}
  learning_rate: 2.0
  decay_type: NoamDecay
  decay_params: {{model_dim: {hidden}, warmup_steps: 800}}
  label_smoothing: 0.1
train:
  batch_size: {max_tokens}
  batch_type: tokens
  effective_batch_size: null
  max_step: {steps}
  save_checkpoints_steps: {steps}
  save_summary_steps: {log_every}
  maximum_features_length: {max_length}
  maximum_labels_length: {max_length}
  sample_buffer_size: 100000
  length_bucket_width: 1
"""


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--log-every", type=int, default=50)
    parser.add_argument("--max-tokens", type=int, default=2048)
    parser.add_argument("--max-length", type=int, default=64)
    parser.add_argument("--threads", type=int, default=None,
                        help="intra-op threads of both (default: TF's)")
    parser.add_argument("--only", choices=("transformer", "gnmt"),
                        default=None)
    parser.add_argument("--geometric-buckets", action="store_true",
                        help="also train our Transformer with the earlier "
                             "geometric length buckets (bucket_width=0)")
    parser.add_argument("--bfloat16", action="store_true",
                        help="also train our Transformer with "
                             "precision=mixed_bfloat16")
    parser.add_argument("--no-matmul-bound", action="store_true",
                        help="skip timing the step's dense products alone "
                             "(`matmul_bound.py`)")
    parser.add_argument("--bound-batches", type=positive_int, default=16,
                        help="training batches the matmul bound is taken "
                             "over (default 16)")
    parser.add_argument("--keep-previous-as", default=None,
                        help="keep the rerun comparison's previous figures "
                             "under this key (e.g. earlier_before_x)")
    parser.add_argument("--vocab", default=None,
                        help="a SentencePiece .model for all runs (default: "
                             "our first run trains one)")
    parser.add_argument("--python", default="/usr/bin/python3.11",
                        help="interpreter of OpenNMT-tf's virtualenv")
    parser.add_argument("--opennmt-venv",
                        default="benchmarks/runs/opennmt_venv")
    parser.add_argument("--work-dir", default="benchmarks/runs/training_speed")
    parser.add_argument("--out", default=str(RESULT))
    return parser.parse_args(argv)


def _log(message):
    print(message, file=sys.stderr, flush=True)


def _median_after_first(rates):
    rates = list(rates)[1:] or list(rates)
    return round(statistics.median(rates), 1) if rates else None


def _run(argv, env=None, log_path=None):
    _log("$ " + " ".join(str(a) for a in argv))
    start = time.perf_counter()
    process = subprocess.run([str(a) for a in argv], env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if log_path:
        pathlib.Path(log_path).write_text(process.stdout)
    if process.returncode:
        raise RuntimeError(f"{argv[0]} failed ({process.returncode}):\n"
                           + process.stdout[-3000:])
    return process.stdout, time.perf_counter() - start


def use_keras_lstm():
    """Makes every `gnmt_tf.models.gnmt.lstm.LSTM` run its sequence pass with
    `keras.layers.LSTM`'s CPU implementation (`standard_lstm`, gates in the
    same order) on its own weights: the same model and parameters, Keras'
    recurrence instead of ours. No cell clipping (`gnmt_small` has none)."""
    import tensorflow as tf
    from tf_keras.src.layers.rnn.lstm import standard_lstm

    from gnmt_tf.models.gnmt import lstm

    def call(self, inputs, initial_state=None):
        if self.cell_clip is not None:
            raise ValueError("keras.layers.LSTM cannot clip cell states")
        if initial_state is None:
            initial_state = self.zero_state(tf.shape(inputs)[0],
                                            inputs.dtype)
        outputs = standard_lstm(
            inputs, initial_state[0], initial_state[1], self.kernel,
            self.recurrent_kernel, self.bias, mask=None, time_major=False,
            go_backwards=False, sequence_lengths=None,
            zero_output_for_mask=False, return_sequences=True)
        return outputs[1]

    lstm.LSTM.call = call


def child_main(argv):
    """`training_speed.py --child [--keras-lstm] [--threads N] -- CLI
    ARGS`: `gnmt-tf CLI ARGS` with those settings applied first."""
    keras_lstm = "--keras-lstm" in argv[:argv.index("--")]
    threads = None
    if "--threads" in argv[:argv.index("--")]:
        threads = int(argv[argv.index("--threads") + 1])
    import gnmt_tf  # noqa: F401
    import tensorflow as tf

    if threads:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)
    if keras_lstm:
        use_keras_lstm()
    from gnmt_tf.cli.main import main as cli_main

    return cli_main(argv[argv.index("--") + 1:])


def _our_train(args, preset, model_dir, extra=(), keras_lstm=False,
               sets=()):
    """Trains one of our presets (with `--set` overrides `sets`); returns
    the logged target tokens/s."""
    if model_dir.exists():
        shutil.rmtree(model_dir)
    child = ["--child"] + (["--keras-lstm"] if keras_lstm else []) + (
        ["--threads", args.threads] if args.threads else []) + ["--"]
    argv = [sys.executable, __file__, *child, *extra,
            "--preset", preset, "--model-dir", model_dir,
            "--data-dir", args.data_dir,
            "--log-every", args.log_every,
            "--set", f"train_steps={args.steps}",
            "--set", f"max_tokens={args.max_tokens}",
            "--set", f"max_length={args.max_length}",
            "--set", f"checkpoint_every={args.steps}",
            "--set", f"bleu_every={10 * args.steps}"]
    for setting in sets:
        argv += ["--set", setting]
    if args.vocab:
        argv += ["--vocab", pathlib.Path(args.vocab).resolve()]
    _, seconds = _run(argv, env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)),
                      log_path=model_dir.parent / f"{model_dir.name}.log")
    with open(model_dir / "metrics.csv", newline="") as f:
        rates = [float(row["value"]) for row in csv.DictReader(f)
                 if row["metric"] == "target_tokens_per_s"]
    return {"target_tokens_per_s": _median_after_first(rates),
            "interval_rates": rates, "wall_seconds": round(seconds, 1)}


def _opennmt_python(args):
    venv = pathlib.Path(args.opennmt_venv).resolve()
    python = venv / "bin" / "python"
    if not python.exists():
        _run([args.python, "-m", "venv", venv])
    check = subprocess.run([python, "-c", "import opennmt"],
                           capture_output=True)
    if check.returncode:
        _run([python, "-m", "pip", "install", "--quiet",
              *OPENNMT_REQUIREMENTS])
    return python


def _opennmt_data(args, spm_path, work):
    """Train files as SentencePiece pieces and a vocabulary, from our
    model's `spm.model`, so both see the same tokens."""
    import sentencepiece as spm

    from gnmt_tf.data import corpus

    processor = spm.SentencePieceProcessor(model_file=str(spm_path))
    src, tgt = corpus.read_parallel(args.data_dir, "train", "en", "de")
    paths = {"src": work / "train.en.sp", "tgt": work / "train.de.sp",
             "vocab": work / "vocab.txt"}
    for key, lines in (("src", src), ("tgt", tgt)):
        with open(paths[key], "w", encoding="utf-8") as f:
            for pieces in processor.encode(lines, out_type=str):
                f.write(" ".join(pieces) + "\n")
    specials = {processor.pad_id(), processor.bos_id(), processor.eos_id(),
                processor.unk_id()}
    with open(paths["vocab"], "w", encoding="utf-8") as f:
        f.write("<blank>\n<s>\n</s>\n")  # OpenNMT-tf's specials first
        for i in range(processor.get_piece_size()):
            if i not in specials:
                f.write(processor.id_to_piece(i) + "\n")
    return paths


def opennmt_train(args, spm_path, work, dims):
    python = _opennmt_python(args)
    paths = _opennmt_data(args, spm_path, work)
    model_dir = work / "opennmt_model"
    if model_dir.exists():
        shutil.rmtree(model_dir)
    (work / "opennmt_model.py").write_text(OPENNMT_MODEL.format(**dims))
    (work / "opennmt.yml").write_text(OPENNMT_CONFIG.format(
        model_dir=model_dir, **{k: p for k, p in paths.items()},
        steps=args.steps, log_every=args.log_every,
        max_tokens=args.max_tokens, max_length=args.max_length, **dims))
    argv = [python, "-m", "opennmt.bin.main",
            "--model", work / "opennmt_model.py",
            "--config", work / "opennmt.yml", "--log_level", "INFO"]
    if args.threads:
        argv += ["--intra_op_parallelism_threads", args.threads,
                 "--inter_op_parallelism_threads", args.threads]
    argv += ["train"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    output, seconds = _run(argv, env=env,
                           log_path=work / "opennmt_train.log")
    # "tokens/s = 125 (59 source, 66 target)" (2.32), or older versions'
    # "target words/s = 66".
    rates = [float(m) for m in re.findall(
        r"tokens/s = [0-9.]+ \([0-9.]+ source, ([0-9.]+) target\)", output)
        or re.findall(r"target words/s = ([0-9.]+)", output)]
    return {"target_tokens_per_s": _median_after_first(rates),
            "interval_rates": rates, "wall_seconds": round(seconds, 1),
            "version": OPENNMT_REQUIREMENTS}


def transformer(args, work):
    from gnmt_tf.models.task_space.presets import TRANSFORMER_PRESETS

    preset = TRANSFORMER_PRESETS["transformer_small"]
    ours_dir = work / "ours_transformer"

    def train(directory, sets=()):  # our Transformer, en->de
        return _our_train(args, "transformer_small", directory,
                          ["task-space", "train", "--directions", "en-de"],
                          sets=sets)

    def rate_ratio(a, b):
        return (round(a["target_tokens_per_s"] / b["target_tokens_per_s"], 3)
                if b.get("target_tokens_per_s") else None)

    ours = train(ours_dir)
    dims = {"layers": preset["num_layers"], "hidden": preset["hidden_dim"],
            "heads": preset["num_heads"], "ffn": preset["intermediate_dim"],
            "dropout": preset["dropout"]}
    try:
        opennmt = opennmt_train(args, ours_dir / "spm.model", work, dims)
    except (RuntimeError, OSError) as e:
        opennmt = {"error": str(e)[-2000:]}
    result = {"ours": ours, "opennmt": opennmt,
              "ours_over_opennmt": rate_ratio(ours, opennmt), "model": dims}
    if args.geometric_buckets:
        # What batching pairs of one length (bucket_width=1, the default
        # since issue 17, as OpenNMT-tf's length_bucket_width) gains over
        # the earlier 25 %-wide buckets, in the same run.
        geometric = train(work / "ours_transformer_geometric",
                          ["bucket_width=0"])
        result["ours_geometric_buckets"] = geometric
        result["bucket_width1_over_geometric"] = rate_ratio(ours, geometric)
    if not args.no_matmul_bound:
        # Its own process: one TensorFlow thread per product.
        spec, out = work / "matmul_bound_spec.json", work / "matmul_bound.json"
        spec.write_text(json.dumps(_bound_spec(args, ours_dir)))
        _run([sys.executable, REPO_ROOT / "benchmarks" / "matmul_bound.py",
              spec, out], env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)),
             log_path=work / "matmul_bound.log")
        bound = json.loads(out.read_text())
        result["matmul_bound"] = bound
        for name in ("separate", "fused"):
            result["matmul_bound"][name].update({
                "ours_over_bound": rate_ratio(ours, bound[name]),
                "opennmt_over_bound": rate_ratio(opennmt, bound[name]),
                "bound_over_opennmt": rate_ratio(bound[name], opennmt)})
    if args.bfloat16:
        # bfloat16 compute against OpenNMT-tf's float32: a faster step only
        # where the CPU has bfloat16 matmuls (`simd_flags`); its BLEU cost
        # is measured by `gnmt_ablation.py`.
        mixed = train(work / "ours_transformer_bfloat16",
                      ["precision=mixed_bfloat16"])
        result["ours_bfloat16"] = mixed
        result["ours_bfloat16_over_opennmt"] = rate_ratio(mixed, opennmt)
        result["bfloat16_over_float32"] = rate_ratio(mixed, ours)
    return result


def _bound_spec(args, model_dir):
    """`matmul_bound.py`'s input for our run in `model_dir`: its model's
    dimensions and `(B, S, T, target tokens)` of the first
    `--bound-batches` batches its trainer made (its data pipeline,
    settings and seed; `S` and `T` with the end token, `T` with the start
    token)."""
    import tensorflow as tf

    from gnmt_tf.config import TrainConfig
    from gnmt_tf.text.subword import Subwords
    from gnmt_tf.data import multiway as data_lib
    from gnmt_tf.models.task_space.config import TransformerConfig

    payload = json.loads((model_dir / "config.json").read_text())
    model_config = TransformerConfig(**payload["model"])
    train_config = TrainConfig(**payload["train"])
    options = payload["task_space"]
    pairs = data_lib.parse_directions(options["directions"],
                                      model_config.languages)
    examples = data_lib.load_multi30k(
        args.data_dir, "train", pairs, data_lib.parse_tags(options["tags"]),
        options.get("max_lines"), model_config.languages)
    encoded = data_lib.encode_examples(
        examples, Subwords(model_dir / "spm.model"), model_config,
        options["target_language_token"])
    dataset = data_lib.make_task_dataset(
        encoded, train_config.max_tokens, train_config.max_length,
        shuffle_buffer=train_config.shuffle_buffer, seed=train_config.seed,
        **train_config.bucketing())
    shapes = []
    for features, labels in dataset.take(args.bound_batches):
        batch, sources = features["source_ids"].shape
        shapes.append((batch, sources, labels.shape[1],
                       int(tf.math.count_nonzero(labels))))
    return {"batches": shapes, "layers": model_config.num_layers,
            "width": model_config.hidden_dim,
            "ffn": model_config.intermediate_dim,
            "vocabulary": model_config.vocabulary_size}


def gnmt(args, work):
    # Without input feeding every LSTM runs its whole-sequence `call`, the
    # pass `use_keras_lstm` swaps (with it the bottom decoder layer steps
    # inside the attention loop, the same code in both runs). Three encoder
    # layers, as in the runs `training_speed.json` records.
    sets = ("input_feeding=false", "num_encoder_layers=3")
    ours = _our_train(args, "gnmt_small", work / "ours_gnmt", ["train"],
                      sets=sets)
    keras = _our_train(args, "gnmt_small", work / "keras_lstm_gnmt",
                       ["train"], keras_lstm=True, sets=sets)
    return {"ours": ours, "keras_lstm": keras,
            "ours_over_keras_lstm": round(
                ours["target_tokens_per_s"]
                / keras["target_tokens_per_s"], 3)}


def main(argv=None):
    args = parse_args(argv)
    work = pathlib.Path(args.work_dir).resolve()
    work.mkdir(parents=True, exist_ok=True)
    out = pathlib.Path(args.out)
    # --only reruns one comparison and keeps the other's figures.
    results = (json.loads(out.read_text())
               if args.only and out.exists() else {})
    out.parent.mkdir(parents=True, exist_ok=True)

    def write(name):  # after each comparison: a long run keeps what it did
        results["settings"] = {
            "steps": args.steps, "log_every": args.log_every,
            "max_tokens": args.max_tokens, "max_length": args.max_length,
            "threads": args.threads, "data": "Multi30k en-de train",
            "vocab": args.vocab, "cpu_count": os.cpu_count(),
            "load_average_at_end": os.getloadavg(),
            "simd_flags": simd_flags(),
            "unit": "target tokens/s, median of logged intervals after the "
                    "first"}
        results["command"] = command_line("training_speed.py", argv)
        # Each comparison keeps the command and settings it was run with.
        results[name]["command"] = results["command"]
        results[name]["settings"] = results["settings"]
        write_text_atomic(out, json.dumps(results, indent=2) + "\n")

    for name, run in (("transformer", transformer), ("gnmt", gnmt)):
        if args.only in (None, name):
            previous = results.get(name, {})
            results[name] = with_earlier(run(args, work), previous,
                                         args.keep_previous_as)
            _log(json.dumps(results[name], indent=1))
            write(name)
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        sys.exit(child_main(sys.argv[2:]))
    sys.exit(main())
