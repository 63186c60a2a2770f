import numpy as np

from gnmt_tf.data.datasets import bucket_boundaries, filter_pairs, make_dataset
from gnmt_tf.text.subword import BOS_ID, EOS_ID


def _ids(rng, n, lo, hi):
    return [list(rng.integers(4, 50, size=rng.integers(lo, hi))) for _ in range(n)]


def test_batches_have_special_tokens_and_token_budget():
    rng = np.random.default_rng(0)
    src, tgt = _ids(rng, 200, 1, 30), _ids(rng, 200, 1, 30)
    dataset = make_dataset(src, tgt, max_tokens=128, max_length=40, shuffle=False,
                           repeat=False)
    seen = 0
    for features, labels in dataset:
        source, target_in = features["source_ids"].numpy(), features["target_in_ids"].numpy()
        labels = labels.numpy()
        assert target_in.shape == labels.shape
        assert (target_in[:, 0] == BOS_ID).all()
        # Shifted by one: target_in[t+1] == labels[t] wherever both are real.
        inner = labels[:, :-1] != 0
        assert (target_in[:, 1:][inner & (target_in[:, 1:] != 0)] ==
                labels[:, :-1][inner & (target_in[:, 1:] != 0)]).all()
        lengths = (labels != 0).sum(1)
        assert (labels[np.arange(len(labels)), lengths - 1] == EOS_ID).all()
        assert (source[np.arange(len(source)), (source != 0).sum(1) - 1] == EOS_ID).all()
        # Token-based batching: the padded batch stays near the budget.
        assert labels.shape[0] * max(labels.shape[1], source.shape[1]) <= 2 * 128
        seen += len(labels)
    assert seen == len(filter_pairs(src, tgt, 40)[0])


def test_length_filter_drops_long_and_empty():
    src = [[5] * 3, [], [5] * 50, [5] * 4]
    tgt = [[6] * 3, [6], [6] * 2, [6] * 60]
    kept_src, _ = filter_pairs(src, tgt, max_length=10)
    assert kept_src == [[5] * 3]


def test_bucket_boundaries_increase_to_max():
    bounds = bucket_boundaries(64)
    assert bounds == sorted(set(bounds)) and bounds[-1] == 65


def test_pad_to_bucket_gives_one_shape_per_bucket_and_the_same_tokens():
    rng = np.random.default_rng(1)
    src, tgt = _ids(rng, 300, 1, 30), _ids(rng, 300, 1, 30)
    padded = make_dataset(src, tgt, max_tokens=128, max_length=40,
                          shuffle=False, repeat=False, pad_to_bucket=True)
    plain = make_dataset(src, tgt, max_tokens=128, max_length=40,
                         shuffle=False, repeat=False)
    widths = {b - 1 for b in bucket_boundaries(41)}
    shapes, padded_labels = set(), []
    for features, labels in padded:
        source, labels = features["source_ids"].numpy(), labels.numpy()
        # Source and target are padded to the same bucket width.
        assert source.shape[1] == labels.shape[1] in widths
        shapes.add(labels.shape)
        padded_labels.extend(tuple(row[row != 0]) for row in labels)
    # One shape per (bucket, full or last batch), whatever the lengths.
    assert len(shapes) <= 2 * len(widths)
    plain_labels = [tuple(row[row != 0]) for _, labels in plain
                    for row in labels.numpy()]
    assert sorted(padded_labels) == sorted(plain_labels)


def test_width_one_buckets_batch_pairs_of_one_longer_side_and_lose_none():
    rng = np.random.default_rng(2)
    src, tgt = _ids(rng, 300, 1, 30), _ids(rng, 300, 1, 30)
    assert bucket_boundaries(10, width=1) == list(range(2, 10)) + [11]
    assert bucket_boundaries(10, width=3) == [4, 7, 11]
    narrow = make_dataset(src, tgt, max_tokens=128, max_length=40,
                          shuffle=False, repeat=False, bucket_width=1)
    wide = make_dataset(src, tgt, max_tokens=128, max_length=40,
                        shuffle=False, repeat=False)
    narrow_labels, narrow_padding, wide_padding = [], 0, 0
    for features, labels in narrow:
        source, labels = features["source_ids"].numpy(), labels.numpy()
        longer = np.maximum((source != 0).sum(1), (labels != 0).sum(1))
        assert len(set(longer)) == 1
        assert len(labels) * longer[0] <= 128
        narrow_padding += (labels == 0).sum()
        narrow_labels.extend(tuple(row[row != 0]) for row in labels)
    for _, labels in wide:
        wide_padding += (labels.numpy() == 0).sum()
    assert sorted(narrow_labels) == sorted(
        tuple(row[row != 0]) for _, labels in wide for row in labels.numpy())
    assert narrow_padding < wide_padding
