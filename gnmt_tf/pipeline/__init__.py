"""The translation pipeline: documents in, documents out.

The text steps around a translation model, each in its own module and none
importing TensorFlow, so a client that talks to a server stays light:

- `gnmt_tf.pipeline.normalize`: Unicode NFC, whitespace and control characters,
  Moses punctuation normalisation, and what of it can be undone;
- `gnmt_tf.pipeline.language_id`: language identification (lingua) restricted to the
  languages a model knows;
- `gnmt_tf.pipeline.sentence_split`: sentence splitting (sentencex plus rules);
- `gnmt_tf.pipeline.documents`: plain-text and HTML/XHTML extraction into segments
  and reassembly from translated ones;
- `gnmt_tf.pipeline.cache`: an LRU cache of translations with a size limit in MB;
- `gnmt_tf.pipeline.markup`, `gnmt_tf.pipeline.key_information`, `gnmt_tf.pipeline.projection`,
  `gnmt_tf.pipeline.edits`: inline markup, entities and glossary terms taken out
  or checked before translation and put back at the aligned position,
  with repairs (`gnmt_tf.pipeline.glossary`, `gnmt_tf.pipeline.placeholders` and
  `gnmt_tf.pipeline.placeholder_mapping` hold the matching and mapping shared with
  `alignment/`);
- `gnmt_tf.pipeline.quality`: unsupervised quality estimation;
- `gnmt_tf.pipeline.limits`: sentences too long for the model refused before any
  work; `gnmt_tf.pipeline.model_calls`: the calls to the model, in chunks, with
  `gnmt_tf.pipeline.cancellation` checked between them (client gone, deadline);
- `gnmt_tf.pipeline.pipeline`: `Pipeline`, which chains them around any
  `translate(sentences, src_lang, tgt_lang, tags)` callable.

The modules are imported one by one (`from gnmt_tf.pipeline.normalize import
normalize`); this package imports none of them, so `gnmt-tf --help` does not
pay for lxml or lingua.
"""
