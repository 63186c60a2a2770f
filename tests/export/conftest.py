"""Fixtures for the export tests: a tiny trained GNMT and a tiny trained
task-space Transformer, with their SavedModel, TFLite and ONNX exports.

Training, exporting and loading the export in a fresh process take several
seconds each, so all are session-scoped and shared by every test in
`tests/export`.
"""

import json
import random
import subprocess
import sys
import types

import pytest

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

# A toy English->German lexicon: enough distinct characters for a 64-piece
# SentencePiece model, and a word-for-word mapping a tiny model half learns.
LEXICON = {
    "the": "die", "a": "eine", "man": "mann", "woman": "frau", "dog": "hund",
    "cat": "katze", "child": "kind", "house": "haus", "big": "gross",
    "small": "klein", "red": "rot", "blue": "blau", "green": "gruen",
    "sees": "sieht", "eats": "isst", "runs": "rennt", "jumps": "springt",
    "and": "und", "with": "mit", "water": "wasser", "bread": "brot",
    "quickly": "schnell", "today": "heute", "very": "sehr", "old": "alt",
    "young": "jung", "park": "park", "ball": "ball", "plays": "spielt",
    "in": "in", "on": "auf", "street": "strasse", "happy": "froh",
}
SENTENCES = ["the man sees a dog", "a small cat eats bread",
             "the child plays with a red ball", "   ",
             "the big dog runs in the park today"]
# The export's search options (CLI flags) and its extra compiled beam sizes.
BEAM_SIZE, ALPHA, BETA = 3, 0.6, 0.2
EXTRA_BEAM_SIZES = (1,)
# The task-space TFLite export's KV cache: longer than the model's
# max_sequence_length (16), which still bounds the output.
TS_CACHE_LENGTH = 32


@pytest.fixture(scope="session")
def settings():
    """The constants above, for test modules (which cannot import conftest)."""
    return types.SimpleNamespace(
        sentences=SENTENCES, beam_size=BEAM_SIZE, alpha=ALPHA, beta=BETA,
        extra_beam_sizes=EXTRA_BEAM_SIZES)


def make_pairs(count, seed):
    """`count` synthetic (english, german) sentence pairs of 3-7 words."""
    rng = random.Random(seed)
    words = sorted(LEXICON)
    pairs = []
    for _ in range(count):
        en = [rng.choice(words) for _ in range(rng.randint(3, 7))]
        pairs.append((" ".join(en), " ".join(LEXICON[w] for w in en)))
    return pairs


@pytest.fixture(scope="session")
def toy_data_dir(tmp_path_factory):
    """A data directory with `train.{en,de}` and `val.{en,de}`."""
    path = tmp_path_factory.mktemp("toy_data")
    for split, count, seed in (("train", 150, 1), ("val", 20, 2)):
        pairs = make_pairs(count, seed)
        (path / f"{split}.en").write_text("".join(en + "\n" for en, _ in pairs))
        (path / f"{split}.de").write_text("".join(de + "\n" for _, de in pairs))
    return path


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory, toy_data_dir):
    """A `gnmt_tiny` model directory trained briefly on the toy data.

    400 steps at a high learning rate: enough that searches produce non-empty,
    sentence-dependent output (after 20 steps every translation is empty).
    """
    from gnmt_tf.config import apply_overrides
    from gnmt_tf.presets import get_preset
    from gnmt_tf.training.trainer import train_gnmt

    model_config, train_config = get_preset("gnmt_tiny")
    train_config = apply_overrides(train_config, [
        "train_steps=400", "checkpoint_every=200", "learning_rate=0.03",
        "label_smoothing=0.0"])
    path = tmp_path_factory.mktemp("tiny_model")
    train_gnmt(path, toy_data_dir, "en", "de", model_config, train_config,
               log_every=1000)
    return path


@pytest.fixture(scope="session")
def export_dir(tmp_path_factory, tiny_model_dir):
    """The tiny model exported through `gnmt-tf export savedmodel`."""
    from gnmt_tf.cli.main import main

    base = tmp_path_factory.mktemp("exports")
    warmup = base / "warmup.txt"
    warmup.write_text("".join(s + "\n" for s in SENTENCES[:3]))
    path = base / "tiny" / "1"
    code = main(["export", "savedmodel", "--model", str(tiny_model_dir),
                 "--out", str(path), "--beam-size", str(BEAM_SIZE),
                 "--alpha", str(ALPHA), "--beta", str(BETA),
                 "--beam-sizes", ",".join(map(str, EXTRA_BEAM_SIZES)),
                 "--warmup", str(warmup)])
    assert code == 0
    return path


