"""Tests for gnmt_tf.data.multiway: directions, Multi30k/WMT22 loaders, dataset."""

import pathlib

import numpy as np
import pytest

from gnmt_tf.data import multiway as data
from gnmt_tf.models.task_space.config import TransformerConfig

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
WMT22_DIR = REPO_ROOT.parent / "shared" / "data" / "wmt22"
CONFIG = TransformerConfig.from_preset("transformer_tiny")


def test_parse_directions_all_is_twelve_ordered_pairs():
    pairs = data.parse_directions("all")
    assert len(pairs) == 12 == len(set(pairs))
    assert ("en", "de") in pairs and ("cs", "fr") in pairs
    assert all(s != t for s, t in pairs)


def test_parse_directions_list_and_pairs():
    assert data.parse_directions("en-de, en-fr") == [("en", "de"),
                                                     ("en", "fr")]
    assert data.parse_directions([("de", "cs"), "fr-en"]) == [
        ("de", "cs"), ("fr", "en")]


def test_parse_directions_zero_shot_exclusion():
    pairs = data.parse_directions("all-except:fr-cs,cs-fr")
    assert len(pairs) == 10
    assert ("fr", "cs") not in pairs and ("cs", "fr") not in pairs
    assert ("fr", "de") in pairs


@pytest.mark.parametrize("spec, message", [
    ("en-xx", "unknown language 'xx'"),
    ("ende", "not of the form src-tgt"),
    ("en-en", "into itself"),
    ("en-de,en-de", "duplicated"),
    ("", "no translation direction"),
    ("all-except:all", "excludes every direction"),
])
def test_parse_directions_errors(spec, message):
    with pytest.raises(ValueError, match=message):
        data.parse_directions(spec)


def test_load_multi30k_twelve_directions(multiway_dir):
    examples = data.load_multi30k(multiway_dir, "train", "all")
    counts = examples.directions()
    assert len(counts) == 12 and set(counts.values()) == {200}
    assert len(examples) == 2400
    assert set(examples.tags) == {("caption",)}
    # Line i of each language is aligned: en-de and en-fr share sources.
    en_de = [i for i, d in enumerate(zip(examples.src_langs,
                                         examples.tgt_langs))
             if d == ("en", "de")]
    en_fr = [i for i, d in enumerate(zip(examples.src_langs,
                                         examples.tgt_langs))
             if d == ("en", "fr")]
    assert [examples.sources[i] for i in en_de] == [
        examples.sources[i] for i in en_fr]
    assert examples.sources[en_de[0]].split()[0] in ("a", "dog", "cat", "man",
                                                     "runs", "sleeps", "red",
                                                     "big", "ball", "park")


def test_load_multi30k_subset_tags_and_max_lines(multiway_dir):
    examples = data.load_multi30k(multiway_dir, "val", "de-cs",
                                  tags=("caption", "formal"), max_lines=5)
    assert examples.directions() == {("de", "cs"): 5}
    assert examples.tags == [("caption", "formal")] * 5


def test_load_multi30k_missing_language(multiway_dir):
    assert data.split_languages(multiway_dir, "test_2017_flickr") == [
        "en", "de", "fr"]
    assert len(data.load_multi30k(multiway_dir, "test_2017_flickr",
                                  "en-fr")) == 10
    with pytest.raises(FileNotFoundError, match="no cs file"):
        data.load_multi30k(multiway_dir, "test_2017_flickr", "all")


def test_wmt22_loaders_on_synthetic_files(tmp_path):
    (tmp_path / "generaltest2022.de-fr.tsv").write_text(
        "domain\tdocid\tsegid\tsource\treference\n"
        "news\td1\t1\tHallo Welt\tBonjour le monde\n"
        "social\td2\t1\t#NAME# ist da\t#NAME# est là\n", encoding="utf-8")
    (tmp_path / "generaltest2022.en-de.src.en").write_text(
        "Hi\nBye\n", encoding="utf-8")
    (tmp_path / "generaltest2022.en-de.ref.A.de").write_text(
        "Hallo\nTschüss\n", encoding="utf-8")
    assert data.wmt22_directions(tmp_path) == [("de", "fr"), ("en", "de")]
    tsv = data.load_wmt22(tmp_path, "de-fr")
    assert tsv.tags == [("news",), ("social",)]
    assert tsv.targets[1] == "#NAME# est là"
    assert data.load_wmt22(tmp_path, "de-fr", domains=["social"]).sources == [
        "#NAME# ist da"]
    plain = data.load_wmt22(tmp_path, ("en", "de"))
    assert plain.directions() == {("en", "de"): 2} and plain.tags == [(), ()]
    with pytest.raises(FileNotFoundError, match="fr-de"):
        data.load_wmt22(tmp_path, "fr-de")
    (tmp_path / "generaltest2022.fr-de.tsv").write_text("news\tonly three\tx\n")
    with pytest.raises(ValueError, match="fr-de.tsv:1: expected 5"):
        data.load_wmt22(tmp_path, "fr-de")


