"""What a shipped model carries besides its weights, made in one go.

`python benchmarks/model_zoo.py package` averages a run into
`gnmt_tf/pretrained/<name>/` and scores it. A shipped Transformer also
carries three things made from those weights, each by a command of its own
until now:

- its alignment head (`gnmt-tf add-alignment-head`): `alignment_head.npz`
  and `.json`, for placeholder and markup restoration;
- its float32 TFLite export, gzipped, with the weights' fingerprint
  (`tflite_float32/`): the fast path `Translator` and
  `gnmt-tf translate --model` take by default;
- its int8 TFLite export (`tflite_int8/`): a short quantization-aware
  fine-tuning (`gnmt-tf export qat`), then `gnmt-tf export tflite --int8`,
  scored on one test set against the float model.

`ship_exports` makes all three for a model directory, in that order (the
head does not change the weights, so the float32 export's fingerprint
holds), each replacing an older one whole:

    python benchmarks/model_zoo.py exports multi30k-transformer

Nothing here is new machinery: it calls the same library functions as
those commands, with the settings the shipped `multi30k-transformer` was
made with as defaults, so that a retrained model can be shipped complete
with one command.
"""

import dataclasses
import json
import os
import pathlib
import shutil
import sys
import tempfile
import time

HEAD_FILES = ("alignment_head.npz", "alignment_head.json")


@dataclasses.dataclass(frozen=True)
class ExportSettings:
    """How `ship_exports` makes each export (defaults: those of the shipped
    `multi30k-transformer`).

    Attributes:
      data_dir: Multi30k-like directory (`<split>.<lang>[.gz]`).
      tags: comma-separated scene tags (task-space models).
      head_lines: sentence pairs per direction the head trains on.
      head_steps: alignment head training steps.
      qat_steps, qat_minutes, qat_learning_rate: the quantization-aware
        fine-tuning before the int8 export.
      score_direction: `src-tgt` the int8 export is scored on.
      score_split: the held-out split it is scored on, and the head's
        alignment error rate measured on.
      beam_size, length_penalty: the search it is scored with.
    """

    data_dir: str
    tags: str = "caption"
    head_lines: int = 5000
    head_steps: int = 500
    qat_steps: int = 400
    qat_minutes: float = 25.0
    qat_learning_rate: float = 0.0002
    score_direction: str = "en-de"
    score_split: str = "test_2016_flickr"
    beam_size: int = 4
    length_penalty: float = 0.6

    def __post_init__(self):
        for name in ("head_lines", "head_steps", "qat_steps", "beam_size"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be >= 1, got "
                                 f"{getattr(self, name)}")
        for name in ("qat_minutes", "qat_learning_rate"):
            if not float(getattr(self, name)) > 0:
                raise ValueError(f"{name} must be > 0, got "
                                 f"{getattr(self, name)}")
        if len(self.score_direction.split("-")) != 2:
            raise ValueError(f"score_direction {self.score_direction!r} is "
                             f"not src-tgt")


def add_arguments(parser):
    """Adds the `ExportSettings` flags (besides ``--data-dir``) to an
    argparse parser."""
    from gnmt_tf.flags.arg_types import positive_float, positive_int

    defaults = ExportSettings(data_dir="")
    group = parser.add_argument_group("exports")
    group.add_argument("--tags", default=defaults.tags,
                       help="scene tags of the head's and the int8 "
                            "export's examples (task-space models)")
    group.add_argument("--head-lines", type=positive_int,
                       default=defaults.head_lines,
                       help="alignment head: sentence pairs per direction")
    group.add_argument("--head-steps", type=positive_int,
                       default=defaults.head_steps,
                       help="alignment head: training steps")
    group.add_argument("--qat-steps", type=positive_int,
                       default=defaults.qat_steps,
                       help="int8: quantization-aware fine-tuning steps")
    group.add_argument("--qat-minutes", type=positive_float,
                       default=defaults.qat_minutes,
                       help="int8: at most this many minutes of it")
    group.add_argument("--qat-learning-rate", type=positive_float,
                       default=defaults.qat_learning_rate,
                       help="int8: its peak learning rate")
    group.add_argument("--score-direction", default=defaults.score_direction,
                       help="int8: the direction it is scored on")
    group.add_argument("--score-split", default=defaults.score_split,
                       help="int8 and head: the held-out split they are "
                            "scored on")


