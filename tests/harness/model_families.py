"""The model families of the harness, each listed once, and what the
harness builds of them.

A family is a `ModelFamily`: a name, the fixture of its tiny trained model
directory (`tests/conftest.py`), optionally a wrapper that makes the
family's model out of that directory's model, example requests and export
settings. `FAMILIES` lists them. `tests/harness/model_family_test.py` runs
every check for every family, and the family-specific tests
(`tests/export`) read the same exports through the `FamilyArtifacts` of
their family (the `model_families` fixture), so each export is built once
per session.

Adding a family: a session fixture training its tiny model directory in
`tests/conftest.py`, and one `ModelFamily` in `FAMILIES` below.
"""

import dataclasses
import functools
import json
import pathlib
import subprocess
import sys
from typing import Callable, Optional, Tuple

import numpy as np

PROBE_SCRIPT = pathlib.Path(__file__).with_name("savedmodel_probe.py")
# TFLite's int8 LogSoftmax writes log-probabilities on a grid of 1/16 nat
# (export.tflite_int8): the int8 model's quantization step at its output.
INT8_LOG_PROB_STEP = 1.0 / 16


def _same_attention(model, attention):
    return attention


def _last_layer_mean(model, attention):
    """`[B, L*H, T, S]` -> `[B, T, S]`: the mean of the last layer's heads,
    what the task-space Transformer's `step` returns."""
    return attention[:, -model.config.num_heads:].mean(axis=1)


def _aligned(model):
    from alignment.aligned_model import AlignedTranslationModel
    from alignment.conv_alignment_head import ConvAlignmentHead

    return AlignedTranslationModel(
        model, ConvAlignmentHead(filters=(8, 8), name="alignment_head"))


@dataclasses.dataclass(frozen=True)
class ModelFamily:
    """One model family: its tiny model and what the checks ask of it.

    Attributes:
      name: str. The family's id in test names (`test_...[gnmt]`).
      model_dir: str. The fixture of its tiny trained model directory.
      requests: `((task, sentences), ...)`: task arguments (a dict, `{}`
        without task inputs) and sentences (a blank one included: it must
        stay blank everywhere).
      searches: `SearchOptions` keyword dicts under which exports must
        translate as `Translator` does (the SavedModel: those whose beam size
        it compiles in).
      savedmodel: the SavedModel's search (`beam_size`, `length_penalty`,
        `coverage_penalty`), extra `beam_sizes` and `warmup` sentences.
      bad_requests: `{name: {input: values}}`: SavedModel requests that
        change the task inputs of the example batch (`errors[name]` in
        `FamilyArtifacts.fresh`).
      tflite: `export tflite` options (`max_target_length`).
      qat_data: the fixture of the data to fine-tune a quantization-aware
        variant on, or None (no such variant).
      int8: `export tflite --int8` options (`max_source_length`).
      wrap: None, or `model -> model`: the family's model is this wrapper
        around the model directory's model (exported from memory, not by
        the CLI, which only knows model directories).
      step_attention: `(model, attention) -> [B, T, S]`: the full pass's
        attention (NumPy) as `step` returns it.
    """

    name: str
    model_dir: str
    requests: Tuple[Tuple[dict, Tuple[str, ...]], ...]
    searches: Tuple[dict, ...]
    savedmodel: dict
    bad_requests: dict = dataclasses.field(default_factory=dict)
    tflite: dict = dataclasses.field(default_factory=dict)
    qat_data: Optional[str] = None
    int8: dict = dataclasses.field(default_factory=dict)
    wrap: Optional[Callable] = None
    step_attention: Callable = _same_attention

    @property
    def sentences(self):
        """Every request's sentences, in order."""
        return [s for _, sentences in self.requests for s in sentences]

    def compiled_searches(self):
        """`searches` the SavedModel's `translate_with_options` takes."""
        sizes = set(self.savedmodel["beam_sizes"]) | {
            self.savedmodel["beam_size"]}
        return [s for s in self.searches if s.get("beam_size", 5) in sizes]


TS_EN_FR = {"src_lang": "en", "tgt_lang": "fr", "tags": "caption"}
TS_DE_CS = {"src_lang": "de", "tgt_lang": "cs", "tags": ""}

