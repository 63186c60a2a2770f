"""Streaming training input from prepared shards (`gnmt-tf data prepare`).

Nothing is held in memory but the shuffle buffer and the batches in flight,
so memory does not grow with corpus size:

    Dataset.list_files(shards of a corpus)   # file order shuffled
      -> interleave(TextLineDataset(GZIP))   # reads several shards at once
      -> repeat                              # per corpus, then
    sample_from_datasets(corpora, weights)   # the corpora's weights
      -> shuffle(buffer)                     # bounded
      -> split the TSV line, tokenise in-graph (tensorflow_text
         SentencepieceTokenizer, the model's spm.model)
      -> drop empty and over-long pairs      # as pipeline.kept_indices;
                                             # fails if none fits
      -> pipeline.bucket_batches             # the same batching as today

Elements are `(features, labels)` as in `gnmt_tf.data.datasets`, plus the
per-corpus constant features a caller asks for (the task-space model's
`src_lang`, `tgt_lang`, `tags`).
"""

import pathlib
from typing import Optional, Sequence

import tensorflow as tf

from gnmt_tf.data import prepare as prepare_lib
from gnmt_tf.data.datasets import bucket_batches
from gnmt_tf.text.subword import BOS_ID, EOS_ID

# Shards each corpus reads at once.
CYCLE_LENGTH = 4
# A repeated stream fails after this many pairs in a row (or the corpus's
# size, if larger) are too long, instead of filtering forever.
MIN_MISSES = 10_000


def corpus_lines(prepared_dir, corpus_entry, shuffle=True, seed=None,
                 worker=(0, 1)):
    """The TSV lines of one corpus's shards: file order shuffled (with
    `shuffle`), `CYCLE_LENGTH` shards read in turn.

    `worker` = `(index, count)`: with several worker processes each reads
    every count-th shard file from its index on (of the sorted names, before
    any shuffle), so the workers read disjoint parts that together are the
    corpus.

    Raises:
        ValueError: fewer shard files than workers.
    """
    index, count = worker
    files = sorted(str(f) for f in
                   prepare_lib.shard_paths(prepared_dir, corpus_entry))
    if count > 1:
        if len(files) < count:
            raise ValueError(
                f"corpus {corpus_entry.get('name', '?')} has {len(files)} "
                f"shard(s) for {count} workers; each worker reads whole "
                "shards: prepare again with a smaller --shard-size")
        files = files[index::count]
    # = Dataset.list_files(files, shuffle, seed), without the glob.
    names = tf.data.Dataset.from_tensor_slices(files)
    if shuffle:
        names = names.shuffle(len(files), seed=seed)
    return names.interleave(
        lambda name: tf.data.TextLineDataset(name, compression_type="GZIP"),
        cycle_length=min(len(files), CYCLE_LENGTH), block_length=1,
        num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)


def _split_line(line):
    fields = tf.strings.split(line, "\t", maxsplit=1)
    return fields[0], fields[1]