def settings_from_args(args):
    """The `ExportSettings` of `add_arguments`' flags and ``--data-dir``
    (and ``--beam-size`` / ``--length-penalty`` where set).

    Raises:
      ValueError: a value out of range.
    """
    defaults = ExportSettings(data_dir="")
    return ExportSettings(
        data_dir=args.data_dir, tags=args.tags, head_lines=args.head_lines,
        head_steps=args.head_steps, qat_steps=args.qat_steps,
        qat_minutes=args.qat_minutes,
        qat_learning_rate=args.qat_learning_rate,
        score_direction=args.score_direction, score_split=args.score_split,
        beam_size=getattr(args, "beam_size", None) or defaults.beam_size,
        length_penalty=(defaults.length_penalty
                        if getattr(args, "length_penalty", None) is None
                        else args.length_penalty))


def _replace_dir(staging, target):
    """Puts the finished `staging` folder at `target`, replacing an older
    one whole (renames; the old one is deleted after)."""
    old = target.with_name(f".{target.name}-old")
    shutil.rmtree(old, ignore_errors=True)
    if target.exists():
        os.rename(target, old)
    os.rename(staging, target)
    shutil.rmtree(old, ignore_errors=True)


def add_alignment_head(model_dir, settings, log=sys.stderr):
    """Trains the alignment head on `model_dir`'s attention and writes its
    files into `model_dir` (through `gnmt-tf add-alignment-head`, which
    writes a new model directory: only the head files are taken from
    it). Returns the head's `alignment_head.json` contents."""
    from gnmt_tf.cli.main import main as cli
    from gnmt_tf.io_utils import write_text_atomic

    model_dir = pathlib.Path(model_dir)
    with tempfile.TemporaryDirectory() as scratch:
        output = pathlib.Path(scratch) / "with_head"
        status = cli(["add-alignment-head", "--model", str(model_dir),
                      "--data-dir", str(settings.data_dir),
                      "--output", str(output), "--tags", settings.tags,
                      "--lines", str(settings.head_lines),
                      "--steps", str(settings.head_steps),
                      "--score-split", settings.score_split])
        if status != 0:
            raise RuntimeError(f"add-alignment-head failed ({status})")
        staged = model_dir / f".{HEAD_FILES[0]}.tmp"
        shutil.copyfile(output / HEAD_FILES[0], staged)
        os.replace(staged, model_dir / HEAD_FILES[0])
        # The .json last (it says a head is there), naming the model by
        # its folder, not by this machine's path to it.
        info = json.loads((output / HEAD_FILES[1]).read_text())
        info["model"] = model_dir.name
        write_text_atomic(model_dir / HEAD_FILES[1],
                          json.dumps(info, indent=2) + "\n")
    print(f"alignment head: {info['trained_on']['pairs']} pairs, "
          f"{info['trained_on']['steps']} steps", file=log)
    return info


def ship_float32(model_dir, log=sys.stderr):
    """Writes `model_dir`'s gzipped float32 TFLite export into
    `model_dir/tflite_float32/` (`gnmt_tf.export.tflite_entries.ship`);
    returns its path."""
    from gnmt_tf.export.tflite_entries import ship

    started = time.perf_counter()
    path = ship(model_dir)
    print(f"float32 TFLite: {path} ({path.stat().st_size / 1e6:.1f} MB, "
          f"{time.perf_counter() - started:.0f} s)", file=log)
    return path


def score_tflite(path, settings):
    """`(bleu, signature, left_out)` of the `.tflite` file `path` on the
    settings' split and direction (cased, detokenised sacreBLEU), searched
    by the host search; sentences longer than the export's source limit
    are left out (and counted), as `model_zoo.py` does for WMT22."""
    import sacrebleu

    from gnmt_tf.data.corpus import read_lines, split_path
    from gnmt_tf.host_translator import HostTranslator

    src, tgt = settings.score_direction.split("-")
    sources = read_lines(split_path(settings.data_dir, settings.score_split,
                                    src))
    references = read_lines(split_path(settings.data_dir,
                                       settings.score_split, tgt))
    translator = HostTranslator.from_tflite(path)
    # A task-space model takes the direction and tags; a GNMT has one.
    task = (dict(src_lang=src, tgt_lang=tgt, tags=settings.tags)
            if translator.task_inputs() else {})
    prefix, _ = translator.task_arrays(**task)
    limit = translator.max_source_length
    kept = [(source, reference) for source, reference
            in zip(sources, references)
            if limit is None or len(prefix) + len(
                translator.sentencepiece.encode(source)) + 1 <= limit]
    hypotheses = translator.translate(
        [source for source, _ in kept], beam_size=settings.beam_size,
        length_penalty=settings.length_penalty, **task)
    bleu = sacrebleu.metrics.BLEU()
    score = bleu.corpus_score(hypotheses,
                              [[reference for _, reference in kept]])
    return (round(score.score, 2), str(bleu.get_signature()),
            len(sources) - len(kept))


