"""The streaming dataset over prepared shards, and the vocabulary sample."""

import io

import numpy as np
import pytest

import gnmt_tf  # noqa: F401
import parallel_corpora as pc
from gnmt_tf.data.data_config import parse_data_config
from gnmt_tf.data.prepare import PrepareOptions, prepare
from gnmt_tf.data.shard_sample import sample_sentences
from gnmt_tf.text.subword import BOS_ID, EOS_ID, Subwords, train_sentencepiece

EN = ["A man rides a bike.", "Two cats sleep.", "A dog runs in the park.",
      "The child plays with a ball.", "Three women are talking.",
      "A girl reads a book under a tree.", "Two men play football.",
      "A woman sings on a stage tonight."]
DE = ["Ein Mann fährt Fahrrad.", "Zwei Katzen schlafen.",
      "Ein Hund rennt im Park.", "Das Kind spielt mit einem Ball.",
      "Drei Frauen unterhalten sich.", "Ein Mädchen liest unter einem Baum.",
      "Zwei Männer spielen Fußball.", "Eine Frau singt heute auf der Bühne."]


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """Two corpora (text en-de in 3 shards, TSV de-en) and a vocabulary."""
    base = tmp_path_factory.mktemp("shards")
    pc.write_text_pair(base, "a", list(zip(EN, DE)), gz=True)
    pc.write_tsv(base / "b.tsv", list(zip(DE[:5], EN[:5])))
    config = parse_data_config({"corpora": [
        {"name": "a", "src_lang": "en", "tgt_lang": "de", "format": "text",
         "source": "a.en.gz", "target": "a.de.gz", "weight": 3},
        {"name": "b", "src_lang": "de", "tgt_lang": "en", "format": "tsv",
         "path": "b.tsv"}]}, base)
    out = base / "out"
    prepare(config, out, PrepareOptions(shard_size=3), stream=io.StringIO())
    model = train_sentencepiece(EN + DE, base / "spm", 80)
    return out, Subwords(model)


def _examples(dataset):
    """(source ids, target ids, extra features) of every example, unpadded."""
    out = []
    for features, labels in dataset:
        features = {k: v.numpy() for k, v in features.items()}
        for i, label in enumerate(labels.numpy()):
            source = [t for t in features["source_ids"][i] if t]
            target = [t for t in label if t]
            assert source[-1] == EOS_ID and target[-1] == EOS_ID
            target_in = [t for t in features["target_in_ids"][i] if t]
            assert target_in == [BOS_ID] + target[:-1]
            extra = tuple(np.ravel(features[k][i]).tolist()
                          for k in sorted(features)
                          if k not in ("source_ids", "target_in_ids"))
            out.append((tuple(source[:-1]), tuple(target[:-1]), extra))
    return sorted(out)


def test_one_epoch_yields_the_prepared_pairs(prepared):
    from gnmt_tf.data.shard_dataset import shard_dataset

    out, subwords = prepared
    dataset = shard_dataset(out, subwords, max_tokens=64, max_length=32,
                            shuffle=True, shuffle_buffer=4, repeat=False,
                            seed=1)
    pairs = list(zip(EN, DE)) + list(zip(DE[:5], EN[:5]))
    expected = sorted((tuple(s), tuple(t), ()) for s, t in zip(
        subwords.encode([p[0] for p in pairs]),
        subwords.encode([p[1] for p in pairs])))
    assert _examples(dataset) == expected


def test_corpus_features_prefixes_and_length_filter(prepared):
    from gnmt_tf.data.shard_dataset import shard_dataset

    out, subwords = prepared
    lengths = sorted(max(len(s) + 1, len(t)) for s, t in zip(
        subwords.encode(EN + DE[:5]), subwords.encode(DE + EN[:5])))
    max_length = lengths[len(lengths) // 2] + 1  # keeps about half
    dataset = shard_dataset(
        out, subwords, max_tokens=64, max_length=max_length, shuffle=False,
        repeat=False, corpus_features=[{"tgt_lang": 1, "tags": [1, 0]},
                                       {"tgt_lang": 0, "tags": [0, 1]}],
        source_prefixes=[[7], [9]])
    pairs = ([(s, t, 7, ([1, 0], [1])) for s, t in zip(EN, DE)]
             + [(s, t, 9, ([0, 1], [0])) for s, t in zip(DE[:5], EN[:5])])
    expected = []
    for s, t, prefix, extra in pairs:
        source = [prefix] + subwords.encode([s])[0]
        target = subwords.encode([t])[0]
        if len(source) < max_length and len(target) < max_length:
            expected.append((tuple(source), tuple(target), extra))
    assert 0 < len(expected) < len(pairs)  # the filter drops some
    assert _examples(dataset) == sorted(expected)


def test_repeated_dataset_mixes_by_weight(prepared):
    from gnmt_tf.data.shard_dataset import shard_dataset

    out, subwords = prepared
    dataset = shard_dataset(
        out, subwords, max_tokens=64, max_length=32, shuffle_buffer=8,
        seed=3, corpus_features=[{"corpus": 0}, {"corpus": 1}])
    seen = []
    for features, _ in dataset.take(40):
        seen += features["corpus"].numpy().tolist()
    share = np.mean(np.array(seen) == 0)
    assert 0.6 < share < 0.9  # weights 3:1


def test_wrong_number_of_corpus_features(prepared):
    from gnmt_tf.data.shard_dataset import shard_dataset

    out, subwords = prepared
    with pytest.raises(ValueError, match="corpus_features has 1 entries "
                                         "for 2 corpora"):
        shard_dataset(out, subwords, 64, 32, corpus_features=[{}])


def test_sample_sentences_is_bounded(prepared):
    out, _ = prepared
    everything = sample_sentences(out, 1000)
    assert sorted(everything) == sorted(EN + DE + DE[:5] + EN[:5])
    sample = sample_sentences(out, 5, seed=2)
    assert len(sample) == 5 and set(sample) <= set(everything)
    assert sample != sample_sentences(out, 5, seed=3)


def test_fails_instead_of_filtering_forever(prepared, monkeypatch):
    import tensorflow as tf

    from gnmt_tf.data import shard_dataset as shard_lib

    out, subwords = prepared
    monkeypatch.setattr(shard_lib, "MIN_MISSES", 50)
    dataset = shard_lib.shard_dataset(out, subwords, max_tokens=64,
                                      max_length=2)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="no sentence pair fits max_length=2"):
        next(iter(dataset))


