"""The `translate-beam` pipeline and the driver that plans and checks it.

`run_job` hashes every input shard (`shards.plan`), keeps the shards that
are done (`shards.done_record`), and runs one Beam pipeline over the
others::

    Create(shards) -> read lines, keyed (shard, line number)
      -> Reshuffle -> RunInference(KeyedModelHandler(handler))
      -> GroupByKey(shard) -> write the shard's output and record

The write step checks that the shard got exactly one translation for each
of its line numbers (none lost, none twice) before the output is written
atomically, and the read step that the input still has the hash it was
planned with. A shard that fails a check, or has a line the model could
not translate (`shards.LineFailure`, from the handler), is not written:
its reason is recorded (`shards.write_failure`) and the pipeline goes on
with the other shards, so one bad line costs its shard only. Afterwards
the driver re-reads every record, collects the failures and writes the
manifest. A job whose shards are all done starts no pipeline.
"""

import dataclasses
import sys

import apache_beam as beam
from apache_beam.ml.inference.base import KeyedModelHandler
from apache_beam.ml.inference.base import RunInference
from apache_beam.options.pipeline_options import PipelineOptions

from gnmt_tf.beam_translate import shards as shards_lib


@dataclasses.dataclass
class JobSummary:
    """What `run_job` did.

    Attributes:
      shards: int. Input shards.
      lines: int. Input lines in all shards.
      skipped: int. Shards already done (not rewritten).
      translated: int. Shards translated by this run.
      translated_lines: int. Lines translated by this run.
      manifest: str. The manifest's path.
      manifest_written: bool. False when it already held the same content.
      failed: list of `(input, reason)`. Shards not translated (their
        outputs not written), each with the reason on one line.
    """

    shards: int
    lines: int
    skipped: int
    translated: int
    translated_lines: int
    manifest: str
    manifest_written: bool
    failed: list = dataclasses.field(default_factory=list)


def _read_shard(shard):
    """`((index, line number), line)` of each line; a shard that cannot be
    read (changed since planned, invalid UTF-8) gives none and records
    why."""
    try:
        lines = shards_lib.read_shard(shard)
    except ValueError as e:
        shards_lib.write_failure(shard, str(e))
        return
    for number, line in enumerate(lines):
        yield (shard.index, number), line


class _WriteShard(beam.DoFn):
    """Writes one shard's translations, in line order, then its record; or
    records why it cannot (a line that failed, lines lost)."""

    def __init__(self, shards, settings):
        self._shards = {s.index: s for s in shards}
        self._settings = settings

    def process(self, element):
        index, numbered = element
        shard = self._shards[index]
        try:
            lines = shards_lib.shard_translations(shard, numbered)
        except ValueError as e:
            shards_lib.write_failure(shard, str(e))
            return
        yield shards_lib.write_shard(shard, self._settings, lines)


def build_pipeline(pipeline, todo, handler, settings):
    """Adds the translation of the `todo` shards to `pipeline`."""
    translated = (
        pipeline
        | "Shards" >> beam.Create(todo)
        | "ReadLines" >> beam.FlatMap(_read_shard)
        | "Spread" >> beam.Reshuffle()
        | "Translate" >> RunInference(KeyedModelHandler(handler))
        | "ByShard" >> beam.Map(
            lambda keyed: (keyed[0][0], (keyed[0][1], keyed[1])))
        | "Group" >> beam.GroupByKey())
    return translated | "Write" >> beam.ParDo(_WriteShard(todo, settings))


def run_job(input_pattern, output_prefix, handler, settings,
            pipeline_args=(), log=None):
    """Translates the files `input_pattern` matches; returns a `JobSummary`.

    Args:
      input_pattern: str. A path or glob (local, or any scheme Beam knows).
      output_prefix: str. Outputs are `PREFIX-iiiii-of-nnnnn` (see
        `gnmt_tf.beam_translate.shards`).
      handler: a `ModelHandler` of `gnmt_tf.beam_translate.handlers`.
      settings: dict. What makes the translations (model, search options,
        task): a shard translated with other settings is not done.
      pipeline_args: list of str. Beam pipeline options (`--runner`, ...).
      log: a text stream for progress lines (default stderr).

    A shard that fails (an input changed while translating, invalid UTF-8,
    a line the model refuses) is left unwritten and listed in the
    summary's `failed`; the others are written.

    Raises:
      ValueError: no input matched.
    """
    log = log or sys.stderr
    planned = shards_lib.plan(input_pattern, output_prefix)
    records, todo = {}, []
    for shard in planned:
        record = shards_lib.done_record(shard, settings)
        if record is None:
            todo.append(shard)
        else:
            records[shard.index] = record
    print(f"translate-beam: {len(planned)} shard(s), "
          f"{sum(s.input_lines for s in planned)} line(s); "
          f"{len(records)} already done, {len(todo)} to translate",
          file=log)
    empty = [s for s in todo if s.input_lines == 0]
    for shard in empty:  # nothing for the pipeline to group
        shards_lib.write_shard(shard, settings, [])
    busy = [s for s in todo if s.input_lines]
    for shard in busy:  # a failure of an earlier run is not this run's
        shards_lib.clear_failure(shard)
    if busy:
        options = PipelineOptions(list(pipeline_args))
        with beam.Pipeline(options=options) as pipeline:
            build_pipeline(pipeline, busy, handler, settings)
    failed = []
    for shard in todo:
        record = shards_lib.done_record(shard, settings)
        if record is None:
            failed.append((shard, shards_lib.read_failure(shard) or (
                f"{shard.input}: not translated: its output "
                f"{shard.output} is not complete after the pipeline ran")))
        else:
            records[shard.index] = record
    path, written = shards_lib.write_manifest(
        output_prefix, settings, list(records.values()),
        [{"index": shard.index, "input": shard.input, "error": reason}
         for shard, reason in failed])
    done = [s for s in todo if s.index in records]
    return JobSummary(
        shards=len(planned), lines=sum(s.input_lines for s in planned),
        skipped=len(planned) - len(todo), translated=len(done),
        translated_lines=sum(s.input_lines for s in done), manifest=path,
        manifest_written=written,
        failed=[(shard.input, reason) for shard, reason in failed])