def ship_int8(model_dir, settings, log=sys.stderr):
    """Fine-tunes `model_dir` with fake quantization, exports the result
    as int8 TFLite into `model_dir/tflite_int8/` with a `scores.json`
    (its BLEU beside the float model's, from `model_dir/scores.json` where
    that has the split), and returns that dict."""
    from gnmt_tf import pretrained
    from gnmt_tf.export.qat import qat_finetune
    from gnmt_tf.export.tflite import export_tflite

    model_dir = pathlib.Path(model_dir)
    target = model_dir / pretrained.TFLITE_DIR
    with tempfile.TemporaryDirectory() as scratch:
        qat_dir = pathlib.Path(scratch) / "qat"
        started = time.perf_counter()
        qat_finetune(model_dir, qat_dir, settings.data_dir,
                     steps=settings.qat_steps, minutes=settings.qat_minutes,
                     learning_rate=settings.qat_learning_rate)
        qat_seconds = time.perf_counter() - started
        staging = pathlib.Path(tempfile.mkdtemp(
            prefix=f".{pretrained.TFLITE_DIR}-", dir=model_dir))
        try:
            os.chmod(staging, 0o755)  # package data, not mkdtemp's 0700
            paths = export_tflite(qat_dir, staging, "int8")
            bleu, signature, left_out = score_tflite(paths["model"],
                                                     settings)
            split, direction = settings.score_split, settings.score_direction
            scores = {
                "direction": direction, "tags": settings.tags,
                "split": split, split: bleu,
                "float_model": _float_bleu(model_dir, direction, split),
                "bleu_signature": signature,
                "left_out_over_source_limit": left_out,
                "beam_size": settings.beam_size,
                "length_penalty": settings.length_penalty,
                "size_mb": round(paths["model"].stat().st_size / 1e6, 2),
                "qat": (f"qat_finetune(steps={settings.qat_steps}, "
                        f"minutes={settings.qat_minutes}, learning_rate="
                        f"{settings.qat_learning_rate}) on "
                        f"{settings.data_dir} ({qat_seconds:.0f} s of "
                        f"training)"),
                "export": "export_tflite(QAT, OUT, 'int8') (default shapes: "
                          "any source length, growing KV cache)"}
            (staging / pretrained.SCORES_FILE).write_text(
                json.dumps(scores, indent=2) + "\n")
            _replace_dir(staging, target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    print(f"int8 TFLite: {scores['size_mb']} MB, {direction} {split} BLEU "
          f"{bleu} (float model: {scores['float_model']})", file=log)
    return scores


def _float_bleu(model_dir, direction, split):
    """The float model's BLEU on `split` from its `scores.json`, or None."""
    path = pathlib.Path(model_dir) / "scores.json"
    if not path.is_file():
        return None
    scores = json.loads(path.read_text())
    return scores.get("sacrebleu", {}).get(direction, {}).get(split)


def ship_exports(model_dir, settings, log=sys.stderr):
    """The alignment head, the float32 and the int8 TFLite exports of
    `model_dir`, written into it; returns `{"alignment_head": info,
    "tflite_float32": path, "tflite_int8": scores}`."""
    model_dir = pathlib.Path(model_dir)
    if not (model_dir / "config.json").is_file():
        raise FileNotFoundError(f"{model_dir} is not a model directory "
                                f"(no config.json)")
    return {"alignment_head": add_alignment_head(model_dir, settings, log),
            "tflite_float32": ship_float32(model_dir, log),
            "tflite_int8": ship_int8(model_dir, settings, log)}