def _expected_pairs(subwords):
    pairs = list(zip(EN, DE)) + list(zip(DE[:5], EN[:5]))
    return sorted((tuple(s), tuple(t), ()) for s, t in zip(
        subwords.encode([p[0] for p in pairs]),
        subwords.encode([p[1] for p in pairs])))


def test_workers_read_disjoint_shards_that_make_the_corpus(prepared):
    """Two workers' epochs: each pair once, in exactly one worker."""
    from gnmt_tf.data.shard_dataset import shard_dataset

    out, subwords = prepared
    parts = [_examples(shard_dataset(
        out, subwords, max_tokens=64, max_length=32, shuffle=True,
        shuffle_buffer=4, repeat=False, seed=index, worker=(index, 2)))
        for index in range(2)]
    assert all(parts)
    assert sorted(parts[0] + parts[1]) == _expected_pairs(subwords)


def test_more_workers_than_shards_is_an_error(prepared):
    from gnmt_tf.data.shard_dataset import shard_dataset

    out, subwords = prepared
    with pytest.raises(ValueError, match="corpus b has 2 shard.s. for 3 "
                                         "workers"):
        shard_dataset(out, subwords, max_tokens=64, max_length=32,
                      worker=(0, 3))


# One worker process of a real MultiWorkerMirroredStrategy: its place from
# the strategy, then one epoch of its part, written as JSON to argv[3].
_WORKER = """
import json, sys

import tensorflow as tf

from gnmt_tf.data.shard_dataset import shard_dataset
from gnmt_tf.text.subword import Subwords
from gnmt_tf.training import workers

prepared, spm, out = sys.argv[1:4]
strategy = tf.distribute.MultiWorkerMirroredStrategy()
position = workers.data_position(strategy)
dataset = shard_dataset(prepared, Subwords(spm), max_tokens=64, max_length=32,
                        repeat=False, worker=position)
pairs = []
for features, labels in dataset:
    for source, target in zip(features["source_ids"].numpy().tolist(),
                              labels.numpy().tolist()):
        pairs.append([[t for t in source if t], [t for t in target if t]])
with open(out, "w") as f:
    json.dump({"position": list(position), "pairs": pairs}, f)
"""


def test_two_worker_processes_split_the_corpus(prepared, tmp_path):
    import json
    import os
    import subprocess
    import sys

    from tests.gnmt_tf.training.multi_worker_test import ROOT, _free_ports

    out, subwords = prepared
    cluster = {"worker": [f"127.0.0.1:{p}" for p in _free_ports(2)]}
    procs = []
    for index in range(2):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
                       filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
                   TF_CONFIG=json.dumps({"cluster": cluster, "task": {
                       "type": "worker", "index": index}}),
                   CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="2")
        procs.append(subprocess.Popen(
            [sys.executable, "-c", _WORKER, str(out),
             str(subwords.model_path), str(tmp_path / f"w{index}.json")],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True))
    try:
        outputs = [proc.communicate(timeout=300)[0] for proc in procs]
    finally:
        for proc in procs:
            proc.kill()
    for proc, output in zip(procs, outputs):
        assert proc.returncode == 0, output[-3000:]
    results = [json.loads((tmp_path / f"w{i}.json").read_text())
               for i in range(2)]
    assert [r["position"] for r in results] == [[0, 2], [1, 2]]
    seen = sorted((tuple(s[:-1]), tuple(t[:-1]), ())
                  for r in results for s, t in r["pairs"])
    assert all(r["pairs"] for r in results)
    assert seen == _expected_pairs(subwords)
