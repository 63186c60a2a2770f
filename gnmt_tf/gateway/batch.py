"""The batch job behind `gnmt-tf translate-documents`: many documents
through one `gateway.Pipeline`, resumable.

Each file the input glob matches is one document (format "auto": HTML for
`.html`, `.htm` and `.xhtml`, else plain text). Its translation is written
(atomically, folders created) to the same relative name under the output
folder; the relative name is taken from the glob's leading folders without
wildcards (`docs/**/*.html` -> `docs/a/b.html` becomes `OUT/a/b.html`).
No input is ever written (an output that would replace one is refused),
and an earlier run's outputs are never inputs (files under the output
folder when it lies below the glob's root, and the manifest).

The manifest (`OUT/manifest.json` unless given) is the job's record: the
settings and, per document, its source path, sha256, format, output path
and sha256, the source language (detected with "auto"), sentence count,
document quality (with QE), flagged sentence count, the pipeline's
warnings, and `status` "ok" or "error" with a one-line `message`. A rerun
skips a document whose entry is "ok" for the same input sha256 and
settings (`settings_sha256`: the job's settings plus the document's
format) and whose output still has the recorded sha256; everything else
is translated again (failed documents are retried). The manifest is
rewritten only when its content changes: during the job at most every
`MANIFEST_INTERVAL_S` seconds, and at the end (also after an error or an
interrupt), so a killed job loses the records of a few seconds at most.

A failed document (invalid UTF-8, a language the model does not know,
malformed XHTML, over the size limit, a server error) is recorded and
reported on one stderr line; the others are still translated.

Example:
```python
from gnmt_tf.gateway import Pipeline
from gnmt_tf.gateway.batch import plan, translate_documents

nmt = Pipeline.from_model_dir("runs/en-de")
documents = plan("docs/**/*", "out")
summary = translate_documents(nmt, documents, "out",
                              {"src_lang": "auto", "tgt_lang": "de"},
                              settings={"model": "runs/en-de"})
summary.failed  # number of documents recorded as errors
```
"""

import concurrent.futures
import contextlib
import dataclasses
import glob
import hashlib
import json
import os
import sys
import threading
import time
import warnings
from typing import Dict, List, Optional, Sequence

from gnmt_tf.gateway.backends import BackendError
from gnmt_tf.beam_translate.shards import canonical
from gnmt_tf.beam_translate.shards import match_inputs
from gnmt_tf.beam_translate.shards import write_atomic

MANIFEST_VERSION = 1
MANIFEST_NAME = "manifest.json"
MANIFEST_INTERVAL_S = 2.0
HTML_SUFFIXES = (".html", ".htm", ".xhtml")
FORMATS = ("auto", "text", "html")
# What fails one document; anything else (a bug, TensorFlow running out of
# memory) stops the job.
DOCUMENT_ERRORS = (ValueError, OSError, BackendError)


def document_format(path: str, format: str = "auto") -> str:
    """"html" or "text": `format`, or for "auto" what `path`'s suffix
    says (`HTML_SUFFIXES`, any case)."""
    if format not in FORMATS:
        raise ValueError(f"unknown format {format!r}; expected "
                         f"{', '.join(FORMATS)}")
    if format != "auto":
        return format
    return "html" if path.lower().endswith(HTML_SUFFIXES) else "text"


def input_root(pattern: str) -> str:
    """The folder that output names are relative to: `pattern`'s leading
    folders up to the first with a wildcard (`docs/**/*.txt` -> `docs`,
    `*.txt` -> `.`, `docs/a.txt` -> `docs`)."""
    head, parts = pattern, []
    while True:
        head, tail = os.path.split(head)
        if not tail:
            break
        parts.append(tail)
    parts.reverse()
    root = [head] if head else []
    for part in parts[:-1]:
        if glob.has_magic(part):
            break
        root.append(part)
    return os.path.join(*root) if root else "."


def _inside(path: str, folder: str) -> bool:
    path, folder = os.path.realpath(path), os.path.realpath(folder)
    return os.path.commonpath([path, folder]) == folder


