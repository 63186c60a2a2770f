"""`gnmt-tf translate-beam`: batch translation of text shards with Apache
Beam's `RunInference` (`gnmt_tf.beam_translate`).

``--model`` is a trained model directory (or a shipped model's name),
translated with the same search as `gnmt-tf translate --model`, or an
exported SavedModel (`gnmt-tf export savedmodel`; local or remote, e.g.
``gs://``), which workers load without the training code's model classes.
Pipeline options (runner, project, workers...) follow ``--``::

    gnmt-tf translate-beam --input 'data/*.en' --output out/de --model M \\
        -- --runner DataflowRunner --project P --region R \\
           --temp_location gs://B/tmp

A shard that cannot be translated (invalid UTF-8, a line the model
refuses) is reported in one line and left unwritten; the other shards are
written, and the exit status is then 3 (a rerun retries the failed ones).

Needs the `beam` extra (`pip install 'gnmt-tf[beam]'`).
"""

import json
import os
import sys

from gnmt_tf.cli import task_flags
from gnmt_tf.flags.arg_types import positive_int
from gnmt_tf.flags.search import add_search_arguments, given_search_flags
from gnmt_tf.errors import UsageError

EXPORT_METADATA = os.path.join("assets.extra", "gnmt_tf_export.json")
# Exit status when some shards failed (each told in one line; the others
# are written), as `gnmt-tf translate-documents`.
EXIT_SOME_FAILED = 3
# Search flags an export's translate_with_options signature takes.
_EXPORT_SEARCH_FLAGS = ("beam_size", "alpha", "beta")


def register(subparsers):
    parser = subparsers.add_parser(
        "translate-beam",
        help="translate text shards with Apache Beam (resumable; needs the "
             "beam extra)")
    parser.add_argument("--input", required=True, metavar="GLOB",
                        help="input files, one sentence a line (a path or "
                             "glob; gs:// etc. through Beam's file systems; "
                             ".gz read as gzip)")
    parser.add_argument("--output", required=True, metavar="PREFIX",
                        help="outputs PREFIX-iiiii-of-nnnnn, one per input "
                             "file, and PREFIX.manifest.json")
    parser.add_argument("--model", required=True,
                        help="trained model directory (or a shipped "
                             "model's name), or an exported SavedModel")
    parser.add_argument("--batch-size", type=positive_int, default=32,
                        help="sentences per search call (model directory)")
    parser.add_argument("--max-batch-size", type=positive_int, default=512,
                        help="sentences per RunInference batch (default "
                             "512)")
    parser.add_argument("--runner", default="DirectRunner",
                        help="Beam runner (default DirectRunner); other "
                             "pipeline options go after --")
    add_search_arguments(parser)
    task_flags.add_task_arguments(parser)
    parser.add_argument("pipeline_args", nargs="*", metavar="-- OPTION",
                        help="Beam pipeline options, after --")
    parser.set_defaults(func=run)


def _remote(path) -> bool:
    return "://" in str(path)


def _export_metadata(model):
    """The export's `gnmt_tf_export.json`, or None when `model` is not an
    exported SavedModel."""
    if _remote(model):
        from apache_beam.io.filesystems import FileSystems

        if not FileSystems.exists(f"{model.rstrip('/')}/saved_model.pb"):
            raise ValueError(f"--model {model}: a remote model must be an "
                             "exported SavedModel (no saved_model.pb)")
        path = f"{model.rstrip('/')}/{EXPORT_METADATA}"
        if not FileSystems.exists(path):
            return {}
        with FileSystems.open(path) as f:
            return json.loads(f.read().decode("utf-8"))
    if not os.path.isfile(os.path.join(model, "saved_model.pb")):
        return None
    path = os.path.join(model, EXPORT_METADATA)
    if not os.path.isfile(path):
        return {}
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _export_options(args, metadata):
    """`translate_with_options` inputs for the search flags given, or None
    (the export's `serving_default`)."""
    given = given_search_flags(args)
    refused = sorted(set(given) - set(_EXPORT_SEARCH_FLAGS))
    if refused:
        raise ValueError(
            f"{', '.join('--' + f.replace('_', '-') for f in refused)} "
            "cannot be used with an exported SavedModel (its signatures "
            "take only --beam-size, --alpha and --beta); use the model "
            "directory instead")
    if not given:
        return None
    search = metadata.get("search_options", {})
    options = {"beam_size": given.get("beam_size", search.get("beam_size", 5)),
               "length_penalty": given.get(
                   "alpha", search.get("length_penalty", 0.6)),
               "coverage_penalty": given.get(
                   "beta", search.get("coverage_penalty", 0.0))}
    sizes = set(metadata.get("beam_sizes", ())) | {search.get("beam_size")}
    if metadata.get("beam_sizes") and options["beam_size"] not in sizes:
        raise ValueError(
            f"--beam-size {options['beam_size']}: the export compiled beam "
            f"sizes {', '.join(str(s) for s in sorted(sizes - {None}))}")
    return options


