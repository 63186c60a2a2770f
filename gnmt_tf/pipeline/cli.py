"""`gnmt-tf detect-language` and `gnmt-tf split`: the pipeline's text steps
on the command line (discovered by `gnmt_tf.cli.main`'s PLUGIN_COMMANDS).

Both read UTF-8 from stdin and write to stdout; invalid UTF-8 is an error
naming the line (exit 2), empty input gives empty output.
"""

import sys

__all__ = ["register"]


def register(subparsers) -> None:
    detect = subparsers.add_parser(
        "detect-language",
        help="print the language code of each input line",
        description="One ISO 639-1 code per input line (stdin -> stdout), "
                    "among --languages; 'und' for a line with nothing to "
                    "go on.")
    detect.add_argument("--languages", default="en,de,fr,cs",
                        help="comma-separated codes (default: en,de,fr,cs)")
    detect.add_argument("--confidence", action="store_true",
                        help="also print the confidence (code TAB value)")
    detect.set_defaults(func=run_detect)
    split = subparsers.add_parser(
        "split", help="split text into sentences, one per line",
        description="Paragraphs (separated by blank lines) from stdin; one "
                    "sentence per line out, a blank line between "
                    "paragraphs.")
    split.add_argument("--lang", default="en",
                       help="language code of the text (default: en)")
    split.set_defaults(func=run_split)


def _lines(stream):
    """Decoded lines of a binary stream, `ValueError` naming the line of
    invalid UTF-8."""
    for number, raw in enumerate(stream, 1):
        try:
            yield raw.decode("utf-8").rstrip("\r\n")
        except UnicodeDecodeError:
            raise ValueError(f"line {number}: invalid UTF-8") from None


def run_detect(args, stdin=None, stdout=None) -> int:
    from gnmt_tf.pipeline.language_id import LanguageDetector
    from gnmt_tf.pipeline.language_id import parse_languages

    stdin = stdin or sys.stdin.buffer
    stdout = stdout or sys.stdout
    detector = LanguageDetector.for_languages(parse_languages(args.languages))
    for line in _lines(stdin):
        found = detector.detect(line)
        stdout.write(f"{found.language}\t{found.confidence:.3f}\n"
                     if args.confidence else f"{found.language}\n")
        stdout.flush()
    return 0


def run_split(args, stdin=None, stdout=None) -> int:
    from gnmt_tf.pipeline.sentence_split import split_sentences

    stdin = stdin or sys.stdin.buffer
    stdout = stdout or sys.stdout
    paragraph, first = [], True

    def flush():
        nonlocal first
        sentences = split_sentences(" ".join(paragraph), args.lang)
        if sentences:
            stdout.write(("" if first else "\n")
                         + "".join(s + "\n" for s in sentences))
            first = False
        paragraph.clear()

    for line in _lines(stdin):
        if line.strip():
            paragraph.append(line.strip())
        else:
            flush()
    flush()
    return 0
