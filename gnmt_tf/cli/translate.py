"""`gnmt-tf translate`: raw sentences in (stdin or file), translations out.

The model is a trained model directory (``--model``), a TF Serving endpoint
(``--server``), an exported TFLite file (``--tflite``) or an ONNX export
directory (``--onnx``); the two exports are searched on the host by
`gnmt_tf.host_translator`. Task-space models take ``--src-lang``,
``--tgt-lang`` and ``--tags`` with each. Input is read and output written
a chunk at a time (`gnmt_tf.cli.streaming`); a line of several sentences
is split into them and their translations joined back into one output
line (`gnmt_tf.cli.sentence_lines`; `--no-split-sentences` turns it off).

With a document-pipeline flag (``--format``, ``--src-lang auto``,
``--glossary``, ``--qe``, ``--min-quality``) the whole input is one document
(plain text or HTML) run through the document pipeline (normalisation,
language detection, sentence splitting, markup kept) by
`gnmt_tf.gateway.cli`, imported only then.

Several ``--model`` flags make an ensemble; ``--predictors`` /
``--weights`` / ``--lm`` / ``--ensemble-mode`` (or ``--predictor-config``)
combine models, an n-gram LM and a word-count bonus log-linearly
(`gnmt_tf.predictor_model`); ``--rescore NBEST`` re-ranks an n-best list
under that combination by forced decoding (`gnmt_tf.rescoring`).

``--engine`` picks how ``--model`` searches (`gnmt_tf.search_engine`); by
default (``auto``) a model whose float32 TFLite export is cached
(`gnmt_tf.tflite_cache`) translates through it without loading
TensorFlow, and a first run searches in process (compiled by XLA where it
can) and then caches the export for the runs after it.
"""

import sys

from gnmt_tf.cli import sentence_lines, streaming, task_flags, unknown_script
from gnmt_tf.cli import translate_backends as backends
from gnmt_tf.config import PRECISIONS
from gnmt_tf.search_engine import ENGINES
from gnmt_tf.flags.arg_types import (non_negative_int, positive_int,
                                     probability)
# Re-exported: the commands built on `translate` take its flag groups from here.
from gnmt_tf.flags.predictors import (add_predictor_arguments,  # noqa: F401
                                      predictor_settings)
from gnmt_tf.flags.search import (add_search_arguments,  # noqa: F401
                                  given_search_flags, search_options)



