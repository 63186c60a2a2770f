"""`gnmt-tf translate`: raw sentences in (stdin or file), translations out.

The model is a trained model directory (``--model``), a TF Serving endpoint
(``--server``), an exported TFLite file (``--tflite``) or an ONNX export
directory (``--onnx``); the two exports are searched on the host by
`gnmt_tf.host_translator`. Task-space models take ``--src-lang``,
``--tgt-lang`` and ``--tags`` with each. Input is read and output written
a chunk at a time (`gnmt_tf.cli.streaming`).
"""

import sys

from gnmt_tf.cli import streaming, task_flags
from gnmt_tf.cli.arg_types import finite_float, positive_float, positive_int


# Search flag -> (`SearchOptions` field, default). The flags default to None
# so that `--server` can tell which ones were given.
_SEARCH_FLAGS = {"beam_size": ("beam_size", 5), "alpha": ("length_penalty", 0.6),
                 "beta": ("coverage_penalty", 0.0),
                 "beam_width": ("beam_width", None),
                 "early_stopping": ("early_stopping", "gnmt"),
                 "n_best": ("num_hypotheses", 1)}


def add_search_arguments(parser):
    """Adds the search flags (`search_options` reads them)."""
    parser.add_argument("--beam-size", type=positive_int, default=None,
                        help="1 = greedy search (default 5)")
    parser.add_argument("--alpha", type=finite_float, default=None,
                        help="GNMT length-normalisation exponent (default 0.6)")
    parser.add_argument("--beta", type=finite_float, default=None,
                        help="GNMT coverage-penalty weight (default 0)")
    parser.add_argument("--beam-width", type=positive_float, default=None,
                        help="GNMT pruning: drop candidates this far below the best")
    parser.add_argument("--early-stopping", default=None,
                        choices=["gnmt", "exact", "none"],
                        help="default gnmt")
    parser.add_argument("--n-best", type=positive_int, default=None,
                        help="print N hypotheses per input as 'i ||| text ||| "
                             "score' (default 1)")


def given_search_flags(args) -> dict:
    """`{flag dest: value}` of the search flags given on the command line."""
    return {dest: getattr(args, dest) for dest in _SEARCH_FLAGS
            if getattr(args, dest, None) is not None}


def search_options(args):
    """`SearchOptions` from the search flags (defaults for those not given).

    Raises:
      ValueError: a bad beam size or n-best size.
    """
    from gnmt_tf.translator import SearchOptions

    values = {dest: default for dest, (_, default) in _SEARCH_FLAGS.items()}
    values.update(given_search_flags(args))
    if values["beam_size"] < 1:
        raise ValueError("--beam-size must be >= 1")
    if not 1 <= values["n_best"] <= values["beam_size"]:
        raise ValueError("--n-best must be between 1 and --beam-size")
    return SearchOptions(**{field: values[dest]
                            for dest, (field, _) in _SEARCH_FLAGS.items()})


def served_search_options(args):
    """The `search_options` of `serving.client.TranslationClient` for the
    search flags given with `--server`, or None when none are given (the
    export's `serving_default` then searches with its own options).

    An export's `translate_with_options` takes the beam size, alpha and beta
    (defaults for those not given); it returns one translation per sentence
    and keeps the export's pruning and early stopping, so `--n-best` > 1,
    `--beam-width` and `--early-stopping` are refused.

    Raises:
      ValueError: a flag that a server cannot honour, or a bad value.
    """
    given = given_search_flags(args)
    if not given:
        return None
    options = search_options(args)  # validates the values
    refused = [f"--{dest.replace('_', '-')}" for dest in
               ("beam_width", "early_stopping") if dest in given]
    if options.num_hypotheses > 1:
        refused.insert(0, "--n-best > 1")
    if refused:
        raise ValueError(
            f"{', '.join(refused)} cannot be used with --server: the "
            "export's translate_with_options signature takes only "
            "--beam-size, --alpha and --beta and returns one translation "
            "per sentence (export with these options instead, or translate "
            "with --model)")
    return {"beam_size": options.beam_size,
            "length_penalty": options.length_penalty,
            "coverage_penalty": options.coverage_penalty}


def register(subparsers):
    parser = subparsers.add_parser(
        "translate", help="translate raw text, one sentence a line")
    parser.add_argument("--model", help="trained model directory, or the "
                        "name of a shipped model (gnmt-tf models)")
    parser.add_argument("--server", metavar="HOST:PORT",
                        help="translate through a TF Serving gRPC endpoint instead")
    parser.add_argument("--model_name", "--model-name", dest="model_name",
                        default="gnmt", help="served model name (with --server)")
    parser.add_argument(
        "--tflite", metavar="FILE",
        help="translate with an exported .tflite model instead (gnmt-tf "
             "export tflite; its spm.model and model.json next to it)")
    parser.add_argument(
        "--onnx", metavar="DIR",
        help="translate with an ONNX export directory instead (gnmt-tf "
             "export onnx: encode.onnx, decode_step.onnx, spm.model, "
             "model.json; needs onnxruntime)")
    parser.add_argument("--input", "-i", help="input file (default: stdin)")
    parser.add_argument("--output", "-o", help="output file (default: stdout)")
    parser.add_argument("--batch-size", type=positive_int, default=32)
    parser.add_argument(
        "--plot-attention", metavar="DIR",
        help="write attention heatmaps (PNG) of the first sentences here "
             "(with --model; needs matplotlib)")
    parser.add_argument("--plot-attention-count", type=positive_int,
                        default=10, metavar="N",
                        help="sentences --plot-attention draws (default 10)")
    add_search_arguments(parser)
    task_flags.add_task_arguments(parser)
    parser.set_defaults(func=run)


