"""Tests for `gnmt-tf translate --shortlist / --replace-unk`."""

import argparse
import os
import subprocess
import sys

from gnmt_tf.cli.translate_backends import vocabulary_tools
from gnmt_tf.text.subword import SPECIAL_IDS, Subwords
from gnmt_tf.translator import SearchOptions, Translator

GNMT_TF = [sys.executable, "-m", "gnmt_tf.cli.main"]


def _run(args, stdin=b""):
    return subprocess.run(GNMT_TF + args, input=stdin, capture_output=True,
                          env=dict(os.environ), timeout=600)


def _table(path, subwords):
    pieces = [subwords.id_pieces([i])[0] for i in range(4, 12)]
    lines = [f"{pieces[0]}\t{pieces[1]}\t0.9", f"{pieces[0]}\t{pieces[2]}\t0.1",
             f"\t{pieces[3]}\t7", f"\t{pieces[4]}\t5"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return [subwords.piece_id(p) for p in pieces]


def test_flags_build_the_shortlist_and_replacer(tiny_model_dir, tmp_path):
    subwords = Subwords(tiny_model_dir / "spm.model")
    ids = _table(tmp_path / "lex.tsv", subwords)
    args = argparse.Namespace(shortlist=str(tmp_path / "lex.tsv"),
                              shortlist_top_k=1, shortlist_frequent=1,
                              replace_unk="copy")
    shortlist, replacer = vocabulary_tools(args, subwords)
    assert list(shortlist.base) == sorted(set(SPECIAL_IDS) | {ids[3]})
    assert list(shortlist.candidates[ids[0]]) == [ids[1]]
    assert replacer.dictionary is None
    args.replace_unk = str(tmp_path / "lex.tsv")
    _, replacer = vocabulary_tools(args, subwords)
    assert replacer.dictionary.best_translation(
        subwords.id_pieces([ids[0]])[0]) == subwords.id_pieces([ids[1]])[0]


def test_command_translates_as_the_api(tiny_model_dir, toy_corpus, tmp_path):
    subwords = Subwords(tiny_model_dir / "spm.model")
    _table(tmp_path / "lex.tsv", subwords)
    flags = ["--shortlist", str(tmp_path / "lex.tsv"), "--shortlist-top-k",
             "1", "--shortlist-frequent", "2", "--replace-unk", "copy"]
    sentences = [en for en, _ in toy_corpus[:3]]
    result = _run(["translate", "--model", str(tiny_model_dir),
                   "--beam-size", "2"] + flags,
                  "".join(s + "\n" for s in sentences).encode())
    assert result.returncode == 0, result.stderr.decode()
    translator = Translator.from_model_dir(tiny_model_dir)
    options = SearchOptions(beam_size=2)
    plain = translator.translate(sentences, options)
    translator.shortlist, translator.unk_replacer = vocabulary_tools(
        argparse.Namespace(shortlist=str(tmp_path / "lex.tsv"),
                           shortlist_top_k=1, shortlist_frequent=2,
                           replace_unk="copy"), translator.subwords)
    restricted = translator.translate(sentences, options)
    assert result.stdout.decode().splitlines() == restricted
    assert restricted != plain  # a 7-piece shortlist changes the output


def test_flags_need_a_model():
    result = _run(["translate", "--server", "localhost:1", "--shortlist",
                   "lex.tsv"])
    assert result.returncode == 2
    assert result.stderr.decode().strip().endswith("--shortlist needs --model")