def register(subparsers):
    parser = subparsers.add_parser(
        "translate", help="translate raw text, line by line (a line of "
                          "several sentences split into them)")
    parser.add_argument("--model", action="append",
                        help="trained model directory, or the name of a "
                             "shipped model (gnmt-tf models); repeat it for "
                             "an ensemble")
    parser.add_argument("--server", metavar="HOST:PORT",
                        help="translate through a TF Serving gRPC endpoint instead")
    parser.add_argument("--model_name", "--model-name", dest="model_name",
                        default="gnmt", help="served model name (with --server)")
    parser.add_argument(
        "--tflite", metavar="FILE",
        help="translate with an exported .tflite model instead (gnmt-tf "
             "export tflite; its spm.model and model.json next to it), or "
             "a shipped model's int8 export by the model's name")
    parser.add_argument(
        "--onnx", metavar="DIR",
        help="translate with an ONNX export directory instead (gnmt-tf "
             "export onnx: encode.onnx, decode_step.onnx, spm.model, "
             "model.json; needs onnxruntime)")
    parser.add_argument("--input", "-i", help="input file (default: stdin)")
    parser.add_argument("--output", "-o", help="output file (default: stdout)")
    parser.add_argument("--batch-size", type=positive_int, default=32)
    parser.add_argument(
        "--threads", type=positive_int, default=None, metavar="N",
        help="CPU threads per op (default with --model: 1 at --batch-size "
             "1, where it measured 1.26x faster, else TensorFlow's choice, "
             "see gnmt_tf.cpu_settings; with --tflite: every core, up "
             "to 4; with --onnx: the runtime's choice)")
    parser.add_argument(
        "--workers", type=positive_int, default=None, metavar="N",
        help="TFLite's host search (--tflite, or --model's cached export): "
             "split each batch between N single-threaded interpreters "
             "running side by side (default: one per core, up to 4, "
             "unless --threads is given; 1: one interpreter of --threads "
             "threads)")
    parser.add_argument(
        "--precision", choices=PRECISIONS,
        default="float32",
        help="with one --model (a Transformer): compute in bfloat16, "
             "faster where the CPU has bfloat16 matmuls (AVX-512 BF16, "
             "AMX), at a small BLEU cost (docs/benchmarks.md: bfloat16)")
    parser.add_argument(
        "--engine", choices=ENGINES, default=None,
        help="how --model searches: auto (default: its cached float32 "
             "TFLite export when there is one, no TensorFlow loaded; else "
             "in process, XLA-compiled where possible, then the export is "
             "cached for the next runs), graph (the TensorFlow graph "
             "search), xla (as --xla) or tflite (convert the export now if "
             "it is not cached); $GNMT_TF_ENGINE sets the default")
    parser.add_argument(
        "--xla", action="store_true",
        help="with one --model: compile the whole search with XLA (beam "
             "or greedy; no --shortlist). Same translations, faster (see "
             "docs/benchmarks.md: the whole search compiled by XLA), but "
             "each new batch shape compiles first (seconds); compiled "
             "searches are kept in ~/.cache/gnmt_tf/xla for the next run "
             "($GNMT_TF_XLA_CACHE: another directory, or off)")
    parser.add_argument(
        "--plot-attention", metavar="DIR",
        help="write attention heatmaps (PNG) of the first sentences here "
             "(with --model; needs matplotlib)")
    parser.add_argument("--plot-attention-count", type=positive_int,
                        default=10, metavar="N",
                        help="sentences --plot-attention draws (default 10)")
    parser.add_argument(
        "--pipeline", action="store_true",
        help="translate with the batch-decoding pipeline (with --model): "
             "a scheduler, a compute and a post-processing thread, for "
             "large files; same output, in input order")
    parser.add_argument(
        "--pipeline-retries", type=non_negative_int, default=1, metavar="N",
        help="with --pipeline: times a translation cut at its length limit "
             "is redone with the limit doubled (default 1; 0 = never, "
             "which gives exactly plain translate's output)")
    add_search_arguments(parser)
    parser.add_argument(
        "--constraints", metavar="FILE",
        help="lexically constrained decoding: one line per input line, "
             "tab-separated target terms that must appear in its "
             "translation (an empty line: none)")
    parser.add_argument(
        "--glossary-constraints", metavar="FILE",
        help="'source term<TAB>target term' lines: the target term of "
             "every source term found in an input line (whole words, any "
             "case) must appear in its translation")
    parser.add_argument(
        "--sepbeam-model", metavar="DIR", action="append", default=[],
        help="with --decoder sepbeam: another model directory (same "
             "target vocabulary), repeatable; each model keeps its own beam")
    parser.add_argument(
        "--sepbeam-weights", metavar="W,W,...",
        help="weights of --model and each --sepbeam-model in the final "
             "ranking (default equal)")
    add_predictor_arguments(parser)
    parser.add_argument(
        "--rescore", metavar="NBEST",
        help="instead of translating, score the 'i ||| text ||| score' "
             "lines of NBEST (--n-best output) as translations of the "
             "--input sentences under the model(s) and predictors (forced "
             "decoding, GNMT score with --alpha/--beta, default 0) and print "
             "them re-ranked, best first per sentence")
    add_vocabulary_arguments(parser)
    task_flags.add_task_arguments(parser)
    sentence_lines.add_argument(parser)
    add_document_arguments(parser)
    parser.set_defaults(func=run)


