"""Symmetrisation of two directional word alignments.

Implements the heuristics of Koehn et al. (2003) as the `atools` program of
fast_align/cdec runs them: `intersect`, `union`, `grow-diag`,
`grow-diag-final` and `grow-diag-final-and`. Both inputs are link sets in
source-target order (`i-j`), which is what `fast_align` prints in either
direction. Results are sorted lists of `(i, j)` links.

Example:

    >>> symmetrize([(0, 0), (1, 1)], [(0, 0), (1, 2)], "grow-diag-final-and")
    [(0, 0), (1, 1), (1, 2)]
"""

from typing import Callable, Dict, Iterable, List, Set, Tuple

Link = Tuple[int, int]


def intersect(forward: Iterable[Link], reverse: Iterable[Link]) -> List[Link]:
    """Links present in both alignments (high precision)."""
    return sorted(set(forward) & set(reverse))


def union(forward: Iterable[Link], reverse: Iterable[Link]) -> List[Link]:
    """Links present in either alignment (high recall)."""
    return sorted(set(forward) | set(reverse))


class _Refiner:
    """Grows the intersection towards the union, as atools' RefineCommand."""

    def __init__(self, forward: Set[Link], reverse: Set[Link]):
        self.links: Set[Link] = set()
        self.rows: Set[int] = set()
        self.cols: Set[int] = set()
        for link in sorted(forward & reverse):
            self.add(link)

    def add(self, link: Link) -> None:
        self.links.add(link)
        self.rows.add(link[0])
        self.cols.add(link[1])

    def one_or_both_unaligned(self, link: Link) -> bool:
        return link[0] not in self.rows or link[1] not in self.cols

    def neither_aligned(self, link: Link) -> bool:
        return link[0] not in self.rows and link[1] not in self.cols

    def grow_diag(self, candidates: Set[Link]) -> None:
        # Repeated passes in (i, j) order; a link added early in a pass is
        # already visible to the later candidates of the same pass.
        links, rows, cols = self.links, self.rows, self.cols
        pending = sorted(candidates - links)
        while pending:
            remaining = []
            for i, j in pending:
                if (i not in rows or j not in cols) and (
                        (i - 1, j) in links or (i + 1, j) in links
                        or (i, j - 1) in links or (i, j + 1) in links
                        or (i - 1, j - 1) in links or (i - 1, j + 1) in links
                        or (i + 1, j - 1) in links or (i + 1, j + 1) in links):
                    links.add((i, j))
                    rows.add(i)
                    cols.add(j)
                else:
                    remaining.append((i, j))
            if len(remaining) == len(pending):
                break
            pending = remaining

    def final(self, candidates: Set[Link],
              accept: Callable[[Link], bool]) -> None:
        for link in sorted(candidates):
            if link not in self.links and accept(link):
                self.add(link)


def grow_diag(forward: Iterable[Link], reverse: Iterable[Link]) -> List[Link]:
    """Intersection grown with neighbouring (incl. diagonal) union links."""
    forward, reverse = set(forward), set(reverse)
    refiner = _Refiner(forward, reverse)
    refiner.grow_diag(forward | reverse)
    return sorted(refiner.links)


def grow_diag_final(forward: Iterable[Link],
                    reverse: Iterable[Link]) -> List[Link]:
    """`grow_diag`, then links of either direction with an unaligned end."""
    forward, reverse = set(forward), set(reverse)
    refiner = _Refiner(forward, reverse)
    refiner.grow_diag(forward | reverse)
    refiner.final(forward, refiner.one_or_both_unaligned)
    refiner.final(reverse, refiner.one_or_both_unaligned)
    return sorted(refiner.links)


def grow_diag_final_and(forward: Iterable[Link],
                        reverse: Iterable[Link]) -> List[Link]:
    """`grow_diag`, then links of either direction joining two unaligned
    words."""
    forward, reverse = set(forward), set(reverse)
    refiner = _Refiner(forward, reverse)
    refiner.grow_diag(forward | reverse)
    refiner.final(forward, refiner.neither_aligned)
    refiner.final(reverse, refiner.neither_aligned)
    return sorted(refiner.links)


METHODS: Dict[str, Callable[[Iterable[Link], Iterable[Link]], List[Link]]] = {
    "intersect": intersect,
    "union": union,
    "grow-diag": grow_diag,
    "grow-diag-final": grow_diag_final,
    "grow-diag-final-and": grow_diag_final_and,
}


def symmetrize(forward: Iterable[Link], reverse: Iterable[Link],
               method: str = "grow-diag-final-and") -> List[Link]:
    """Combines a forward and a reverse alignment of one sentence pair.

    Args:
        forward: iterable of `(i, j)` links from the source-to-target run.
        reverse: iterable of `(i, j)` links from the reverse (`-r`) run, also
            in source-target order.
        method: str. One of `METHODS`.
    """
    if method not in METHODS:
        raise ValueError(f"unknown symmetrization method {method!r}; "
                         f"choose from {', '.join(METHODS)}")
    return METHODS[method](forward, reverse)


def symmetrize_corpus(forward: Iterable[Iterable[Link]],
                      reverse: Iterable[Iterable[Link]],
                      method: str = "grow-diag-final-and") -> List[List[Link]]:
    """Symmetrises two aligned lists of per-sentence link sets."""
    forward, reverse = list(forward), list(reverse)
    if len(forward) != len(reverse):
        raise ValueError(f"mismatched number of sentences: {len(forward)} "
                         f"forward vs {len(reverse)} reverse alignments")
    if method not in METHODS:
        raise ValueError(f"unknown symmetrization method {method!r}; "
                         f"choose from {', '.join(METHODS)}")
    combine = METHODS[method]
    return [combine(f, r) for f, r in zip(forward, reverse)]
