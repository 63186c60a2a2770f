"""Task-space training input from prepared shards (`gnmt-tf train
--data-config`).

The directions and scene tags come from the corpora of the prepared
directory's manifest (each corpus one direction; its `tags`, else the
run's); each example gets its corpus's `src_lang`, `tgt_lang` and `tags`
inputs (and, with `target_language_token`, the `<2xx>` source prefix) on
top of `gnmt_tf.data.shard_dataset`'s streaming batches.
"""

from gnmt_tf.data import prepare as prepare_lib
from gnmt_tf.data import multiway as data_lib


def corpus_directions(manifest) -> list:
    """The distinct `(src, tgt)` directions of the manifest's corpora, in
    order of first appearance."""
    pairs = []
    for entry in manifest["corpora"]:
        pair = (entry["src_lang"], entry["tgt_lang"])
        if pair not in pairs:
            pairs.append(pair)
    return pairs


def corpus_tags(entry, default_tags) -> tuple:
    """A corpus's own scene tags, else `default_tags`."""
    return tuple(entry.get("tags") or ()) or tuple(default_tags)


def check_manifest(manifest, config, default_tags):
    """Checks that the model `config` knows every language and tag of the
    corpora.

    Raises:
        ValueError: naming the corpus and what the config lacks.
    """
    for entry in manifest["corpora"]:
        for lang in (entry["src_lang"], entry["tgt_lang"]):
            if lang not in config.languages:
                raise ValueError(
                    f"corpus {entry['name']!r}: language {lang!r} is not one "
                    f"of the model's {list(config.languages)} (--set "
                    "languages=...)")
        try:
            config.tag_vector(corpus_tags(entry, default_tags))
        except ValueError as e:
            raise ValueError(f"corpus {entry['name']!r}: {e}") from None


def make_shard_task_dataset(prepared_dir, subwords, config, train_config,
                            default_tags, use_target_language_token=False,
                            worker=(0, 1)):
    """The mixed-direction training dataset of a prepared directory.

    Args:
        prepared_dir: str or Path. Written by `gnmt-tf data prepare`.
        subwords: `gnmt_tf.text.subword.Subwords`.
        config: `gnmt_tf.models.task_space.config.TransformerConfig`.
        train_config: `gnmt_tf.config.TrainConfig` (batching, shuffle, seed).
        default_tags: tags of corpora that declare none.
        use_target_language_token: prepend `<2tgt>` to every source.
        worker: `(index, count)` of this worker process: it reads its own
            shard files (`gnmt_tf.data.shard_dataset.corpus_lines`).

    Returns:
        A repeating dataset of `(features, labels)` as
        `gnmt_tf.data.multiway.make_task_dataset`'s.
    """
    from gnmt_tf.data.shard_dataset import shard_dataset

    manifest = prepare_lib.read_manifest(prepared_dir)
    check_manifest(manifest, config, default_tags)
    features, prefixes = [], []
    token_ids = (data_lib.target_language_token_ids(subwords,
                                                    config.languages)
                 if use_target_language_token else None)
    for entry in manifest["corpora"]:
        task = config.task_features(entry["src_lang"], entry["tgt_lang"],
                                    corpus_tags(entry, default_tags))
        features.append(task)
        prefixes.append([token_ids[task["tgt_lang"]]] if token_ids else [])
    return shard_dataset(
        prepared_dir, subwords, train_config.max_tokens,
        train_config.max_length, shuffle_buffer=train_config.shuffle_buffer,
        seed=train_config.seed, corpus_features=features,
        source_prefixes=prefixes, worker=worker, **train_config.bucketing())