def add_document_arguments(parser):
    """The document-pipeline flags (any of them selects the document
    mode; `--src-lang auto` too)."""
    group = parser.add_argument_group(
        "document pipeline", "translate the whole input as one document "
        "(needs --tgt-lang; --src-lang auto detects the language)")
    group.add_argument("--format", choices=["text", "html"], default=None,
                       help="the input is plain text (paragraphs separated "
                            "by blank lines) or HTML (markup kept)")
    group.add_argument("--languages", metavar="CODES",
                       help="comma-separated codes the model knows (with "
                            "--server; default: --src-lang,--tgt-lang)")
    group.add_argument("--glossary", metavar="TSV",
                       help="terms to translate as given: SOURCE<TAB>TARGET"
                            "[<TAB>LANG-PAIR[<TAB>TAGS]] a line")
    group.add_argument("--qe", action="store_true",
                       help="estimate the quality of each sentence")
    group.add_argument("--min-quality", type=probability, default=None,
                       metavar="X",
                       help="flag sentences whose estimated quality (0-1) is "
                            "below X (a warning says how many)")


def document_mode(args) -> bool:
    """Whether a document-pipeline flag was given."""
    return bool(getattr(args, "format", None)
                or getattr(args, "src_lang", None) == "auto"
                or getattr(args, "glossary", None)
                or getattr(args, "qe", False)
                or getattr(args, "min_quality", None) is not None)


def _translate_document(args):
    """Runs the document pipeline (`gnmt_tf.gateway.cli`)."""
    from gnmt_tf.gateway import cli as document_cli

    options = None
    if getattr(args, "model", None):
        options = search_options(args)
        if options.num_hypotheses > 1:
            raise ValueError("--n-best > 1 cannot be used with a document")
    elif given_search_flags(args):
        raise ValueError("search flags cannot be used with --server and a "
                         "document: the export's translate_with_alignment "
                         "searches with its own options")
    return document_cli.run_translate_document(args, options)


def add_vocabulary_arguments(parser):
    """Adds --shortlist and --replace-unk
    (`gnmt_tf.cli.translate_backends.vocabulary_tools` reads them)."""
    parser.add_argument(
        "--shortlist", metavar="TABLE",
        help="search each batch over a reduced output vocabulary: the "
             "--shortlist-top-k translations of its source pieces in TABLE "
             "(gnmt-tf lexical-table) plus the --shortlist-frequent most "
             "frequent target pieces (with --model)")
    parser.add_argument("--shortlist-top-k", type=non_negative_int, default=20,
                        metavar="K", help="translations per source piece (20)")
    parser.add_argument("--shortlist-frequent", type=non_negative_int,
                        default=1000, metavar="N",
                        help="most frequent target pieces always kept (1000)")
    parser.add_argument(
        "--replace-unk", metavar="TABLE|copy",
        help="replace each output <unk> by the TABLE translation of the "
             "source token it attends to most (a source <unk> first, when "
             "there is one), else a copy of it; 'copy' always copies (with "
             "--model)")


def check_files(args):
    """Checks `--output` before any work (see `gnmt_tf.io_utils`)."""
    from gnmt_tf.io_utils import check_output_file

    source = getattr(args, "input", None)
    check_output_file(getattr(args, "output", None), {"--input": source},
                      reads_stdin=not source)


def run(args):
    check_files(args)
    _check_flag_combinations(args)
    if document_mode(args):
        return _translate_document(args)
    backend = next((flag for flag in ("server", "tflite", "onnx")
                    if getattr(args, flag, None)), "model")
    cache_after = None  # a model directory to cache the export of
    if backend == "model":
        job, cache_after = _model_or_cached_export_job(args)
    else:
        job = (backends.host_job(args, backend)
               if backend in ("tflite", "onnx") else backends.server_job(args))
    if isinstance(job, int):  # --rescore, --pipeline: done
        return job
    try:
        format_chunk, check = job.format_chunk, None
        if job.vocabulary is not None:
            format_chunk, check = unknown_script.checking(job.vocabulary,
                                                          format_chunk)
        status = streaming.translate_stream(
            args.input, args.output, getattr(args, "batch_size", 32),
            sentence_lines.per_line(job.lines, job.translate_chunk,
                                    job.merge), format_chunk)
        job.finish()
        if check is not None:
            check.report()
        if cache_after is not None and status == 0:
            from gnmt_tf.export import tflite_entries

            tflite_entries.build_with_note(cache_after, sys.stderr)
        return status
    finally:
        job.close()


