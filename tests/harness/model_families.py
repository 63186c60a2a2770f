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
`tests/conftest.py`, and one `ModelFamily` in `FAMILIES` below. The family
`example_gru` (`tests/harness/example_family`) is such a family declared
outside `gnmt_tf`, as a plugin package would declare one.
"""

import dataclasses
import functools
import json
import pathlib
import subprocess
import sys
from typing import Callable, Optional, Tuple

PROBE_SCRIPT = pathlib.Path(__file__).with_name("savedmodel_probe.py")


def _same_attention(model, attention):
    return attention


def _last_layer_mean(model, attention):
    """`[B, L*H, T, S]` -> `[B, T, S]`: the mean of the last layer's heads,
    what the task-space Transformer's `step` returns."""
    return attention[:, -model.config.num_heads:].mean(axis=1)


def _aligned(model):
    from gnmt_tf.alignment.aligned_model import AlignedTranslationModel
    from gnmt_tf.alignment.conv_alignment_head import ConvAlignmentHead

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
      tflite: `export tflite` options (`max_target_length`, or none: the
        model's default cache).
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


# Toy-corpus sentences for the one-direction (en->de) families, a blank one
# and an unseen combination included.
TOY_EN_DE = ("A big dog runs.", "A small cat eats.", "A young girl plays.",
             "   ", "A man runs and a dog sleeps.")
TS_EN_FR = {"src_lang": "en", "tgt_lang": "fr", "tags": "caption"}
TS_DE_CS = {"src_lang": "de", "tgt_lang": "cs", "tags": ""}

FAMILIES = (
    ModelFamily(
        name="gnmt",
        model_dir="tiny_model_dir",
        requests=(({}, TOY_EN_DE),),
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
        # The default export, a growing KV cache: the host search must
        # still stop at the model's max_sequence_length (16), as the
        # in-graph one does. (The aligned family below keeps the fixed
        # cache: its wrapper offers no growing one.)
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
    ModelFamily(
        # A family declared outside gnmt_tf (tests/harness/example_family),
        # found through its entry point like an installed plugin.
        name="example_gru",
        model_dir="example_model_dir",
        requests=(({}, TOY_EN_DE),),
        searches=(dict(beam_size=3, length_penalty=0.6, coverage_penalty=0.2),
                  dict(beam_size=1, length_penalty=0.0, coverage_penalty=0.0)),
        savedmodel=dict(beam_size=3, length_penalty=0.6, coverage_penalty=0.2,
                        beam_sizes=(1,), warmup=("A big dog runs.",))),
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
        import dataclasses

        from gnmt_tf.export.savedmodel import TranslationModule
        from gnmt_tf.export.savedmodel import save_module

        options = SearchOptions(**{k: settings[k] for k in (
            "beam_size", "length_penalty", "coverage_penalty")})
        module = TranslationModule(self.model, self.translator.subwords,
                                   options, settings["beam_sizes"])
        metadata = {"search_options": dataclasses.asdict(options),
                    "beam_sizes": list(module.beam_sizes),
                    "max_source_length": module.max_source_length,
                    "bos_id": module.translator.bos_id,
                    "eos_id": module.translator.eos_id,
                    "max_target_length": self.model.max_target_length}
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
        from gnmt_tf.export.ops import list_ops
        from gnmt_tf.export.ops import read_allowlist
        from gnmt_tf.export.savedmodel import METADATA_FILE
        from gnmt_tf.export.savedmodel import WARMUP_FILE

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

        from gnmt_tf.export.tflite import METADATA_FILE
        from gnmt_tf.export.tflite import convert
        from gnmt_tf.export.host_metadata import export_lengths
        from gnmt_tf.export.host_metadata import export_metadata

        lengths = export_lengths(self.model, options.get("max_source_length"),
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