# Scripts run in a fresh interpreter: nothing of the exporting process
# (registered functions, Python objects) can leak into what the SavedModel
# does. A script is FRESH_PRELUDE + a body + FRESH_WARMUP_REPLAY: the prelude
# records which ops TensorFlow knows before/after importing tensorflow_text,
# loads the export (`sigs`) and its signatures, and defines `texts`; the
# epilogue replays the warm-up requests and prints `out`.
FRESH_PRELUDE = r"""
import json, math, sys
import gnmt_tf  # only sets TF_USE_LEGACY_KERAS / log level
import numpy as np
import tensorflow as tf
from tensorflow.python.framework import op_def_registry

args = json.loads(sys.argv[1])
out = {"core_ops": sorted(op for op in args["ops"]
                          if op_def_registry.get(op) is not None)}
import tensorflow_text  # noqa: F401  (the model server links these ops in)
out["registered_ops"] = sorted(op for op in args["ops"]
                               if op_def_registry.get(op) is not None)

loaded = tf.saved_model.load(args["export_dir"])
sigs = loaded.signatures
out["signatures"] = {
    name: {"inputs": {k: [v.dtype.name, v.shape.as_list()] for k, v in
                      f.structured_input_signature[1].items()},
           "outputs": {k: [v.dtype.name, v.shape.as_list()] for k, v in
                       f.structured_outputs.items()}}
    for name, f in sigs.items()}

def texts(result):
    return {"translations": [t.decode("utf-8") for t in
                             result["translations"].numpy()],
            "scores": result["scores"].numpy().tolist()}
"""

FRESH_WARMUP_REPLAY = r"""
from tensorflow_serving.apis import prediction_log_pb2
warmup = []
for record in tf.data.TFRecordDataset(args["warmup_file"]):
    log = prediction_log_pb2.PredictionLog.FromString(record.numpy())
    request = log.predict_log.request
    inputs = {k: tf.constant(tf.make_ndarray(v))
              for k, v in request.inputs.items()}
    result = sigs[request.model_spec.signature_name](**inputs)
    warmup.append([request.model_spec.name, request.model_spec.signature_name,
                   sorted(inputs), int(result["translations"].shape[0])])
out["warmup"] = warmup
print("RESULT" + json.dumps(out))
"""


