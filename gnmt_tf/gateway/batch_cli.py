"""`gnmt-tf translate-documents`: the document pipeline over many files
(`gnmt_tf.gateway.batch`), with a model in this process (`--model`) or a gRPC
server (`--server`, no TensorFlow loaded).

Discovered by `gnmt_tf.cli.main`'s PLUGIN_COMMANDS; importing this module
loads nothing heavy. Exit status: 0 when every document was translated (or
was up to date), `EXIT_SOME_FAILED` (3) when some were recorded as errors
(the others are written), 2 for a usage error before any work, 130 when
interrupted (the manifest keeps what was done).
"""

import sys

__all__ = ["EXIT_SOME_FAILED", "register", "run"]

EXIT_SOME_FAILED = 3


def register(subparsers) -> None:
    from gnmt_tf.gateway.cli import add_backend_arguments
    from gnmt_tf.flags.arg_types import positive_float, positive_int
    from gnmt_tf.flags.arg_types import probability
    from gnmt_tf.flags.search import add_search_arguments

    parser = subparsers.add_parser(
        "translate-documents",
        help="translate many documents (text, HTML) into a folder, "
             "resumably",
        description="Each file --input matches is one document, translated "
                    "to the same relative name under --output-dir. A "
                    "manifest records every document; a rerun skips those "
                    "whose input and settings are unchanged. A document "
                    "that fails is recorded and reported, the others are "
                    "still translated; the exit status is then 3.")
    parser.add_argument("--input", "-i", required=True, metavar="GLOB",
                        help="input files (quote it; ** matches folders); "
                             "output names are relative to its leading "
                             "folders without wildcards")
    parser.add_argument("--output-dir", "-o", required=True, metavar="DIR",
                        help="where the translations go (created; an "
                             "earlier run's outputs are never inputs)")
    parser.add_argument("--manifest", metavar="FILE",
                        help="the job's manifest (default: "
                             "DIR/manifest.json)")
    add_backend_arguments(parser)
    parser.add_argument("--languages", metavar="CODES",
                        help="comma-separated codes the model knows (with "
                             "--server; default: --src-lang,--tgt-lang)")
    parser.add_argument("--src-lang", default="auto",
                        help="source language code, or 'auto' (default): "
                             "detected per document")
    parser.add_argument("--tgt-lang", required=True,
                        help="target language code")
    parser.add_argument("--tags", default=None,
                        help="comma-separated scene tags (task-space models)")
    parser.add_argument("--format", choices=["auto", "text", "html"],
                        default="auto",
                        help="auto (default): HTML for .html, .htm and "
                             ".xhtml files, else plain text")
    parser.add_argument("--glossary", metavar="TSV",
                        help="terms to translate as given: SOURCE<TAB>TARGET"
                             "[<TAB>LANG-PAIR[<TAB>TAGS]] a line")
    parser.add_argument("--qe", action="store_true",
                        help="estimate quality (per document in the "
                             "manifest)")
    parser.add_argument("--min-quality", type=probability, default=None,
                        metavar="X",
                        help="count sentences estimated below X (0-1) as "
                             "flagged in the manifest")
    parser.add_argument("--workers", type=positive_int, default=1,
                        metavar="N",
                        help="documents translated at once (default 1; "
                             "helps most with --server)")
    parser.add_argument("--batch-size", type=positive_int, default=32,
                        help="sentences per search call (--model)")
    parser.add_argument("--max-document-mb", type=positive_float,
                        default=10.0,
                        help="larger documents fail (default 10)")
    parser.add_argument("--cache-mb", type=positive_float, default=None,
                        help="cache translations across documents, up to "
                             "this many MB")
    parser.add_argument("--force", action="store_true",
                        help="translate every document again, ignoring "
                             "the manifest")
    add_search_arguments(parser)  # --model's search (a server's is its own)
    parser.set_defaults(func=run)


def _sha256(path: str) -> str:
    import hashlib

    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def run(args) -> int:
    import dataclasses

    from gnmt_tf.gateway import batch
    from gnmt_tf.gateway.cli import make_pipeline
    from gnmt_tf.gateway.cli import model_search_options
    from gnmt_tf.gateway.cli import pipeline_options
    from gnmt_tf.pipeline.pipeline import Pipeline

    if bool(args.model) == bool(args.server):
        raise ValueError("give --model DIR or --server HOST:PORT (one of "
                         "them)")
    options = model_search_options(args, "documents")
    if args.server and not args.languages:
        if args.src_lang == "auto":
            raise ValueError("--server with --src-lang auto needs "
                             "--languages (the codes the model knows)")
        args.languages = f"{args.src_lang},{args.tgt_lang}"
    documents = batch.plan(args.input, args.output_dir, args.format,
                           args.manifest)
    request = pipeline_options(args, Pipeline.translate_document)
    request.update(src_lang=args.src_lang, tgt_lang=args.tgt_lang,
                   tags=[t.strip() for t in (args.tags or "").split(",")
                         if t.strip()])
    max_bytes = int(args.max_document_mb * 1_000_000)
    settings = {"model": args.model or f"{args.server}/{args.model_name}",
                "languages": args.languages,
                "search": options and dataclasses.asdict(options),
                "glossary_sha256": args.glossary and _sha256(args.glossary)}
    loaded = []

    def load():  # only when a document needs translating
        loaded.append(make_pipeline(args, max_bytes, options))
        return loaded[0]

    try:
        summary = batch.translate_documents(
            load, documents, args.output_dir, request, settings,
            args.manifest, args.workers, args.force, max_bytes=max_bytes)
    finally:
        for nmt in loaded:
            close = getattr(nmt.backend, "close", None)
            if close:
                close()
    print(f"gnmt-tf translate-documents: {len(documents)} documents: "
          f"{summary.translated} translated, {summary.skipped} up to date, "
          f"{summary.failed} failed; manifest {summary.manifest}",
          file=sys.stderr)
    return EXIT_SOME_FAILED if summary.failed else 0
