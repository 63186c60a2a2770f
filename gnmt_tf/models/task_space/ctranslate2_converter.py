"""Converts a `TaskSpaceTransformer` to a CTranslate2 model for one task.

CTranslate2 (OpenNMT's C++ inference engine) runs pre-layer-norm Transformers
with `sqrt(d)`-scaled shared embeddings and concatenated sine/cosine position
encodings, which is exactly `TaskSpaceTransformer`'s architecture. The task
vector (direction + scene tags) is a constant added to every embedding of
the encoder (resp. decoder), so for ONE task it folds into the position
table: `encodings[p] = position_encoding(p) + task`. A converted model
therefore serves one task; convert once per task you serve (the weights are
shared in memory by the OS page cache only, not by CTranslate2).

Needs the optional `ctranslate2` package (`pip install 'gnmt-tf[bench]'`).

Example:
```python
converter = TaskSpaceCTranslate2Converter(model, subwords, "en", "fr",
                                          ["caption"])
converter.convert("ct2_en_fr", force=True)
translator = ctranslate2.Translator("ct2_en_fr", device="cpu")
```
"""

import numpy as np

try:
    import ctranslate2
    from ctranslate2.specs import transformer_spec
except ImportError as e:
    raise ImportError("converting to CTranslate2 needs ctranslate2: pip "
                      "install 'gnmt-tf[bench]'") from e


def _linear(spec, kernel, bias):
    """Our `[in, out]` kernel -> CTranslate2's `[out, in]` weight."""
    spec.weight = np.ascontiguousarray(np.asarray(kernel).T, np.float32)
    spec.bias = np.asarray(bias, np.float32)


def _heads_in(dense):
    """Q/K/V `EinsumDense` (kernel `[d, H, Dh]`) -> `([d, H*Dh], [H*Dh])`."""
    kernel, bias = (w.numpy() for w in (dense.kernel, dense.bias))
    return kernel.reshape(kernel.shape[0], -1), bias.reshape(-1)


def _layer_norm(spec, layer):
    spec.gamma = layer.gamma.numpy()
    spec.beta = layer.beta.numpy()


def _self_attention(spec, attention, norm):
    _layer_norm(spec.layer_norm, norm)
    parts = [_heads_in(d) for d in (attention._query_dense,
                                    attention._key_dense,
                                    attention._value_dense)]
    _linear(spec.linear[0], np.concatenate([k for k, _ in parts], axis=1),
            np.concatenate([b for _, b in parts]))
    _output(spec.linear[1], attention)


def _cross_attention(spec, attention, norm):
    _layer_norm(spec.layer_norm, norm)
    _linear(spec.linear[0], *_heads_in(attention._query_dense))
    parts = [_heads_in(d) for d in (attention._key_dense,
                                    attention._value_dense)]
    _linear(spec.linear[1], np.concatenate([k for k, _ in parts], axis=1),
            np.concatenate([b for _, b in parts]))
    _output(spec.linear[2], attention)


def _output(spec, attention):
    kernel = attention._output_dense.kernel.numpy()  # [H, Dh, d]
    _linear(spec, kernel.reshape(-1, kernel.shape[-1]),
            attention._output_dense.bias.numpy())


def _feed_forward(spec, layer):
    _layer_norm(spec.layer_norm, layer._ffn_norm)
    _linear(spec.linear_0, layer._ffn_inner.kernel.numpy(),
            layer._ffn_inner.bias.numpy())
    _linear(spec.linear_1, layer._ffn_outer.kernel.numpy(),
            layer._ffn_outer.bias.numpy())


class TaskSpaceCTranslate2Converter(ctranslate2.converters.Converter):
    """`ctranslate2.converters.Converter` for a `TaskSpaceTransformer`.

    Args:
        model: a built `TaskSpaceTransformer` (float32 weights).
        vocabulary: list of `V` token strings, or a
            `gnmt_tf.text.subword.Subwords` (its pieces). Ids `pad, unk,
            bos, eos` must be `<pad>`/`<unk>`/`<s>`/`</s>` (as the project's
            SentencePiece models have them).
        src_lang, tgt_lang, tags: the task folded into the model; required
            when `model.config.use_task_space`.
        max_positions: rows of the position tables: the longest source
            (with EOS) and output the converted model accepts.

    Use `convert(output_dir, quantization=None|"int8"|..., force=...)`.
    CTranslate2 adds no EOS to the source: pass the source tokens with
    `</s>` appended, as `gnmt_tf` does.
    """

    def __init__(self, model, vocabulary, src_lang=None, tgt_lang=None,
                 tags=(), max_positions=None):
        self.model = model
        if hasattr(vocabulary, "vocabulary_size"):
            sp = vocabulary._sp
            vocabulary = [sp.IdToPiece(i)
                          for i in range(vocabulary.vocabulary_size)]
        self.vocabulary = list(vocabulary)
        self.task = (src_lang, tgt_lang, tags)
        self.max_positions = max_positions or model.config.max_sequence_length

    def _task_vectors(self):
        import tensorflow as tf

        config = self.model.config
        if not config.use_task_space:
            return 0.0, 0.0
        src_lang, tgt_lang, tags = self.task
        if src_lang is None or tgt_lang is None:
            raise ValueError("src_lang and tgt_lang are required to convert "
                             "a model with use_task_space=True")
        features = config.task_features(src_lang, tgt_lang, tags)
        args = (tf.constant([features["src_lang"]]),
                tf.constant([features["tgt_lang"]]),
                tf.constant([features["tags"]]))
        return (self.model.encoder_task_encoding(*args)[0].numpy(),
                self.model.decoder_task_encoding(*args)[0].numpy())

    def _load(self):
        import tensorflow as tf

        model, config = self.model, self.model.config
        if len(self.vocabulary) != config.vocabulary_size:
            raise ValueError(f"{len(self.vocabulary)} tokens for a "
                             f"{config.vocabulary_size}-token model")
        specials = {config.pad_id: "<pad>", config.unk_id: "<unk>",
                    config.bos_id: "<s>", config.eos_id: "</s>"}
        vocabulary = list(self.vocabulary)
        for i, token in specials.items():
            vocabulary[i] = token
        spec = transformer_spec.TransformerSpec.from_config(
            config.num_layers, config.num_heads, pre_norm=True)
        spec.config.layer_norm_epsilon = config.layer_norm_epsilon
        positions = model.position_encoding(
            tf.range(self.max_positions)).numpy()
        encoder_task, decoder_task = self._task_vectors()
        embeddings = model.embedding.embeddings.numpy()

        encoder, decoder = spec.encoder, spec.decoder
        encoder.embeddings[0].weight = embeddings
        encoder.position_encodings.encodings = positions + encoder_task
        _layer_norm(encoder.layer_norm, model.encoder_norm)
        for layer_spec, layer in zip(encoder.layer, model.encoder_layers):
            _self_attention(layer_spec.self_attention, layer._attention,
                            layer._attention_norm)
            _feed_forward(layer_spec.ffn, layer)

        decoder.embeddings.weight = embeddings
        decoder.position_encodings.encodings = positions + decoder_task
        decoder.projection.weight = embeddings
        _layer_norm(decoder.layer_norm, model.decoder_norm)
        for layer_spec, layer in zip(decoder.layer, model.decoder_layers):
            _self_attention(layer_spec.self_attention, layer._attention,
                            layer._attention_norm)
            _cross_attention(layer_spec.attention, layer._cross_attention,
                             layer._cross_attention_norm)
            _feed_forward(layer_spec.ffn, layer)

        spec.register_source_vocabulary(vocabulary)
        spec.register_target_vocabulary(vocabulary)
        return spec
