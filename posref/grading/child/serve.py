"""The child's end of the protocol: ``serve`` runs in the score of record's child (sandboxed, started by
``remote.Child`` as ``from posref.grading.child.serve import serve; serve(...)``, or forked by ``forkserver``).

It runs the answer cells it is sent in one namespace, says which cell it is running and what each raised, then
answers the grader's calls: a call's arguments, its result as plain data and what it changed in place in its tensor
arguments; a timed chain through the shared buffer (``rounds.run_chain_here``); what the checker's rule forbids that
ran during the call (``watch``). Everything here runs beside student code, which can patch it: the grader trusts
nothing it says (``remote``, ``plain_data``). It writes its frames through the module ``framing`` (looked up at each
send), the frames the grader reads.
"""

from __future__ import annotations

import io
import linecache
import mmap
import os
from typing import Any

import torch

from posref.grading import rules, watch
from posref.grading.child import framing, rounds
from posref.grading.child.plain_data import from_wire, plain, tensor_arguments
from posref.grading.child.scratch import write_files
from posref.grading.difference import same_values
from posref.grading.frames import where_it_raised
from posref.grading.report import error_text
from posref.grading.watch import Ran
from posref.i18n import _


def serve(read_fd: int, write_fd: int, shared_fd: int | None = None) -> None:
    """The child's loop: run the answer cells it is sent, then answer calls (and timed rounds, through the buffer
    ``shared_fd``) until its input closes."""
    torch.set_num_threads(1)
    shared = None if shared_fd is None else mmap.mmap(shared_fd, os.fstat(shared_fd).st_size)
    watch.index()  # posref's code as imported, before any student code can put something else under its names

    def send(obj: Any) -> None:
        framing.write_all(write_fd, framing.encode(obj))

    def receive() -> Any:
        (n,) = framing.HEADER.unpack(framing.read_exact(read_fd, framing.HEADER.size, None))
        return torch.load(io.BytesIO(framing.read_exact(read_fd, n, None)), weights_only=True)

    namespace: dict[str, Any] = {"__name__": "__main__"}
    program = receive()
    write_files(program.get("files", ()))
    errors = {}
    for index, source in program["cells"]:
        send({"event": "cell", "index": index})
        name = f"<cell {index}>"
        lines = source.splitlines(keepends=True)
        linecache.cache[name] = (len(source), None, lines, name)  # lines in messages
        try:
            exec(compile(source, name, "exec"), namespace)
        except BaseException as err:  # noqa: BLE001  (a cell's SystemExit or KeyboardInterrupt is its own failure)
            errors[index] = error_text(err)
    names = sorted(k for k, v in namespace.items() if callable(v) and not k.startswith("__"))
    send({"event": "ready", "names": names, "errors": errors})
    while True:
        try:
            request = receive()
        except EOFError:
            return
        name = request.get("call", request.get("chain"))
        fn = namespace.get(name)
        ran = Ran()  # what the checker's rule forbids that ran during the call (posref.grading.watch)
        forbidden = rules.watch_target(request["watch"]) if type(request.get("watch")) is str else None
        try:
            if fn is None:
                raise NameError(
                    _("name {name} is not defined (did the cell that defines it run?)").format(
                        name=repr(name)
                    )
                )
            if "chain" in request:
                send(rounds.run_chain_here(fn, request, shared))
                continue
            args, kwargs = from_wire(request["args"]), from_wire(request["kwargs"])
            given = tensor_arguments(args, kwargs)
            before = [value.clone() for _, value in given]
            with watch.watching(forbidden, namespace) as ran:
                value = fn(*args, **kwargs)
            result = {"ok": plain(value)}
            # what the call changed in place travels back, so the grader sees it as if the call had been local
            changed = {
                where: value.detach()
                for (where, value), old in zip(given, before, strict=True)
                if not same_values(old, value)
            }
            if changed:
                result["changed"] = changed
        except BaseException as err:  # noqa: BLE001
            # the student's own line (their cells' sources are in linecache), never a path of this machine
            # the names of its exception's classes, so that the grader can tell an IndexError from a ValueError
            result = {
                "error": error_text(err) + where_it_raised(err),
                "types": [c.__name__ for c in type(err).__mro__],
            }
        if ran:
            result["ran"], result["through"] = list(ran), dict(ran.through)
        send(result)
