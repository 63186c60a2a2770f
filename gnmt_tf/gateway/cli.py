"""`gnmt-tf gateway` (the HTTP service) and the document mode of `gnmt-tf
translate` (`run_translate_document`, which `gnmt_tf.cli.translate` loads
by name when a pipeline flag is given).

Discovered by `gnmt_tf.cli.main`'s PLUGIN_COMMANDS; importing this module
loads nothing heavy (the pipeline, gRPC and TensorFlow load in `run`).
"""

import sys

__all__ = ["register", "run", "run_translate_document"]


def register(subparsers) -> None:
    from gnmt_tf.flags.arg_types import positive_float, positive_int
    from gnmt_tf.flags.search import add_search_arguments

    parser = subparsers.add_parser(
        "gateway", help="HTTP service translating documents (text, HTML)",
        description="Serves POST /v1/translate, GET /v1/languages and GET "
                    "/healthz (see gnmt_tf.gateway.service) over a model run in "
                    "this process (--model) or a gRPC server (--server).")
    add_backend_arguments(parser)
    parser.add_argument(
        "--languages", help="comma-separated codes the model knows (needed "
        "with --server: a served model does not say; SRC,TGT for a "
        "one-direction export)")
    parser.add_argument("--host", default="127.0.0.1",
                        help="interface to bind (default 127.0.0.1: this "
                             "machine only)")
    parser.add_argument("--port", type=_port, default=8080,
                        help="HTTP port (default 8080; 0 picks a free one)")
    parser.add_argument("--cache-mb", type=positive_float, default=None,
                        help="cache translations, up to this many MB")
    parser.add_argument("--max-document-mb", type=positive_float,
                        default=10.0,
                        help="largest document accepted (default 10)")
    parser.add_argument("--batch-size", type=positive_int, default=32,
                        help="sentences per search call (--model)")
    parser.add_argument(
        "--request-timeout", type=positive_float, default=300.0,
        metavar="SECONDS",
        help="a request still translating after this long gets 504 and its "
             "work stops (default 300); a request whose client disconnects "
             "stops at once")
    add_search_arguments(parser)  # --model's search (a server's is its own)
    parser.set_defaults(func=run)


def add_backend_arguments(parser) -> None:
    """--model, --server and --model-name: where the pipeline's model
    runs (used by `gnmt-tf gateway` and `gnmt-tf translate-documents`)."""
    parser.add_argument("--model", help="trained model directory or shipped "
                        "model name, run in this process")
    parser.add_argument("--server", metavar="HOST:PORT",
                        help="translate through this TF Serving / gnmt-tf "
                             "serve gRPC endpoint instead")
    parser.add_argument("--model-name", "--model_name", dest="model_name",
                        default="gnmt", help="served model name (--server)")


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 65535:
        import argparse

        raise argparse.ArgumentTypeError(
            f"must be a port number 0-65535, got {text!r}")
    return value


def _languages(text):
    from gnmt_tf.pipeline.language_id import parse_languages

    return parse_languages(text) if text else None


def make_pipeline(args, max_bytes=None, search_options=None):
    """The `gateway.Pipeline` that `--model` or `--server` (with
    `--model-name`, `--languages`) name.

    Raises:
      ValueError: neither or both given; --server without --languages.
    """
    from gnmt_tf.gateway.pipelines import Pipeline

    model, server = getattr(args, "model", None), getattr(args, "server", None)
    if isinstance(model, list):  # `translate --model` is repeatable
        if len(model) > 1 or getattr(args, "predictors", None):
            raise ValueError("a document is translated with one --model; "
                             "ensembles and predictors are for plain "
                             "translate")
        model = model[0] if model else None
    if bool(model) == bool(server):
        raise ValueError("give --model DIR or --server HOST:PORT (one of "
                         "them)")
    languages = _languages(getattr(args, "languages", None))
    kwargs = {} if max_bytes is None else {"max_bytes": max_bytes}
    cache_mb = getattr(args, "cache_mb", None)
    if server:
        if not languages:
            raise ValueError("--server needs --languages (the codes the "
                             "served model knows; SRC,TGT for a GNMT export)")
        from gnmt_tf.serving.client import TranslationError

        try:
            return Pipeline.from_server(server, args.model_name, languages,
                                        cache_mb=cache_mb, **kwargs)
        except TranslationError as e:
            raise ValueError(f"{server}: {str(e).splitlines()[0]}") from None
    return Pipeline.from_model_dir(model, search_options,
                                   getattr(args, "batch_size", 32),
                                   languages, cache_mb=cache_mb, **kwargs)