FAMILIES = (
    ModelFamily(
        name="gnmt",
        model_dir="tiny_model_dir",
        requests=(({}, ("A big dog runs.", "A small cat eats.",
                        "A young girl plays.", "   ",
                        "A man runs and a dog sleeps.")),),
        searches=(dict(beam_size=3, length_penalty=0.6, coverage_penalty=0.2),
                  dict(beam_size=1, length_penalty=0.0, coverage_penalty=0.0),
                  dict(beam_size=3, length_penalty=1.0, coverage_penalty=0.0)),
        savedmodel=dict(beam_size=3, length_penalty=0.6, coverage_penalty=0.2,
                        beam_sizes=(1,), warmup=("A big dog runs.",
                                                 "A small cat eats.",
                                                 "A young girl plays.")),
        qat_data="toy_data_dir",
        int8=dict(max_source_length=32)),
    ModelFamily(
        name="task_space_transformer",
        model_dir="ts_model_dir",
        # Two directions the tiny model was trained on; sources of 4-14
        # subwords (its vocabulary has 60 pieces).
        requests=((TS_EN_FR, ("a dog runs", "a big cat sleeps", "   ",
                              "a man runs", "a red ball")),
                  (TS_DE_CS, ("ein roter Ball", "Mann schläft",
                              "ein Hund rennt"))),
        searches=(dict(beam_size=1),
                  dict(beam_size=2),
                  dict(beam_size=2, length_penalty=1.0, coverage_penalty=0.2)),
        # Beam 2 only: each compiled beam size is another search to trace,
        # load and warm up. The last warm-up sentence is too long for the
        # model (16 subwords): left out.
        savedmodel=dict(beam_size=2, length_penalty=0.6, coverage_penalty=0.0,
                        beam_sizes=(2,), warmup=(
                            "a dog runs in a park", "a red ball",
                            "a man in a blue shirt is standing on a "
                            "ladder")),
        bad_requests={
            "src_lang": {"src_lang": ["en"] * 7 + ["xx"]},
            "tgt_lang": {"tgt_lang": ["cs"] * 8},
            "tag": {"tags": ["caption,bogus"] * 8},
            "same": {"tgt_lang": ["en"] * 5 + ["de"] * 3},
            "sizes": {"tags": ["caption"]},
        },
        # A KV cache longer than the model's max_sequence_length (16): the
        # host search must still stop at 16, as the in-graph one does.
        tflite=dict(max_target_length=32),
        qat_data="multiway_dir",
        step_attention=_last_layer_mean),
    ModelFamily(
        name="aligned_model",
        # The task-space Transformer with a (fresh) convolutional alignment
        # head: the wrapper must pass the whole interface through.
        model_dir="ts_model_dir",
        wrap=_aligned,
        requests=((TS_EN_FR, ("a dog runs", "   ", "a man runs")),),
        searches=(dict(beam_size=1),
                  dict(beam_size=2, length_penalty=1.0, coverage_penalty=0.2)),
        savedmodel=dict(beam_size=2, length_penalty=1.0, coverage_penalty=0.2,
                        beam_sizes=(1,), warmup=()),
        step_attention=_last_layer_mean),
)
FAMILIES_BY_NAME = {f.name: f for f in FAMILIES}
QAT_FAMILIES = tuple(f for f in FAMILIES if f.qat_data)


def _cli(*argv):
    from gnmt_tf.cli.main import main

    code = main([str(a) for a in argv])
    assert code == 0, f"gnmt-tf {' '.join(map(str, argv))}: exit code {code}"


def _tokenizer_works(translator):
    import tensorflow as tf

    try:
        translator.tokenizer.tokenize(tf.constant([""]))
        return True
    except tf.errors.NotFoundError:
        return False


def _task_string(value):
    """A task argument as the SavedModel takes it (multi-hot: "a,b")."""
    return value if isinstance(value, str) else ",".join(value)