@dataclasses.dataclass(frozen=True)
class Document:
    """One input file and where its translation goes.

    Attributes:
      source: str. The input file, as the glob matched it.
      name: str. Its name relative to `input_root` (the manifest's key).
      output: str. `OUTPUT_DIR/name`.
      format: str. "text" or "html".
    """

    source: str
    name: str
    output: str
    format: str


def plan(pattern: str, output_dir: str, format: str = "auto",
         manifest: Optional[str] = None) -> List[Document]:
    """The documents of a job: the files `pattern` matches, sorted, less
    an earlier run's outputs (files under `output_dir` when it lies below
    the glob's root folder) and the manifest.

    Raises:
      ValueError: no file matched, a bad format, or an output that would
        be written over an input or the manifest.
    """
    root = input_root(pattern)
    manifest = os.path.realpath(manifest or os.path.join(output_dir,
                                                         MANIFEST_NAME))
    # An output folder below the root (`docs/out` for `docs/**/*`) holds
    # what a recursive glob would match on the next run.
    below = os.path.isdir(output_dir) and not _inside(root, output_dir)
    paths = [p for p in match_inputs(pattern)
             if os.path.realpath(p) != manifest
             and not (below and _inside(p, output_dir))]
    inputs = {os.path.realpath(p) for p in paths}
    documents = []
    for path in paths:
        name = os.path.relpath(path, root)
        output = os.path.join(output_dir, name)
        target = os.path.realpath(output)
        if target == manifest or target in inputs:
            what = "the manifest" if target == manifest else "an input"
            raise ValueError(f"{output} would be written over {what}; "
                             "choose another --output-dir")
        documents.append(Document(path, name, output,
                                  document_format(path, format)))
    if not documents:
        raise ValueError(f"--input {pattern!r} matched no file outside "
                         f"--output-dir {output_dir}")
    return documents