def _export_task(args, metadata, name):
    """The task inputs of an export from the task flags (`--tags`
    defaults to none, as `translate --server`)."""
    inputs = metadata.get("task_inputs", {})
    given = {key: getattr(args, key, None) for key in task_flags.FLAGS}
    task = {}
    for key, value in given.items():
        if value is None:
            continue
        if key not in inputs:
            if metadata.get(key) == value:  # a GNMT export's own direction
                continue
            raise ValueError(f"{name} takes no --{key.replace('_', '-')} "
                             f"(it translates one fixed direction)")
        if key != "tags" and value not in inputs[key]:
            raise ValueError(f"--{key.replace('_', '-')} {value}: {name} "
                             f"knows {', '.join(inputs[key])}")
        task[key] = value
    missing = [f"--{k.replace('_', '-')}" for k in ("src_lang", "tgt_lang")
               if k in inputs and k not in task]
    if missing:
        raise ValueError(f"{' and '.join(missing)} required for {name}")
    if "tags" in inputs:
        task.setdefault("tags", "")
    return task


def _model_dir_handler(args):
    from gnmt_tf.beam_translate.handlers import TranslatorHandler
    from gnmt_tf.flags.search import search_options
    from gnmt_tf.pretrained import locate
    from gnmt_tf.translator import Translator

    options = search_options(args)
    if options.num_hypotheses != 1:
        raise ValueError("--n-best must be 1 with translate-beam (one "
                         "output line per input line)")
    model_dir = str(locate(args.model).resolve())
    translator = Translator.from_model_dir(model_dir)
    task = task_flags.task_arguments(args, translator.model, args.model)
    translator.task_ids(**task)  # a bad task fails before the pipeline
    import dataclasses

    search = dataclasses.asdict(options)
    task = {k: list(v) if isinstance(v, (list, tuple)) else v
            for k, v in task.items()}
    handler = TranslatorHandler(model_dir, search, task, args.batch_size,
                                args.max_batch_size)
    settings = {"model": model_dir, "kind": "model_dir", "search": search,
                "task": task}
    return handler, settings


def _savedmodel_handler(args, metadata):
    from gnmt_tf.beam_translate.handlers import SavedModelHandler

    options = _export_options(args, metadata)
    task = _export_task(args, metadata, args.model)
    model = args.model if _remote(args.model) else os.path.abspath(args.model)
    handler = SavedModelHandler(model, options, task, args.max_batch_size)
    settings = {"model": model, "kind": "savedmodel", "search": options,
                "task": task}
    return handler, settings


def pipeline_arguments(args):
    """Beam pipeline options: `--runner` and those given after `--`."""
    rest = [a for a in args.pipeline_args if a != "--"]
    if not any(a.split("=")[0] == "--runner" for a in rest):
        rest.insert(0, f"--runner={args.runner}")
    return rest


def run(args):
    try:
        import apache_beam  # noqa: F401
    except ModuleNotFoundError:
        raise UsageError(
            "translate-beam needs Apache Beam: pip install 'gnmt-tf[beam]' "
            "(in its own environment: see docs/beam.md)") from None
    stray = [a for a in args.pipeline_args
             if a != "--" and not a.startswith("-")]
    if stray and stray == args.pipeline_args[:len(stray)]:
        raise ValueError(f"unexpected argument {stray[0]!r} (pipeline "
                         "options go after --)")
    from gnmt_tf.beam_translate.shards import match_inputs

    match_inputs(args.input)  # before loading the model
    if not _remote(args.model) and not os.path.exists(args.model):
        from gnmt_tf.pretrained import locate

        locate(args.model)  # a shipped model's name, or FileNotFoundError
    metadata = _export_metadata(args.model)
    if metadata is None:
        handler, settings = _model_dir_handler(args)
    else:
        handler, settings = _savedmodel_handler(args, metadata)
    from gnmt_tf.beam_translate.job import run_job

    summary = run_job(args.input, args.output, handler, settings,
                      pipeline_arguments(args))
    for _, reason in summary.failed:
        print(f"gnmt-tf translate-beam: error: {reason}", file=sys.stderr)
    print(f"translate-beam: translated {summary.translated} shard(s) "
          f"({summary.translated_lines} lines), {summary.skipped} already "
          f"done, {len(summary.failed)} failed; manifest {summary.manifest}"
          f"{'' if summary.manifest_written else ' (unchanged)'}",
          file=sys.stderr)
    return EXIT_SOME_FAILED if summary.failed else 0