class FamilyArtifacts:
    """What the checks build of one family, each made once, on first use.

    Args:
      family: its `ModelFamily`.
      model_dir: its tiny trained model directory.
      qat_data_dir: the data of `family.qat_data`, or None.
      tmp_path_factory: pytest's.
    """

    def __init__(self, family, model_dir, qat_data_dir, tmp_path_factory):
        self.family = family
        self.model_dir = pathlib.Path(model_dir)
        self.qat_data_dir = qat_data_dir
        self._tmp = tmp_path_factory
        self._translator = self._qat_translator = None

    def _mktemp(self, what):
        return self._tmp.mktemp(f"{self.family.name}_{what}")

    # --- The model ---------------------------------------------------------

    @property
    def translator(self):
        """`Translator` of the family's model (`.model`, `.subwords`).

        Made again (same model, a new tokenizer) when its tokenizer is
        gone: `tf.random.set_seed` (training and QAT fine-tuning call it, in
        this process) clears TensorFlow's eager kernel cache, and with it
        the SentencePiece model resource, which tensorflow_text's
        `SentencepieceOp` kernel owns.
        """
        from gnmt_tf.model_dir import load_model
        from gnmt_tf.text.subword import Subwords
        from gnmt_tf.translator import Translator

        if self._translator is None:
            model, subwords, self.payload = load_model(self.model_dir)
            if self.family.wrap is not None:
                model = self.family.wrap(model)
            self._translator = Translator(model, subwords)
        elif not _tokenizer_works(self._translator):
            self._translator = Translator(
                self._translator.model,
                Subwords(self._translator.subwords.model_path))
        return self._translator

    @property
    def model(self):
        return self.translator.model

    # --- SavedModel ----------------------------------------------------------

    @functools.cached_property
    def savedmodel(self):
        """The SavedModel `<tmp>/<name>/1`: through `gnmt-tf export
        savedmodel`, or from memory for a wrapped model (no warm-up)."""
        from gnmt_tf.translator import SearchOptions

        settings = self.family.savedmodel
        base = self._mktemp("savedmodel")
        path = base / self.family.name / "1"
        if self.family.wrap is None:
            warmup = base / "warmup.txt"
            warmup.write_text("".join(s + "\n" for s in settings["warmup"]),
                              encoding="utf-8")
            _cli("export", "savedmodel", "--model", self.model_dir,
                 "--out", path, "--beam-size", settings["beam_size"],
                 "--alpha", settings["length_penalty"],
                 "--beta", settings["coverage_penalty"],
                 "--beam-sizes", ",".join(map(str, settings["beam_sizes"])),
                 "--warmup", warmup)
            return path
        from export.savedmodel import TranslationModule
        from export.savedmodel import module_metadata
        from export.savedmodel import save_module

        options = SearchOptions(**{k: settings[k] for k in (
            "beam_size", "length_penalty", "coverage_penalty")})
        module = TranslationModule(self.model, self.translator.subwords,
                                   options, settings["beam_sizes"])
        metadata = dict(module_metadata(module),
                        max_target_length=self.model.max_target_length)
        return save_module(module, path, metadata=metadata)

    def batch(self):
        """The example requests as one SavedModel batch (directions mixed)."""
        names = [t.name for t in self.model.task_inputs()]
        batch = {"text": [], **{name: [] for name in names}}
        for task, sentences in self.family.requests:
            for sentence in sentences:
                batch["text"].append(sentence)
                for name in names:
                    batch[name].append(_task_string(task.get(name, "")))
        return batch

    @functools.cached_property
    def fresh(self):
        """What a fresh Python process sees of the SavedModel: a dict, see
        `savedmodel_probe.py`."""
        from export.ops import list_ops
        from export.ops import read_allowlist
        from export.savedmodel import METADATA_FILE
        from export.savedmodel import WARMUP_FILE

        path = self.savedmodel
        extra = path / "assets.extra"
        batch = self.batch()
        args = {
            "export_dir": str(path),
            "ops": sorted(set(list_ops(path)) | set(read_allowlist())),
            "metadata": json.loads((extra / METADATA_FILE).read_text()),
            "warmup_file": (str(extra / WARMUP_FILE)
                            if (extra / WARMUP_FILE).exists() else None),
            "batch": batch,
            "option_sets": [search_key(s)
                            for s in self.family.compiled_searches()],
            "too_long": " ".join([self.family.sentences[0]] * 300),
            "bad_requests": self.family.bad_requests,
        }
        proc = subprocess.run(
            [sys.executable, "-c", PROBE_SCRIPT.read_text(), json.dumps(args)],
            capture_output=True, text=True, timeout=300)
        lines = [line for line in proc.stdout.splitlines()
                 if line.startswith("RESULT")]
        assert proc.returncode == 0 and lines, proc.stderr[-3000:]
        return json.loads(lines[-1][len("RESULT"):])

    # --- TFLite --------------------------------------------------------------

    @functools.cached_property
    def tflite_dir(self):
        """`model_float32.tflite`, `spm.model` and `model.json`: through
        `gnmt-tf export tflite`, or from memory for a wrapped model."""
        out = self._mktemp("tflite")
        options = self.family.tflite
        if self.family.wrap is None:
            flags = [f"--{k.replace('_', '-')}={v}" for k, v in options.items()]
            _cli("export", "tflite", "--model", self.model_dir, "--out", out,
                 *flags)
            return out
        import shutil

        from export.tflite import METADATA_FILE
        from export.tflite import convert
        from export.tflite import default_lengths
        from export.tflite import export_metadata

        lengths = default_lengths(self.model, options.get("max_source_length"),
                                  options.get("max_target_length"))
        (out / "model_float32.tflite").write_bytes(
            convert(self.model, "float32", *lengths))
        shutil.copyfile(self.translator.subwords.model_path, out / "spm.model")
        metadata = export_metadata(self.model, self.payload, *lengths)
        (out / METADATA_FILE).write_text(json.dumps(metadata))
        return out

    @functools.cached_property
    def tflite(self):
        """`TFLiteTranslator` of the float32 TFLite export."""
        from gnmt_tf.tflite_translator import TFLiteTranslator

        return TFLiteTranslator(self.tflite_dir / "model_float32.tflite")

    # --- Quantization-aware variant -------------------------------------------

    @functools.cached_property
    def qat_dir(self):
        """A QAT model directory: `gnmt-tf export qat`, 3 fine-tuning steps."""
        assert self.family.qat_data, f"{self.family.name} has no QAT variant"
        out = self._mktemp("qat") / "model"
        _cli("export", "qat", "--model", self.model_dir, "--out", out,
             "--data-dir", self.qat_data_dir, "--steps", 3,
             "--calibration-batches", 2)
        return out

    @property
    def qat_translator(self):
        """`Translator` of the QAT model (made again as `translator`)."""
        from gnmt_tf.translator import Translator

        if (self._qat_translator is None
                or not _tokenizer_works(self._qat_translator)):
            self._qat_translator = Translator.from_model_dir(self.qat_dir)
        return self._qat_translator

    @functools.cached_property
    def int8_dir(self):
        """`model_int8.tflite` (+ `spm.model`, `model.json`) of the QAT
        model, through `gnmt-tf export tflite --int8`."""
        out = self._mktemp("int8")
        flags = [f"--{k.replace('_', '-')}={v}"
                 for k, v in self.family.int8.items()]
        _cli("export", "tflite", "--int8", "--model", self.qat_dir,
             "--out", out, *flags)
        return out

    @functools.cached_property
    def int8(self):
        """`TFLiteTranslator` of the int8 TFLite export."""
        from gnmt_tf.tflite_translator import TFLiteTranslator

        return TFLiteTranslator(self.int8_dir / "model_int8.tflite")


