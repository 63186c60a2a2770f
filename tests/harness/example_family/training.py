"""Trains the example family's tiny model directory with `model.fit`."""

import dataclasses
import pathlib

import numpy as np
import tensorflow as tf
import tf_keras as keras

from example_family.model import ExampleGRU, ExampleGRUConfig
from gnmt_tf.model_dir import CHECKPOINT_DIR, VOCAB_FILE, write_config
from gnmt_tf.text.subword import Subwords, train_sentencepiece

MODEL_TYPE = "example_gru"  # the entry point's name


@dataclasses.dataclass
class ExampleTrainConfig:
    epochs: int = 60
    batch_size: int = 32
    learning_rate: float = 0.01


def _padded(rows):
    width = max(map(len, rows))
    return np.array([r + [0] * (width - len(r)) for r in rows], np.int32)


def train_example_model(model_dir, pairs, vocabulary_size=64,
                        train_config=ExampleTrainConfig()):
    """Writes a trained `example_gru` model directory for `pairs`
    (`[(source, target)]`): `spm.model`, `config.json`, a checkpoint."""
    model_dir = pathlib.Path(model_dir)
    vocabulary = train_sentencepiece(
        [s for pair in pairs for s in pair],
        model_dir / VOCAB_FILE[:-len(".model")], vocabulary_size)
    subwords = Subwords(vocabulary)
    config = ExampleGRUConfig(vocabulary_size=subwords.vocabulary_size)
    sources = subwords.encode([s for s, _ in pairs])
    targets = subwords.encode([t for _, t in pairs])
    features = {
        "source_ids": _padded([s + [config.eos_id] for s in sources]),
        "target_in_ids": _padded([[config.bos_id] + t for t in targets])}
    target_out = _padded([t + [config.eos_id] for t in targets])
    tf.random.set_seed(1)
    model = ExampleGRU(config)
    model.compile(optimizer=keras.optimizers.Adam(train_config.learning_rate),
                  loss=keras.losses.SparseCategoricalCrossentropy(
                      from_logits=True))
    model.fit(features, target_out, sample_weight=(target_out != 0) * 1.0,
              batch_size=train_config.batch_size, epochs=train_config.epochs,
              shuffle=True, verbose=0)
    write_config(model_dir, MODEL_TYPE, config, train_config)
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(model=model),
                                         model_dir / CHECKPOINT_DIR, 1)
    manager.save()
    return model_dir