@pytest.mark.skipif(not WMT22_DIR.is_dir(), reason="no shared WMT22 data")
def test_wmt22_real_files():
    examples = data.load_wmt22(WMT22_DIR, "de-fr")
    assert len(examples) > 1000
    assert {t for (t,) in examples.tags} == {"conversation", "ecommerce",
                                             "news", "social"}
    for tag_set in set(examples.tags):
        CONFIG.tag_vector(tag_set)  # every domain is a known scene tag
    assert len(data.load_wmt22(WMT22_DIR, "de-en")) > 1000


class FakeSubwords:
    """Characters as ids (a..z -> 10..35), `<2xx>` pieces at 4..7."""

    model_path = "fake.model"

    class _Processor:
        pieces = {f"<2{lang}>": 4 + i
                  for i, lang in enumerate(("en", "de", "fr", "cs"))}

        def PieceToId(self, piece):
            return self.pieces.get(piece, 1)

        def IdToPiece(self, i):
            return {v: k for k, v in self.pieces.items()}.get(i, "<unk>")

        def unk_id(self):
            return 1

    _sp = _Processor()

    def encode(self, sentences):
        return [[10 + (ord(c) % 26) for c in s if c != " "] for s in sentences]


def test_task_dataset_shapes_and_tasks(multiway_dir):
    examples = data.load_multi30k(multiway_dir, "train", "all", max_lines=30)
    encoded = data.encode_examples(examples, FakeSubwords(), CONFIG)
    dataset = data.make_task_dataset(encoded, max_tokens=128, max_length=40,
                                     seed=0)
    seen = set()
    for features, labels in dataset.take(20):
        batch = features["source_ids"].shape[0]
        assert set(features) == {"source_ids", "target_in_ids", "src_lang",
                                 "tgt_lang", "tags"}
        assert features["src_lang"].shape == (batch,)
        assert features["tgt_lang"].shape == (batch,)
        assert features["tags"].shape == (batch, CONFIG.num_tags)
        assert labels.shape == features["target_in_ids"].shape
        assert np.all(features["target_in_ids"][:, 0] == CONFIG.bos_id)
        np.testing.assert_array_equal(
            features["tags"][:, CONFIG.scene_tags.index("caption")], 1)
        assert np.all(features["src_lang"] != features["tgt_lang"])
        seen.update(zip(features["src_lang"].numpy().tolist(),
                        features["tgt_lang"].numpy().tolist()))
    assert len(seen) > 6  # batches mix directions


def test_small_shuffle_buffer_still_mixes_directions(multiway_dir):
    # Examples arrive grouped by direction: a buffer far smaller than the
    # corpus must not feed one direction after another.
    examples = data.load_multi30k(multiway_dir, "train", "all", max_lines=30)
    encoded = data.encode_examples(examples, FakeSubwords(), CONFIG)
    dataset = data.make_task_dataset(encoded, max_tokens=128, max_length=40,
                                     shuffle_buffer=8, seed=0)
    seen = set()
    for features, _ in dataset.take(5):
        seen.update(zip(features["src_lang"].numpy().tolist(),
                        features["tgt_lang"].numpy().tolist()))
    assert len(seen) >= 8, seen


def test_target_language_token_and_zero_shot(multiway_dir):
    examples = data.load_multi30k(multiway_dir, "train",
                                  "all-except:fr-cs,cs-fr", max_lines=10)
    assert len(examples.directions()) == 10
    encoded = data.encode_examples(examples, FakeSubwords(), CONFIG,
                                   use_target_language_token=True)
    for ids, tgt in zip(encoded.source_ids, encoded.tgt_lang):
        assert ids[0] == 4 + tgt
    pairs = set(zip(encoded.src_lang, encoded.tgt_lang))
    fr, cs = CONFIG.language_id("fr"), CONFIG.language_id("cs")
    assert (fr, cs) not in pairs and (cs, fr) not in pairs


def test_encode_examples_rejects_unknown_tag(multiway_dir):
    examples = data.load_multi30k(multiway_dir, "val", "en-de",
                                  tags=("poetry",))
    with pytest.raises(ValueError, match="unknown scene tag 'poetry'"):
        data.encode_examples(examples, FakeSubwords(), CONFIG)


def test_parse_tags():
    assert data.parse_tags("news, formal") == ("news", "formal")
    assert data.parse_tags("") == () and data.parse_tags(None) == ()
    assert data.parse_tags(["caption"]) == ("caption",)