def settings_digest(settings: dict, format: str) -> str:
    """sha256 of the job's settings plus a document's format (canonical
    JSON): what an entry must match to be skipped."""
    text = json.dumps(canonical(dict(settings, format=format)),
                      sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _file_sha256(path: str) -> Optional[str]:
    try:
        with open(path, "rb") as f:
            return hashlib.file_digest(f, "sha256").hexdigest()
    except OSError:
        return None


def read_manifest(path: str) -> Dict[str, dict]:
    """The entries of an earlier run's manifest by document name; {} when
    there is none (or it is unreadable, or of another version)."""
    try:
        with open(path, "rb") as f:
            manifest = json.loads(f.read().decode("utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(manifest, dict) or manifest.get(
            "version") != MANIFEST_VERSION:
        return {}
    return {e["name"]: e for e in manifest.get("documents", [])
            if isinstance(e, dict) and "name" in e}


def is_done(entry: Optional[dict], sha256: str, settings_sha256: str,
            output: str) -> bool:
    """Whether `entry` (an earlier run's) still holds: translated without
    error from this input (`sha256`) under these settings, and the output
    on disk is the one it records."""
    return bool(entry and entry.get("status") == "ok"
                and entry.get("sha256") == sha256
                and entry.get("settings_sha256") == settings_sha256
                and entry.get("output") == output
                and entry.get("output_sha256") is not None
                and _file_sha256(output) == entry["output_sha256"])


class _Warnings:
    """Collects the warnings each thread raises (per document), while
    `installed`: `warnings.catch_warnings(record=True)` is process-wide and
    cannot tell concurrent documents apart."""

    def __init__(self):
        self._local = threading.local()

    @contextlib.contextmanager
    def installed(self):
        with warnings.catch_warnings():
            warnings.simplefilter("always")  # every document's, not once
            shown = warnings.showwarning

            def show(message, category, filename, lineno, file=None,
                     line=None):
                log = getattr(self._local, "log", None)
                if log is None:
                    shown(message, category, filename, lineno, file, line)
                else:
                    log.append(f"{category.__name__}: "
                               f"{str(message).splitlines()[0]}")

            warnings.showwarning = show
            yield

    @contextlib.contextmanager
    def collecting(self):
        self._local.log = []
        try:
            yield self._local.log
        finally:
            self._local.log = None


@dataclasses.dataclass
class Summary:
    """What a job did.

    Attributes:
      translated, skipped, failed: int. Documents translated now, up to
        date from an earlier run, and recorded as errors.
      manifest: str. The manifest's path.
      entries: list of dict. The manifest's entries, sorted by name.
    """

    translated: int
    skipped: int
    failed: int
    manifest: str
    entries: List[dict]


class _Job:
    """One run of `translate_documents` (see there)."""

    def __init__(self, pipeline, max_bytes, output_dir, request, settings,
                 manifest, force, stream):
        self._pipeline = pipeline
        self._loading = threading.Lock()
        self.output_dir = output_dir
        self.request = dict(request)
        self.settings = canonical(dict(settings))
        self.manifest = manifest or os.path.join(output_dir, MANIFEST_NAME)
        self.force = force
        self.stream = stream
        self.previous = {} if force else read_manifest(self.manifest)
        self.max_bytes = max_bytes
        self.warnings = _Warnings()
        # Until a document is done again its earlier entry stands, so an
        # interrupted rerun keeps the records of those it did not reach.
        self.entries: Dict[str, dict] = {}
        self.written: Optional[str] = None
        self.last_write = time.monotonic()

    def pipeline(self):
        """The pipeline, made on first use when given as a function (its
        errors stop the job: they are no document's fault)."""
        with self._loading:
            if isinstance(self._pipeline, BaseException):
                raise self._pipeline  # another worker's failure
            if callable(self._pipeline):
                try:
                    self._pipeline = self._pipeline()
                except BaseException as e:
                    self._pipeline = e
                    raise
            return self._pipeline

    def process(self, document: Document):
        """`(entry, "translated" | "skipped" | "failed")` of one document."""
        digest = settings_digest(self.settings, document.format)
        entry = {"name": document.name, "source": document.source,
                 "sha256": None, "format": document.format,
                 "output": document.output, "output_sha256": None,
                 "settings_sha256": digest, "status": "error",
                 "message": None, "detected_language": None,
                 "sentences": None, "quality": None, "flagged": None,
                 "warnings": []}
        with self.warnings.collecting() as log:
            try:
                data = self._read(document, entry)
            except DOCUMENT_ERRORS as e:
                entry["message"] = _one_line(e)
                return entry, "failed"
            if is_done(self.previous.get(document.name), entry["sha256"],
                       digest, document.output):
                return self.previous[document.name], "skipped"
            pipeline = self.pipeline()
            try:
                result = pipeline.translate_document_detailed(
                    data, format=document.format, **self.request)
                write_atomic(document.output, result.output)
            except DOCUMENT_ERRORS as e:
                entry["message"] = _one_line(e)
                return entry, "failed"
            finally:
                entry["warnings"] = list(log)
        entry["warnings"] += result.warnings
        entry.update(
            status="ok", output_sha256=hashlib.sha256(
                result.output).hexdigest(),
            detected_language=result.source_language,
            sentences=len(result.sentences), quality=result.quality,
            flagged=len(result.flagged))
        return entry, "translated"

    def _read(self, document: Document, entry: dict) -> bytes:
        """The document's bytes (its sha256 into `entry`); an over-large
        one is hashed without being read whole, then refused."""
        size = os.path.getsize(document.source)
        if size > self.max_bytes:
            entry["sha256"] = _file_sha256(document.source)
            raise ValueError(f"document of {size} bytes is over the limit "
                             f"of {self.max_bytes} bytes")
        with open(document.source, "rb") as f:
            data = f.read()
        entry["sha256"] = hashlib.sha256(data).hexdigest()
        return data

    def write_manifest(self, force: bool = False):
        """Writes the manifest when its content changed (and, unless
        `force`, `MANIFEST_INTERVAL_S` passed since the last write)."""
        if not force and (time.monotonic() - self.last_write
                          < MANIFEST_INTERVAL_S):
            return
        text = json.dumps(
            {"version": MANIFEST_VERSION, "settings": self.settings,
             "documents": [self.entries[k] for k in sorted(self.entries)]},
            indent=1, sort_keys=True) + "\n"
        if self.written is None:
            try:
                with open(self.manifest, encoding="utf-8") as f:
                    self.written = f.read()
            except (OSError, ValueError):
                self.written = ""
        if not self.entries and not self.written:
            return  # stopped before any document: nothing to record
        if text != self.written:
            write_atomic(self.manifest, text.encode("utf-8"))
            self.written = text
        self.last_write = time.monotonic()

    def report(self, message: str):
        from tqdm import tqdm

        tqdm.write(f"gnmt-tf translate-documents: {message}",
                   file=self.stream)


def _one_line(error: BaseException) -> str:
    if isinstance(error, OSError) and error.filename and error.strerror:
        return f"{error.filename}: {error.strerror}"
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def translate_documents(pipeline, documents: Sequence[Document],
                        output_dir: str, request: dict, settings: dict,
                        manifest: Optional[str] = None, workers: int = 1,
                        force: bool = False, stream=None,
                        max_bytes: Optional[int] = None) -> Summary:
    """Translates `documents` (`plan`) with `pipeline`, resuming an earlier
    run (see the module docstring).

    Args:
      pipeline: a `pipeline.Pipeline` (`gateway.Pipeline`), or a function
        of no arguments that makes one, called when the first document
        needs translating (a rerun with nothing to do loads no model).
      documents: sequence of `Document`.
      output_dir: str. Where the outputs and the manifest go.
      request: dict. `translate_document_detailed`'s keyword arguments
        besides the data and format: `src_lang`, `tgt_lang`, `tags`,
        `glossary`, `qe`, `min_quality`.
      settings: dict. What else decides the output (model, search options,
        the glossary's sha256, ...); JSON-serialisable. Recorded in the
        manifest; a change redoes every document.
      manifest: str or None. The manifest's path (default
        `OUTPUT_DIR/manifest.json`).
      workers: int. Documents translated at once (threads; an in-process
        model still runs one search at a time).
      force: bool. Translate every document, ignoring the manifest.
      stream: where failures and warnings go, a line each (stderr).
      max_bytes: int or None. Larger documents fail without being read
        (default: the pipeline's `max_bytes`, which must then be given as
        a `Pipeline`).

    Returns:
      `Summary`.
    """
    from gnmt_tf.progress import progress

    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    request = dict(request, tags=tuple(request.get("tags") or ()))
    settings = dict(settings, request={k: v for k, v in request.items()
                                       if k != "glossary"})
    if max_bytes is None:
        max_bytes = pipeline.max_bytes
    job = _Job(pipeline, max_bytes, output_dir, request, settings, manifest,
               force, stream or sys.stderr)
    job.entries.update((d.name, job.previous[d.name]) for d in documents
                       if d.name in job.previous)
    counts = {"translated": 0, "skipped": 0, "failed": 0}
    bar = progress(total=len(documents), desc="documents", unit=" docs")
    try:
        with job.warnings.installed(), \
                concurrent.futures.ThreadPoolExecutor(workers) as pool:
            futures = [pool.submit(job.process, d) for d in documents]
            try:
                for future in concurrent.futures.as_completed(futures):
                    entry, outcome = future.result()
                    job.entries[entry["name"]] = entry
                    counts[outcome] += 1
                    for warning in entry.get("warnings") or ():
                        if outcome != "skipped":
                            job.report(f"{entry['source']}: warning: "
                                       f"{warning}")
                    if outcome == "failed":
                        job.report(f"{entry['source']}: error: "
                                   f"{entry['message']}")
                    bar.update(1)
                    job.write_manifest()
            except BaseException:
                for future in futures:
                    future.cancel()
                raise
    finally:
        bar.close()
        job.write_manifest(force=True)
    return Summary(counts["translated"], counts["skipped"], counts["failed"],
                   job.manifest, [job.entries[k] for k in sorted(job.entries)])