def run_fresh_process(body, args):
    """Runs `FRESH_PRELUDE + body + FRESH_WARMUP_REPLAY` with `args` (a
    JSON-able dict with at least `export_dir`, `ops`, `warmup_file`) in a
    new interpreter; returns its `out` dict."""
    script = FRESH_PRELUDE + body + FRESH_WARMUP_REPLAY
    proc = subprocess.run([sys.executable, "-c", script, json.dumps(args)],
                          capture_output=True, text=True, timeout=300)
    lines = [line for line in proc.stdout.splitlines()
             if line.startswith("RESULT")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    return json.loads(lines[-1][len("RESULT"):])


@pytest.fixture(scope="session")
def fresh_process_runner():
    """`run_fresh_process`, for test modules (conftest is not importable)."""
    return run_fresh_process


# The GNMT export's body: translations, option sets, bad requests.
GNMT_FRESH_BODY = r"""
text = tf.constant(args["sentences"])

def texts(result):
    return {"translations": [t.decode("utf-8") for t in
                             result["translations"].numpy()],
            "scores": result["scores"].numpy().tolist()}

out["serving_default"] = texts(sigs["serving_default"](text=text))
out["with_options"] = {}
for k, alpha, beta in args["option_sets"]:
    out["with_options"][f"{k},{alpha},{beta}"] = texts(
        sigs["translate_with_options"](
            text=text, beam_size=tf.constant(k, tf.int32),
            length_penalty=tf.constant(alpha, tf.float32),
            coverage_penalty=tf.constant(beta, tf.float32)))

errors = {}
def error(name, fn):
    try:
        fn()
        errors[name] = None
    except tf.errors.InvalidArgumentError as e:
        errors[name] = e.message
error("beam_size", lambda: sigs["translate_with_options"](
    text=text, beam_size=tf.constant(99, tf.int32),
    length_penalty=tf.constant(0.6), coverage_penalty=tf.constant(0.0)))
error("utf8", lambda: sigs["serving_default"](
    text=tf.constant([b"caf\xc3", b"ok"])))
error("too_long", lambda: sigs["serving_default"](
    text=tf.constant(["the dog " * 300])))
out["errors"] = errors
"""


@pytest.fixture(scope="session")
def fresh_process(export_dir):
    """What a fresh Python process sees of the export (a dict, see script).

    Keys: `core_ops` / `registered_ops` (the export's and the allowlist's ops
    known to TensorFlow before / after importing tensorflow_text), `signatures` (names, dtypes and
    shapes), `serving_default` and `with_options` results on `SENTENCES`,
    `errors` (messages of bad requests) and `warmup` (replayed requests).
    """
    from export.ops import list_ops, read_allowlist
    from export.savedmodel import WARMUP_FILE

    ops = sorted(set(list_ops(export_dir)) | set(read_allowlist()))
    args = {"export_dir": str(export_dir), "ops": ops,
            "sentences": SENTENCES,
            "option_sets": [[BEAM_SIZE, ALPHA, BETA], [1, 0.0, 0.0],
                            [BEAM_SIZE, 1.0, 0.0]],
            "warmup_file": str(export_dir / "assets.extra" / WARMUP_FILE)}
    return run_fresh_process(GNMT_FRESH_BODY, args)


@pytest.fixture(scope="session")
def translator(tiny_model_dir):
    """An in-process `Translator` for the tiny model."""
    from gnmt_tf.model_dir import load_model
    from gnmt_tf.translator import Translator

    model, subwords, _ = load_model(tiny_model_dir)
    return Translator(model, subwords)


# --- the task-space Transformer (SavedModel and TFLite tests) ---


@pytest.fixture(scope="session")
def ts_model_dir(multiway_dir, tmp_path_factory):
    """A transformer_tiny trained 60 steps on two directions (enough for
    non-empty, input-dependent output; at 30 steps everything is "")."""
    from gnmt_tf.config import apply_overrides
    from task_space.training import TaskSpaceOptions
    from task_space.training import get_preset
    from task_space.training import train_task_space

    model_config, train_config = get_preset("transformer_tiny")
    model_config = model_config.replace(vocabulary_size=60)
    train_config = apply_overrides(train_config, [
        "train_steps=60", "checkpoint_every=60", "learning_rate=0.02",
        "label_smoothing=0.0"])
    path = tmp_path_factory.mktemp("ts_model")
    train_task_space(path, multiway_dir, "en-fr,de-cs", model_config,
                     train_config, TaskSpaceOptions(validation_lines=0),
                     log_every=1000)
    return path


@pytest.fixture(scope="session")
def ts_baseline_model_dir(multiway_dir, tmp_path_factory):
    """The Johnson et al. baseline: transformer_tiny without the task space,
    trained 30 steps with `<2xx>` source tokens (slow tests only)."""
    from gnmt_tf.config import apply_overrides
    from task_space.training import TaskSpaceOptions
    from task_space.training import get_preset
    from task_space.training import train_task_space

    model_config, train_config = get_preset("transformer_tiny")
    model_config = model_config.replace(vocabulary_size=60,
                                        use_task_space=False)
    train_config = apply_overrides(train_config, [
        "train_steps=30", "checkpoint_every=30", "learning_rate=0.02"])
    model_dir = tmp_path_factory.mktemp("ts_baseline")
    train_task_space(model_dir, multiway_dir, "en-fr,de-cs", model_config,
                     train_config,
                     TaskSpaceOptions(validation_lines=0,
                                      target_language_token=True),
                     log_every=1000)
    return model_dir


@pytest.fixture(scope="session")
def ts_translator(ts_model_dir):
    from gnmt_tf.translator import Translator

    return Translator.from_model_dir(ts_model_dir)


# --- host-side exports (TFLite, ONNX) of both families ---


@pytest.fixture(scope="session")
def tflite_float32(tmp_path_factory, tiny_model_dir):
    """`(model_path, vocabulary_path)` of the tiny GNMT as float32 TFLite
    (no `model.json`: a GNMT export needs none)."""
    import shutil

    from export.tflite import convert
    from gnmt_tf.model_dir import load_model

    out = tmp_path_factory.mktemp("tflite")
    model_path = out / "model_float32.tflite"
    model_path.write_bytes(convert(load_model(tiny_model_dir)[0], "float32"))
    shutil.copyfile(tiny_model_dir / "spm.model", out / "spm.model")
    return model_path, out / "spm.model"


@pytest.fixture(scope="session")
def onnx_dir(tiny_model_dir, tmp_path_factory):
    """The tiny GNMT through `gnmt-tf export onnx`."""
    from gnmt_tf.cli.main import main

    out = tmp_path_factory.mktemp("onnx")
    assert main(["export", "onnx", "--model", str(tiny_model_dir),
                 "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="session")
def ts_tflite_dir(ts_model_dir, tmp_path_factory):
    """The task-space model's float32 TFLite export, through `gnmt-tf
    export tflite` (KV cache of `TS_CACHE_LENGTH`)."""
    from gnmt_tf.cli.main import main

    out = tmp_path_factory.mktemp("ts_tflite")
    assert main(["export", "tflite", "--model", str(ts_model_dir),
                 "--out", str(out), "--max-target-length",
                 str(TS_CACHE_LENGTH)]) == 0
    return out


@pytest.fixture(scope="session")
def ts_onnx_paths(ts_model_dir, tmp_path_factory):
    """`export_onnx`'s paths for the task-space model."""
    from export.onnx_export import export_onnx

    return export_onnx(ts_model_dir, tmp_path_factory.mktemp("ts_onnx"))
