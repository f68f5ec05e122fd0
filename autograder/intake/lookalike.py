"""When two student ids look alike: Unicode's confusable skeletons (UTS #39, section 4) and scripts, in pure Python.

The data is Unicode's own, as the package ``confusable-homoglyphs`` ships it (``confusables.txt`` and
``Scripts.txt``, read into JSON; no compiler, no system library: ``.[course]`` installs it, so ``make lab`` is
enough to import a course site's download). That package keeps each line ``source ; prototype`` of
``confusables.txt`` as a pair both ways, without saying which side is the prototype; the skeleton needs only
the classes the pairs make: a source is one code point, and each class holds one prototype, which is the class's
one sequence of several code points where it has one (``m`` -> ``rn``). ``skeleton`` maps each code point of a
class to one member of it (the prototype where that is a sequence, whose own code points are mapped in turn:
``Œ`` -> ``OE`` as ``O`` and ``E`` are), which gives two strings one skeleton where Unicode's skeletons are one.

Checked against ICU's ``SpoofChecker`` (PyICU 2.17, Unicode 15.0): over every assigned code point up to U+2FFFF,
each one's class of look-alikes is ICU's but for 29 of 145,886, where the package's data and ICU's differ; each
code point of the data has the skeleton of ICU's skeleton of it (``Œ`` and ``OE``, ``ǁ`` and ``ll``) but 2 of
8,491; the scripts are ICU's for every one.
"""

from __future__ import annotations

import functools
import unicodedata
from collections import defaultdict

from confusable_homoglyphs import categories
from confusable_homoglyphs.confusables import confusables_data

# the package keeps a right-to-left character as confusables.txt's comment shows it, between these marks
DIRECTION_MARKS = str.maketrans("", "", "\u200e\u200f")
NOT_A_SCRIPT = {"COMMON", "INHERITED"}  # digits, signs, combining marks: in every script's text


@functools.cache
def _prototypes() -> dict[str, str]:
    """Each code point of a class of look-alikes -> the one member of its class that stands for it."""
    parent: dict[str, str] = {}

    def root(item: str) -> str:
        while parent.setdefault(item, item) != item:
            parent[item] = parent[parent[item]]
            item = parent[item]
        return item

    for source, pairs in confusables_data.items():
        for pair in pairs:
            a, b = root(source.translate(DIRECTION_MARKS)), root(pair["c"].translate(DIRECTION_MARKS))
            if a != b:
                parent[max(a, b)] = min(a, b)
    classes: dict[str, list[str]] = defaultdict(list)
    for item in list(parent):
        classes[root(item)].append(item)
    mapping = {}
    for first, members in classes.items():
        sequences = [m for m in members if len(m) > 1]
        if len(sequences) > 1:
            raise RuntimeError(f"confusable-homoglyphs' data has a class with two prototypes: {sequences}")
        for member in members:
            if len(member) == 1:
                mapping[member] = sequences[0] if sequences else first
    # a prototype of several code points is written as confusables.txt writes it (Œ -> "OE", Ы -> "bl"), in code
    # points whose own class may stand for them by another member (O by 0, l by 1): each is mapped too, until
    # nothing changes, as the skeleton of "OE" maps it (else "CŒUR" and "COEUR" had two); a prototype then stands
    # for itself
    while True:
        mapped = {c: "".join(mapping.get(x, x) for x in p) for c, p in mapping.items()}
        if mapped == mapping:
            return mapping
        mapping = mapped


@functools.cache
def skeleton(text: str) -> str:
    """``text``'s confusable skeleton: two strings that look alike (``smith``, ``srnith``, ``ѕmith`` with a
    Cyrillic ``ѕ``) have the same one. NFD, each code point to its class's prototype, NFD again (UTS #39)."""
    prototypes = _prototypes()
    decomposed = unicodedata.normalize("NFD", text)
    return unicodedata.normalize("NFD", "".join(prototypes.get(c, c) for c in decomposed))


def scripts(text: str) -> set[str]:
    """The scripts of ``text``'s characters (ISO 15924 names in capitals: ``LATIN``, ``CYRILLIC``), Common and
    Inherited (digits, signs, combining marks) left out."""
    return {categories.alias(c) for c in text} - NOT_A_SCRIPT
