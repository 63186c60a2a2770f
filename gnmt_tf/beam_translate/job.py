"""The `translate-beam` pipeline and the driver that plans and checks it.

`run_job` hashes every input shard (`shards.plan`), keeps the shards that
are done (`shards.done_record`), and runs one Beam pipeline over the
others::

    Create(shards) -> read lines, keyed (shard, line number)
      -> Reshuffle -> RunInference(KeyedModelHandler(handler))
      -> GroupByKey(shard) -> write the shard's output and record

The write step checks that the shard got exactly one translation for each
of its line numbers (none lost, none twice) before the output is written
atomically, and that the input still has the hash it was planned with.
Afterwards the driver re-reads every record and writes the manifest.
A job whose shards are all done starts no pipeline.
"""

import dataclasses
import hashlib
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
    """

    shards: int
    lines: int
    skipped: int
    translated: int
    translated_lines: int
    manifest: str
    manifest_written: bool


def _read_shard(shard):
    """`((index, line number), line)` of each line; checks the content is
    still the one planned."""
    with shards_lib.open_read(shard.input) as f:
        data = f.read()
    sha = hashlib.sha256(data).hexdigest()
    if sha != shard.input_sha256:
        raise ValueError(f"{shard.input} changed since the job started "
                         f"(sha256 {sha}, planned {shard.input_sha256})")
    for number, line in enumerate(shards_lib.split_lines(data, shard.input)):
        yield (shard.index, number), line


class _WriteShard(beam.DoFn):
    """Writes one shard's translations, in line order, then its record."""

    def __init__(self, shards, settings):
        self._shards = {s.index: s for s in shards}
        self._settings = settings

    def process(self, element):
        index, numbered = element
        numbered = list(numbered)  # a runner's grouped values may be lazy
        shard = self._shards[index]
        translations = dict(numbered)
        if len(translations) != len(numbered) or \
                sorted(translations) != list(range(shard.input_lines)):
            raise ValueError(
                f"{shard.input}: {len(numbered)} translations for line "
                f"numbers {len(translations)} distinct, expected "
                f"{shard.input_lines}")
        lines = [translations[i] for i in range(shard.input_lines)]
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

    Raises:
      ValueError: no input matched, an input changed while translating,
        or a shard's record does not hold after the pipeline ran.
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
    if busy:
        options = PipelineOptions(list(pipeline_args))
        with beam.Pipeline(options=options) as pipeline:
            build_pipeline(pipeline, busy, handler, settings)
    for shard in todo:
        record = shards_lib.done_record(shard, settings)
        if record is None:
            raise ValueError(f"{shard.output}: not complete after the "
                             "pipeline ran (see its .done.json)")
        records[shard.index] = record
    path, written = shards_lib.write_manifest(
        output_prefix, settings, list(records.values()))
    return JobSummary(
        shards=len(planned), lines=sum(s.input_lines for s in planned),
        skipped=len(planned) - len(todo), translated=len(todo),
        translated_lines=sum(s.input_lines for s in todo), manifest=path,
        manifest_written=written)