def search_key(search):
    """`[beam_size, length_penalty, coverage_penalty]` of a search (the
    `SearchOptions` defaults filled in); `fresh["with_options"]` is keyed
    by them joined with commas."""
    from gnmt_tf.translator import SearchOptions

    options = SearchOptions(**search)
    return [options.beam_size, options.length_penalty,
            options.coverage_penalty]


# --- Reference computations ------------------------------------------------------


def float_tolerance(dtype, magnitude=1.0, terms=1):
    """Absolute tolerance for two float computations of a value of size
    `magnitude` that sum `terms` rounded terms in different orders (other
    batch shapes, other kernels): 32 units in the last place each (about
    one is seen)."""
    return 32 * float(np.finfo(dtype).eps) * max(1.0, magnitude) * terms


def teacher_forcing(translator, rows):
    """The model's teacher-forced inputs for `rows` = `[(task, source,
    target_ids)]`: `source_ids` (the sources tokenized as `Translator`
    does), `target_in_ids` (BOS + the target ids, at most the model's
    `max_target_length` of them) and each row's task ids."""
    import tensorflow as tf

    task_ids = [translator.task_ids(**task) for task, _, _ in rows]
    task = {name: tf.constant([ids[name] for ids in task_ids])
            for name in task_ids[0]}
    source_ids, _ = translator.tokenize(
        tf.constant([source for _, source, _ in rows]), task)
    limit = translator.model.max_target_length or 1 << 30
    targets = [[translator.bos_id] + list(ids)[:limit - 1]
               for _, _, ids in rows]
    width = max(map(len, targets))
    target_in_ids = tf.constant([t + [0] * (width - len(t)) for t in targets])
    return {"source_ids": source_ids, "target_in_ids": target_in_ids, **task}


