"""Conformance of gnmt_tf.alignment.fast_align with the original fast_align.

The fixture (../shared/data/fast_align_reference, see its README.md) holds
the original tool's (clab/fast_align cab1e9a) alignments and stderr logs for
the first 2,000 pairs of Multi30k en-de train with `-d -o -v`, forward and
reverse, and atools' grow-diag-final-and of the two.
"""

import argparse
import pathlib
import re

import pytest

from gnmt_tf.alignment import cli, pharaoh, symmetrize
from gnmt_tf.alignment.fast_align import FastAlign

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
REFERENCE_DIR = REPO_ROOT.parent / "shared" / "data" / "fast_align_reference"
CORPUS = "multi30k_train_2k.tok.lc.en-de.txt"
DIRECTIONS = ("forward", "reverse")

_ITERATION = re.compile(r"ITERATION (\d+)")
_STEP = re.compile(r"\s*\d+\s+model al-feat: (\S+) \(tension=(\S+)\)")
_STAT = re.compile(r"\s*(log_e likelihood|posterior p0|posterior al-feat|"
                   r"final tension): (\S+)")


def parse_log(path):
    """One dict per EM iteration of a fast_align stderr log: the statistics
    it prints, plus `steps`, the `(tension, model al-feat)` of each tension
    gradient step."""
    iterations = []
    for line in path.read_text().splitlines():
        if _ITERATION.match(line):
            iterations.append({"steps": []})
        elif (match := _STEP.match(line)):
            iterations[-1]["steps"].append(
                (float(match.group(2)), float(match.group(1))))
        elif (match := _STAT.match(line)):
            iterations[-1][match.group(1)] = float(match.group(2))
    return iterations


def link_f1(ours, reference):
    matches = sum(len(set(a) & set(b)) for a, b in zip(ours, reference))
    total = sum(map(len, ours)) + sum(map(len, reference))
    return 2 * matches / total


@pytest.fixture(scope="module")
def reference_dir():
    if not (REFERENCE_DIR / CORPUS).exists():
        pytest.skip(f"fast_align reference fixture not found ({REFERENCE_DIR})")
    return REFERENCE_DIR


@pytest.fixture(scope="module")
def aligned(reference_dir):
    """Our `-d -o -v` aligner fitted in both directions, and its links."""
    pairs = list(pharaoh.read_corpus(reference_dir / CORPUS))
    result = {}
    for direction in DIRECTIONS:
        aligner = FastAlign(reverse=direction == "reverse",
                            favor_diagonal=True, optimize_tension=True,
                            variational_bayes=True)
        result[direction] = (aligner, aligner.fit_align(pairs))
    return result


def _read(reference_dir, name):
    return list(pharaoh.read_alignments(reference_dir / name))


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_tension_follows_the_original_log(direction, aligned, reference_dir):
    log = parse_log(reference_dir / f"{direction}.log")
    aligner, _ = aligned[direction]
    trained = log[:-1]  # the last iteration only aligns
    assert len(aligner.history_) == len(trained) == 4
    for ours, theirs in zip(aligner.history_, trained):
        assert len(ours["tension_steps"]) == len(theirs["steps"])
        for (tension, feature), (log_tension, log_feature) in zip(
                ours["tension_steps"], theirs["steps"]):
            assert tension == pytest.approx(log_tension, abs=1e-3)
            assert feature == pytest.approx(log_feature, rel=1e-4)
        if theirs["steps"]:
            assert ours["tension"] == pytest.approx(
                theirs["final tension"], abs=1e-3)
    assert aligner.tension_ == pytest.approx(log[-2]["final tension"],
                                             abs=1e-3)
    assert aligner.tension_ > 7.5  # not the 0.1 floor


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_iteration_statistics_match_the_original_log(direction, aligned,
                                                     reference_dir):
    log = parse_log(reference_dir / f"{direction}.log")
    aligner, _ = aligned[direction]
    for ours, theirs in zip(aligner.history_, log):
        # The log prints 6 significant digits.
        assert ours["log_likelihood"] == pytest.approx(
            theirs["log_e likelihood"], rel=1e-5)
        assert ours["posterior_p0"] == pytest.approx(
            theirs["posterior p0"], rel=1e-5)
        assert ours["posterior_feature"] == pytest.approx(
            theirs["posterior al-feat"], rel=1e-5)


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_links_match_the_original(direction, aligned, reference_dir):
    _, links = aligned[direction]
    reference = _read(reference_dir, f"{direction}.align")
    assert len(links) == len(reference) == 2000
    assert link_f1(links, reference) >= 0.999


def test_grow_diag_final_and_of_the_original_links_equals_atools(
        reference_dir):
    combined = symmetrize.symmetrize_corpus(
        _read(reference_dir, "forward.align"),
        _read(reference_dir, "reverse.align"), "grow-diag-final-and")
    expected = (reference_dir / "gdfa.align").read_text().splitlines()
    assert [pharaoh.format_alignment(links) for links in combined] == expected


def test_grow_diag_final_and_of_our_links(aligned, reference_dir):
    combined = symmetrize.symmetrize_corpus(
        aligned["forward"][1], aligned["reverse"][1], "grow-diag-final-and")
    assert link_f1(combined, _read(reference_dir, "gdfa.align")) >= 0.999


def test_align_command_matches_the_original(reference_dir, tmp_path):
    output = tmp_path / "forward.align"
    parser = argparse.ArgumentParser(prog="gnmt-tf")
    cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["align", "-i", str(reference_dir / CORPUS),
                              "-d", "-o", "-v", "--output", str(output)])
    assert args.func(args) == 0
    links = list(pharaoh.read_alignments(output))
    assert link_f1(links, _read(reference_dir, "forward.align")) >= 0.999
