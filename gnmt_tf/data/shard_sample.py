"""A bounded random sample of the sentences of prepared shards, for
training a vocabulary without reading a whole corpus into memory."""

import gzip
import random

from gnmt_tf.data import prepare as prepare_lib

DEFAULT_MAX_SENTENCES = 1_000_000


def sample_sentences(prepared_dir, max_sentences=DEFAULT_MAX_SENTENCES,
                     seed=0, sides=(0, 1)) -> list:
    """Up to `max_sentences` sentences drawn uniformly from both sides of
    every shard (reservoir sampling: one pass, memory bounded by the
    sample).

    Args:
        prepared_dir: str or Path. Written by `gnmt-tf data prepare`.
        max_sentences: int >= 1. The sample's size bound.
        seed: int. Seeds the draw.
        sides: which TSV columns to sample (0 source, 1 target).

    Returns:
        list of str, in shard order for a sample that holds every sentence.
    """
    from gnmt_tf.checks import check_number

    check_number("max_sentences", max_sentences, integer=True, minimum=1)
    manifest = prepare_lib.read_manifest(prepared_dir)
    rng = random.Random(seed)
    sample, seen = [], 0
    for entry in manifest["corpora"]:
        for path in prepare_lib.shard_paths(prepared_dir, entry):
            with gzip.open(path, "rt", encoding="utf-8", newline="\n") as f:
                for line in f:
                    fields = line.rstrip("\n").split("\t")
                    for side in sides:
                        seen += 1
                        if len(sample) < max_sentences:
                            sample.append(fields[side])
                        else:
                            slot = rng.randrange(seen)
                            if slot < max_sentences:
                                sample[slot] = fields[side]
    return sample