def _model_or_cached_export_job(args):
    """`(job, cache_after)` for `--model`: the host job over the model's
    cached float32 TFLite export where the engine (``auto``, ``tflite``)
    and the flags allow, else the in-process model job; `cache_after` is
    the model directory whose export to cache once this run is done
    (``auto`` without one), or None.

    Raises:
      ValueError: ``--engine tflite`` with a flag only the in-process
        search honours.
    """
    engine = backends.engine(args)
    if engine not in ("auto", "tflite"):
        return backends.model_job(args), None
    refusal = backends.host_path_refusal(args)
    if refusal is not None:
        if engine == "tflite":
            raise ValueError(f"--engine tflite cannot be used with "
                             f"{refusal} (use --engine auto or graph)")
        return backends.model_job(args), None
    from gnmt_tf import tflite_cache
    from gnmt_tf.export import tflite_entries
    from gnmt_tf.pretrained import locate

    model_dir = locate(args.model[0])
    path = tflite_cache.cached(model_dir)
    if path is None and engine == "tflite":
        path = tflite_entries.build_with_note(model_dir, sys.stderr)
        if path is None:
            raise ValueError(f"--engine tflite: {model_dir} has no float32 "
                             "TFLite export (see the note above)")
    if path is not None:
        return backends.host_job(args, "tflite", path), None
    no_cache = tflite_cache.cache_dir() is None
    return backends.model_job(args), None if no_cache else model_dir


def _check_flag_combinations(args):
    """Raises for flags that exclude each other, before any work."""
    if getattr(args, "workers", None) is not None and (
            args.server or getattr(args, "onnx", None)):
        raise ValueError("--workers needs --tflite or --model (TFLite's "
                         "host search)")
    if getattr(args, "precision", "float32") != "float32" and (
            not getattr(args, "model", None) or args.server
            or document_mode(args)):
        raise ValueError("--precision needs --model (not --server, --tflite "
                         "or --onnx) and plain text")
    if document_mode(args):
        if getattr(args, "plot_attention", None):
            raise ValueError("--plot-attention cannot be used with a "
                             "document")
        backends.refuse_host_decoding(
            args, "a document (--format, --src-lang auto, --glossary, "
            "--qe, --min-quality)")
        return
    plot_dir = getattr(args, "plot_attention", None)
    if plot_dir and (args.server or getattr(args, "tflite", None)
                     or getattr(args, "onnx", None)):
        raise ValueError("--plot-attention needs --model (the attention "
                         "comes from a forced pass of the model)")
    if getattr(args, "pipeline", False) and (
            plot_dir or args.server or not getattr(args, "model", None)):
        raise ValueError("--pipeline translates with --model DIR (not "
                         "--server, --tflite or --onnx) and without "
                         "--plot-attention")
    if getattr(args, "pipeline", False):
        backends.refuse_host_decoding(args, "--pipeline")
    for flag in ("shortlist", "replace_unk", "xla"):
        if getattr(args, flag, None) and not getattr(args, "model", None):
            raise ValueError(f"--{flag.replace('_', '-')} needs --model")
    if getattr(args, "engine", None) and not getattr(args, "model", None):
        raise ValueError("--engine needs --model")
    if (getattr(args, "xla", False) or getattr(args, "engine", None)
            == "xla") and (args.server or getattr(args, "shortlist", None)):
        raise ValueError("--xla compiles the in-process search: not with "
                         "--server or --shortlist")
    if args.server:
        return
    given = [flag for flag in ("model", "tflite", "onnx")
             if getattr(args, flag, None)]
    if len(given) > 1:
        raise ValueError(f"give one of --model, --tflite and --onnx, not "
                         f"{' and '.join('--' + flag for flag in given)}")
