"""Toy step functions and a brute-force reference search for decoding tests."""

import itertools

import numpy as np
import pytest

import gnmt_tf  # noqa: F401

import tensorflow as tf

END_ID = 1


class ToyModel:
    """A history-dependent toy decoder over a small vocabulary.

    Log-probabilities depend on (sentence, step, token before the previous
    one, previous token), so they depend on the hypothesis' history through
    the state; attention depends on (sentence, step, previous token) and on a
    per-sentence source mask kept in the state (`memory [N, S]`). Both are
    random tables; `sharpness` scales the logits (peakier distributions).
    """

    def __init__(self, seed, source_lengths, vocab_size=5, num_steps=4,
                 source_size=4, sharpness=1.0):
        rng = np.random.default_rng(seed)
        self.source_lengths = np.asarray(source_lengths, np.int32)
        batch = len(self.source_lengths)
        v, t, s = vocab_size, num_steps, source_size
        logits = rng.normal(size=[batch, t, v, v, v]) * sharpness
        logits -= logits.max(-1, keepdims=True)
        self.log_probs = (logits - np.log(np.exp(logits).sum(-1,
                          keepdims=True))).astype(np.float32)
        self.raw_attention = np.exp(rng.normal(size=[batch, t, v, s])
                                    ).astype(np.float32)
        self.memory = (np.arange(s)[None] < self.source_lengths[:, None]
                       ).astype(np.float32)                           # [B, S]
        self.vocab_size, self.num_steps, self.source_size = v, t, s

    def initial_state(self, start_ids, sentences=None):
        """State `[B, ...]` for the given sentences (default: all, in order)."""
        if sentences is None:
            sentences = list(range(len(self.source_lengths)))
        start_ids = tf.constant(start_ids, tf.int32)
        return {"sentence": tf.constant(sentences, tf.int32),
                "step": tf.zeros_like(start_ids),
                "prev": start_ids,
                "memory": tf.constant(self.memory[sentences])}

    def attention(self, sentence, step, prev):
        """NumPy attention for one position; `[S]`."""
        raw = self.raw_attention[sentence, min(step, self.num_steps - 1), prev]
        raw = raw * self.memory[sentence]
        return raw / raw.sum()

    def step_fn(self, ids, state):
        step = tf.minimum(state["step"], self.num_steps - 1)
        log_probs = tf.gather_nd(self.log_probs, tf.stack(
            [state["sentence"], step, state["prev"], ids], axis=1))
        raw = tf.gather_nd(self.raw_attention, tf.stack(
            [state["sentence"], step, ids], axis=1)) * state["memory"]
        attention = raw / tf.reduce_sum(raw, axis=1, keepdims=True)
        new_state = dict(state, step=state["step"] + 1, prev=ids)
        return log_probs, attention, new_state

    def step_fn_without_attention(self, ids, state):
        log_probs, _, new_state = self.step_fn(ids, state)
        return log_probs, None, new_state

    def brute_force(self, sentence, start_id, max_length, alpha, beta):
        """Every hypothesis of one sentence with its GNMT score, best first.

        Returns a list of dicts with `ids` (tuple), `score`, `log_prob` and
        `attention [len, S]`, computed in float64.
        """
        valid = self.memory[sentence] > 0
        results = []
        for length in range(1, max_length + 1):
            for ids in itertools.product(range(self.vocab_size),
                                         repeat=length):
                if END_ID in ids[:-1] or (length < max_length
                                          and ids[-1] != END_ID):
                    continue
                prev2 = prev = start_id
                log_prob, rows = 0.0, []
                for step, token in enumerate(ids):
                    rows.append(self.attention(sentence, step, prev))
                    log_prob += float(self.log_probs[
                        sentence, min(step, self.num_steps - 1), prev2, prev,
                        token])
                    prev2, prev = prev, token
                coverage = np.sum(rows, axis=0)
                cp = beta * np.sum(np.log(np.maximum(
                    np.minimum(coverage, 1.0), 1e-10))[valid])
                score = log_prob / ((5.0 + length) / 6.0) ** alpha + cp
                results.append({"ids": ids, "score": score,
                                "log_prob": log_prob,
                                "attention": np.array(rows)})
        return sorted(results, key=lambda r: -r["score"])


@pytest.fixture
def toy_model():
    """Factory: `toy_model(seed, source_lengths, **kwargs) -> ToyModel`."""
    return ToyModel


@pytest.fixture
def end_id():
    return END_ID