def format_results(results, options, first=0):
    """The best translation per input, or `i ||| text ||| score` n-best
    lines when `options.num_hypotheses > 1` (`i` counts from `first`)."""
    if options.num_hypotheses == 1:
        return [hyps[0].text for hyps in results]
    return [f"{i} ||| {h.text} ||| {h.score:.4f}"
            for i, hyps in enumerate(results, first) for h in hyps]


def check_files(args):
    """Checks `--output` before any work (see `gnmt_tf.io_utils`)."""
    from gnmt_tf.io_utils import check_output_file

    check_output_file(getattr(args, "output", None),
                      {"--input": getattr(args, "input", None)})


def served_task_inputs(args):
    """`src_lang` / `tgt_lang` / `tags` request inputs for a task-space
    export, from the flags given (none for a GNMT export)."""
    inputs = {key: getattr(args, key, None)
              for key in ("src_lang", "tgt_lang", "tags")}
    if not any(inputs.values()):
        return None
    if not (inputs["src_lang"] and inputs["tgt_lang"]):
        raise ValueError("a task-space server needs both --src-lang and "
                         "--tgt-lang")
    inputs["tags"] = inputs["tags"] or ""
    return inputs


def _one_line(message):
    """A server error on one line: the code and TensorFlow's "assertion
    failed: ..." line when there is one, else all of it, whitespace
    collapsed."""
    code = message.split(":", 1)[0]
    for line in message.splitlines():
        if "assertion failed:" in line:
            return f"{code}: {line.strip()}"
    return " ".join(message.split())


def _served_lines(sentences, results, first):
    """Output lines of a chunk of `TranslationResult`s: failed lines come
    out empty and are listed on stderr (status 1)."""
    del sentences
    lines, status = [], 0
    for number, result in enumerate(results, first + 1):
        lines.append(result.translation or "")
        if result.error:
            print(f"line {number}: {result.error}", file=sys.stderr)
            status = 1
    return lines, status


def _translate_through_server(args):
    """Translates via gRPC; failed lines come out empty and are listed on
    stderr (exit code 1), the others are kept. Search flags go to the
    export's `translate_with_options` (see `served_search_options`)."""
    from serving.client import TranslationClient, TranslationError

    options = served_search_options(args)
    with TranslationClient(args.server, args.model_name,
                           task_inputs=served_task_inputs(args),
                           search_options=options) as client:
        if client.search_options:
            try:  # one probe request: refused options fail once
                client.check_request_inputs()
            except TranslationError as e:
                flags = (f"--beam-size {options['beam_size']} --alpha "
                         f"{options['length_penalty']} --beta "
                         f"{options['coverage_penalty']}")
                raise ValueError(f"{args.server} refused {flags}: "
                                 f"{_one_line(str(e))}") from None
        return streaming.translate_stream(
            args.input, args.output, getattr(args, "batch_size", 32),
            client.translate_detailed, _served_lines)


def _translate_on_host(args, flag):
    """Translates with a `gnmt_tf.host_translator.HostTranslator` over the
    export that `--tflite` or `--onnx` (`flag`) names."""
    options = search_options(args)
    if options.early_stopping != "gnmt":
        raise ValueError(f"--{flag} searches with --early-stopping gnmt only")
    from gnmt_tf.host_translator import HostTranslator

    path = getattr(args, flag)
    translator = (HostTranslator.from_onnx(path) if flag == "onnx"
                  else HostTranslator.from_tflite(path))
    task = task_flags.task_arguments(args, translator, path)
    translator.task_arrays(**task)  # a bad task fails before reading input

    def translate_chunk(sentences):
        return translator.translate_nbest(
            sentences, beam_size=options.beam_size,
            length_penalty=options.length_penalty,
            coverage_penalty=options.coverage_penalty,
            num_hypotheses=options.num_hypotheses,
            max_length_ratio=options.max_length_ratio,
            beam_width=options.beam_width, **task)

    return streaming.translate_stream(
        args.input, args.output, args.batch_size, translate_chunk,
        lambda sentences, results, first: (
            format_results(results, options, first), 0))


def run(args):
    check_files(args)
    plot_dir = getattr(args, "plot_attention", None)
    if plot_dir and (args.server or getattr(args, "tflite", None)
                     or getattr(args, "onnx", None)):
        raise ValueError("--plot-attention needs --model (the attention "
                         "comes from a forced pass of the model)")
    if args.server:
        return _translate_through_server(args)
    given = [flag for flag in ("model", "tflite", "onnx")
             if getattr(args, flag, None)]
    if len(given) > 1:
        raise ValueError(f"give one of --model, --tflite and --onnx, not "
                         f"{' and '.join('--' + flag for flag in given)}")
    if given and given[0] in ("tflite", "onnx"):
        return _translate_on_host(args, given[0])
    if not args.model:
        raise ValueError("give --model DIR (or --server HOST:PORT, "
                         "--tflite FILE or --onnx DIR)")
    options = search_options(args)
    if plot_dir:
        from gnmt_tf.cli.attention_plots import AttentionPlots

        plots = AttentionPlots(plot_dir, args.plot_attention_count)
    from gnmt_tf.translator import Translator

    translator = Translator.from_model_dir(args.model)
    task = task_flags.task_arguments(args, translator.model, args.model)
    translator.task_ids(**task)  # a bad task fails before reading input

    def format_chunk(sentences, results, first):
        if plot_dir:
            plots.add(translator, sentences, results, first, **task)
        return format_results(results, options, first), 0

    return streaming.translate_stream(
        args.input, args.output, args.batch_size,
        lambda sentences: translator.translate_nbest(
            sentences, options, args.batch_size, **task),
        format_chunk)