def shard_dataset(prepared_dir, subwords, max_tokens, max_length,
                  shuffle=True, shuffle_buffer=30000, repeat=True, seed=None,
                  pad_to_bucket=False, bucket_width=None,
                  corpus_features: Optional[Sequence[dict]] = None,
                  source_prefixes: Optional[Sequence[Sequence[int]]] = None,
                  worker=(0, 1)):
    """The training dataset of a prepared directory.

    Args:
        prepared_dir: str or Path. Written by `gnmt-tf data prepare`.
        subwords: `gnmt_tf.text.subword.Subwords`; its
            `tf_tokenizer` tokenises in the graph.
        max_tokens, max_length, shuffle, shuffle_buffer, repeat, seed,
        pad_to_bucket, bucket_width: as `gnmt_tf.data.datasets.make_dataset`.
        corpus_features: optional list, one dict per corpus of the manifest,
            of constant features (name -> int array-like) added to each of
            its examples; every dict has the same names and shapes.
        source_prefixes: optional list, one per corpus, of ids put before
            every source (e.g. a target-language token); they count towards
            `max_length`.
        worker: `(index, count)` of this process among the worker
            processes (`gnmt_tf.training.workers.data_position`): each reads
            its own shard files (`corpus_lines`), and `tf.distribute`'s
            automatic sharding is turned off for the result.

    Returns:
        A dataset of `(features, labels)`.

    Raises:
        FileNotFoundError / ValueError: not a prepared directory, or
            `corpus_features` / `source_prefixes` of the wrong length.
    """
    prepared_dir = pathlib.Path(prepared_dir)
    manifest = prepare_lib.read_manifest(prepared_dir)
    corpora = manifest["corpora"]
    for name, values in (("corpus_features", corpus_features),
                         ("source_prefixes", source_prefixes)):
        if values is not None and len(values) != len(corpora):
            raise ValueError(f"{name} has {len(values)} entries for "
                             f"{len(corpora)} corpora")
    tokenizer = subwords.tf_tokenizer
    datasets = []
    for index, entry in enumerate(corpora):
        lines = corpus_lines(prepared_dir, entry, shuffle, seed, worker)
        if repeat:
            lines = lines.repeat()
        prefix = tf.constant(list(source_prefixes[index])
                             if source_prefixes else [], tf.int32)
        constants = {name: tf.constant(value, tf.int32) for name, value in
                     (corpus_features[index] if corpus_features else {}
                      ).items()}
        datasets.append(lines.map(
            _example_fn(tokenizer, prefix, constants),
            num_parallel_calls=tf.data.AUTOTUNE))
    weights = [float(entry["weight"]) for entry in corpora]
    if len(datasets) == 1:
        dataset = datasets[0]
    else:
        total = sum(weights)
        dataset = tf.data.Dataset.sample_from_datasets(
            datasets, [w / total for w in weights], seed=seed,
            stop_on_empty_dataset=False)
    if shuffle:
        dataset = dataset.shuffle(shuffle_buffer, seed=seed,
                                  reshuffle_each_iteration=True)
    dataset = _keep_fitting(dataset, max_length,
                            max(manifest["counts"]["kept"], MIN_MISSES))
    dataset = bucket_batches(dataset, max_tokens, max_length, pad_to_bucket,
                             bucket_width)
    if worker[1] > 1:  # already split by file above
        options = tf.data.Options()
        options.experimental_distribute.auto_shard_policy = (
            tf.data.experimental.AutoShardPolicy.OFF)
        dataset = dataset.with_options(options)
    return dataset


def _example_fn(tokenizer, prefix, constants):
    eos = tf.constant([EOS_ID], tf.int32)
    bos = tf.constant([BOS_ID], tf.int32)

    def example(line):
        source, target = _split_line(line)
        source_ids = tf.concat([prefix, tokenizer.tokenize(source)], 0)
        target_ids = tokenizer.tokenize(target)
        return {"source_ids": tf.concat([source_ids, eos], 0),
                "target_in_ids": tf.concat([bos, target_ids], 0),
                "labels": tf.concat([target_ids, eos], 0),
                **constants}

    return example


def _keep_fitting(dataset, max_length, max_misses):
    """Drops the pairs that do not fit `max_length`; fails (instead of
    filtering a repeated stream forever) after `max_misses` in a row."""
    message = (f"no sentence pair fits max_length={max_length} subwords in "
               f"{max_misses} pairs in a row; raise it (--set max_length=N)")

    def step(misses, example):
        fits = _fits(example, max_length)
        misses = tf.where(fits, tf.constant(0, tf.int64), misses + 1)
        check = tf.debugging.Assert(misses < max_misses, [message])
        with tf.control_dependencies([check]):
            misses = tf.identity(misses)
        return misses, (example, fits)

    dataset = dataset.scan(tf.constant(0, tf.int64), step)
    return dataset.filter(lambda example, fits: fits).map(
        lambda example, fits: example)


def _fits(example, max_length):
    """As `pipeline.kept_indices`: both sides (without EOS/BOS) non-empty
    and shorter than `max_length`."""
    source = tf.shape(example["source_ids"])[0] - 1
    target = tf.shape(example["labels"])[0] - 1
    return ((source > 0) & (source < max_length)
            & (target > 0) & (target < max_length))
