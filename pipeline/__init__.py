"""The translation pipeline: documents in, documents out.

The text steps around a translation model, each in its own module and none
importing TensorFlow, so a client that talks to a server stays light:

- `pipeline.normalize`: Unicode NFC, whitespace and control characters,
  Moses punctuation normalisation, and what of it can be undone;
- `pipeline.language_id`: language identification (lingua) restricted to the
  languages a model knows;
- `pipeline.sentence_split`: sentence splitting (sentencex plus rules);
- `pipeline.documents`: plain-text and HTML/XHTML extraction into segments
  and reassembly from translated ones;
- `pipeline.cache`: an LRU cache of translations with a size limit in MB;
- `pipeline.markup`, `pipeline.key_information`, `pipeline.projection`,
  `pipeline.edits`: inline markup, entities and glossary terms taken out
  or checked before translation and put back at the aligned position,
  with repairs (`pipeline.glossary`, `pipeline.placeholders` and
  `pipeline.placeholder_mapping` hold the matching and mapping shared with
  `alignment/`);
- `pipeline.quality`: unsupervised quality estimation;
- `pipeline.limits`: sentences too long for the model refused before any
  work; `pipeline.model_calls`: the calls to the model, in chunks, with
  `pipeline.cancellation` checked between them (client gone, deadline);
- `pipeline.pipeline`: `Pipeline`, which chains them around any
  `translate(sentences, src_lang, tgt_lang, tags)` callable.

The modules are imported one by one (`from pipeline.normalize import
normalize`); this package imports none of them, so `gnmt-tf --help` does not
pay for lxml or lingua.
"""