def model_search_options(args, used_with: str):
    """The search flags' `SearchOptions` with --model, None with --server.

    Raises:
      ValueError: an n-best list asked for (`used_with` says where it cannot
        be used), or search flags given with --server.
    """
    from gnmt_tf.flags.search import given_search_flags, search_options

    if args.model:
        options = search_options(args)
        if options.num_hypotheses > 1:
            raise ValueError(f"--n-best > 1 cannot be used with {used_with}")
        return options
    if given_search_flags(args):
        raise ValueError("search flags need --model: a served model "
                         "searches with its export's options")
    return None


def run(args) -> int:
    """Runs the gateway until SIGINT / SIGTERM."""
    import signal
    import threading

    from gnmt_tf.gateway.service import GatewayServer

    options = model_search_options(args, "the gateway")
    max_bytes = int(args.max_document_mb * 1_000_000)
    pipeline = make_pipeline(args, max_bytes, options)
    server = GatewayServer(pipeline, args.host, args.port,
                           request_timeout_s=args.request_timeout)
    server.start()
    print(f"gnmt-tf gateway: {', '.join(pipeline.languages)} on "
          f"{server.url}", file=sys.stderr, flush=True)
    stopped = threading.Event()

    def shutdown(signum, frame):
        stopped.set()

    signal.signal(signal.SIGTERM, shutdown)
    signal.signal(signal.SIGINT, shutdown)
    while not stopped.wait(1.0):
        pass
    server.stop()
    return 0


# --- gnmt-tf translate's document mode -----------------------------------

def read_glossary(path):
    """The glossary file at `path` (`gnmt_tf.pipeline.glossary`: SOURCE<TAB>TARGET
    [<TAB>LANG-PAIR[<TAB>TAGS]] a line, # comments); the pipeline selects
    the entries of the request's language pair and tags.

    Raises:
      ValueError: a malformed line, naming the file and line.
    """
    from gnmt_tf.pipeline.glossary import GlossaryFile

    return GlossaryFile.read(path)


def pipeline_options(args, translate_document) -> dict:
    """The keyword arguments of `translate_document` for `--glossary`,
    `--qe` and `--min-quality`.

    Raises:
      ValueError: a flag the pipeline does not take (yet).
    """
    import inspect

    parameters = inspect.signature(translate_document).parameters
    options = {}
    if args.glossary:
        options["glossary"] = read_glossary(args.glossary)
    if args.qe:
        options["qe"] = True
    if args.min_quality is not None:
        options["min_quality"] = args.min_quality
    missing = [name for name in options if name not in parameters]
    if missing:
        flags = ", ".join("--" + name.replace("_", "-") for name in missing)
        raise ValueError(f"{flags}: not available in this version of the "
                         "document pipeline")
    return options


def run_translate_document(args, search_options=None) -> int:
    """`gnmt-tf translate` with pipeline flags: the whole input is one
    document (`--format text` or `html`), translated through
    `gateway.Pipeline` (`--model` or `--server`) and written at once."""
    from gnmt_tf.io_utils import write_bytes_atomic

    fmt = args.format or "text"
    if getattr(args, "tflite", None) or getattr(args, "onnx", None):
        raise ValueError("--format, --src-lang auto, --glossary and --qe "
                         "need --model or --server")
    if not args.tgt_lang:
        raise ValueError("--tgt-lang is required with --format / --src-lang "
                         "auto")
    if args.input:
        with open(args.input, "rb") as f:
            data = f.read()
    else:
        data = sys.stdin.buffer.read()
    if args.server and not args.languages:
        if args.src_lang in (None, "auto"):
            raise ValueError("--server with --src-lang auto needs "
                             "--languages (the codes the model knows)")
        args.languages = f"{args.src_lang},{args.tgt_lang}"
    pipeline = make_pipeline(args, search_options=search_options)
    options = pipeline_options(args, pipeline.translate_document)
    tags = [t.strip() for t in (args.tags or "").split(",") if t.strip()]
    out = pipeline.translate_document(
        data, src_lang=args.src_lang or "auto", tgt_lang=args.tgt_lang,
        tags=tags, format=fmt, **options)
    if args.output:
        write_bytes_atomic(args.output, out)
    else:
        sys.stdout.buffer.write(out)
        sys.stdout.buffer.flush()
    return 0