def sequence_log_probs(translator, rows):
    """Log-probability of each output in `rows` = `[(task, source, ids)]`
    (`ids` with the end token where the output has one), teacher-forced."""
    import tensorflow as tf

    features = teacher_forcing(
        translator, [(task, source, ids[:-1]) for task, source, ids in rows])
    log_probs = tf.nn.log_softmax(translator.model(features)).numpy()
    return [float(sum(log_probs[r, t, i] for t, i in enumerate(ids)))
            for r, (_, _, ids) in enumerate(rows)]


def cached_and_full(model, features, step_attention):
    """Runs `model` step by step (`encode`, `initial_state`, `step` on each
    decoder input) and in one teacher-forced pass.

    Returns:
      `(step_log_probs, full_log_probs, step_attention, full_attention)`,
      NumPy `[P, V]` and `[P, S]` over the `P` real (unpadded) positions.
    """
    import tensorflow as tf

    task = {k: v for k, v in features.items()
            if k not in ("source_ids", "target_in_ids")}
    target_in_ids = features["target_in_ids"]
    logits, attention = model(features, return_attention=True)
    state = model.initial_state(model.encode(features["source_ids"], **task),
                                target_in_ids.shape[1])
    log_probs, maps = [], []
    for t in range(target_in_ids.shape[1]):
        step_log_probs, step_map, state = model.step(target_in_ids[:, t],
                                                     state)
        log_probs.append(step_log_probs)
        maps.append(step_map)
    mask = target_in_ids.numpy() != 0
    return (tf.stack(log_probs, 1).numpy()[mask],
            tf.nn.log_softmax(logits).numpy()[mask],
            tf.stack(maps, 1).numpy()[mask],
            step_attention(model, attention.numpy())[mask])


def brute_force(translator, sentence, task, max_length, alpha, beta, best=3):
    """The `best` GNMT-scored outputs of `sentence` among all outputs of at
    most `max_length` tokens (ending in the end token, or cut at
    `max_length`), found by scoring every one of them; float64.

    Each prefix gets its own decoding state (`step` on a batch of all the
    prefixes of one length), so no beam bookkeeping is involved.

    Returns:
      A list of `(ids, score)`, best first.
    """
    import tensorflow as tf

    model = translator.model
    ids = {k: tf.constant([v]) for k, v in translator.task_ids(**task).items()}
    source_ids, source_lengths = translator.tokenize(tf.constant([sentence]),
                                                     ids)
    state = model.initial_state(model.encode(source_ids, **ids), max_length)
    real = np.arange(source_ids.shape[1]) < int(source_lengths[0])
    eos = translator.eos_id
    prefixes = np.zeros([1, 0], np.int64)
    log_probs, coverage = np.zeros([1]), 0.0
    last = tf.constant([translator.bos_id])
    finished = []  # (score, ids)
    for t in range(max_length):
        step_log_probs, attention, state = model.step(last, state)
        total = log_probs[:, None] + step_log_probs.numpy().astype(np.float64)
        coverage = coverage + attention.numpy().astype(np.float64)  # [N, S]
        penalty = beta * np.where(real, np.log(np.maximum(
            np.minimum(coverage, 1.0), 1e-10)), 0.0).sum(-1)        # [N]
        scores = total / ((5.0 + t + 1) / 6.0) ** alpha + penalty[:, None]
        ends = np.zeros(scores.shape, bool)
        ends[:, eos] = True
        ends |= t == max_length - 1
        rows, cols = np.nonzero(ends)
        top = np.argsort(-scores[rows, cols])[:best]
        finished += [(scores[rows[i], cols[i]],
                      tuple(prefixes[rows[i]]) + (cols[i],)) for i in top]
        rows, cols = np.nonzero(~ends)
        prefixes = np.concatenate([prefixes[rows], cols[:, None]], 1)
        log_probs, coverage = total[rows, cols], coverage[rows]
        state = tf.nest.map_structure(lambda x: tf.gather(x, rows), state)
        last = tf.constant(cols, tf.int32)
    finished.sort(key=lambda f: -f[0])
    return [(ids, score) for score, ids in finished[:best]]


def grid_step(values):
    """The spacing of the grid fake-quantized `values` lie on: the smallest
    gap between distinct values (rounding noise ignored)."""
    gaps = np.diff(np.unique(np.asarray(values, np.float64)))
    gaps = gaps[gaps > 1e-4 * max(1.0, np.abs(values).max())]
    return float(gaps.min())
