"""Code known by what it computes: a code object's fingerprint, the same wherever the code came from.

posref's functions compiled again from their source under another file name, rebuilt with ``code.replace``
(another file, name, qualified name or first line), with their docstrings removed or their local variables renamed
are still posref's code: their bytecode, constants and the global and attribute names they read are the same. A
fingerprint is a hash of exactly those (``fingerprint``), so ``posref.grading.watch`` recognises posref's code by
it, beside its identity. Left out: the file, the names of the code and of its local variables, line numbers, and a
function's docstring (the slot of its first constant).

A fingerprint that a student's own small helper could share by chance would mistake the student's code for posref's:
only code objects of at least ``MIN_INSTRUCTIONS`` instructions are known by their fingerprint (smaller ones, a
one-line formula, a comprehension or a lambda, by identity only: they hold nothing worth copying, and a textbook
formula written by a student is the same code, e.g. ALiBi's slopes ``[2.0 ** (-8.0 * h / n) for h in range(1, n +
1)]``). ``tests/grading/test_watch.py`` holds
that no function of the course's model solutions or of the test batteries' student implementations is taken for
posref's.
"""

from __future__ import annotations

import dis
import hashlib
import inspect
from types import CodeType

MIN_INSTRUCTIONS = 24
# the flags that say what a code object is (its arguments, a generator, a coroutine), not how it was compiled
_KIND_FLAGS = (
    inspect.CO_VARARGS
    | inspect.CO_VARKEYWORDS
    | inspect.CO_NESTED
    | inspect.CO_GENERATOR
    | inspect.CO_COROUTINE
    | inspect.CO_ITERABLE_COROUTINE
    | inspect.CO_ASYNC_GENERATOR
)
_CACHE: dict[int, tuple[CodeType, bytes]] = {}
_CACHE_SIZE = (
    50_000  # code objects remembered (a submission that compiles code in a loop must not fill the memory)
)


def _constant(value: object, out: list[bytes]) -> None:
    """``value`` as bytes that tell different constants apart (a nested code object by its fingerprint)."""
    if isinstance(value, CodeType):
        out.append(b"code:" + fingerprint(value))
    elif isinstance(value, tuple | frozenset):
        items = list(value) if isinstance(value, tuple) else sorted(value, key=repr)
        out.append(f"{type(value).__name__}:{len(items)}(".encode())
        for item in items:
            _constant(item, out)
        out.append(b")")
    else:
        out.append(f"{type(value).__name__}:{value!r}".encode())


def fingerprint(code: CodeType) -> bytes:
    """A 16-byte hash of what ``code`` computes (see the module's docstring), remembered per code object."""
    seen = _CACHE.get(id(code))
    if seen is not None and seen[0] is code:
        return seen[1]
    consts = list(code.co_consts)
    if consts and (consts[0] is None or isinstance(consts[0], str)):
        consts[0] = None  # a function's docstring, or None where it has none
    parts = [
        code.co_code,
        code.co_exceptiontable,
        "\0".join(code.co_names).encode(),
        (
            f"{code.co_argcount} {code.co_posonlyargcount} {code.co_kwonlyargcount} {len(code.co_cellvars)} "
            f"{len(code.co_freevars)} {code.co_flags & _KIND_FLAGS}"
        ).encode(),
    ]
    for value in consts:
        _constant(value, parts)
    digest = hashlib.blake2b(b"\1".join(parts), digest_size=16).digest()
    if len(_CACHE) >= _CACHE_SIZE:
        _CACHE.clear()
    _CACHE[id(code)] = (code, digest)
    return digest


def substantial(code: CodeType) -> bool:
    """Whether ``code`` has ``MIN_INSTRUCTIONS`` instructions or more (``dis`` leaves out the inline caches)."""
    return sum(1 for _ in dis.get_instructions(code)) >= MIN_INSTRUCTIONS
