"""``apply_rope`` answers that compute in a helper process, so that the CPU they spend is not their own process's: the
battery of ``test_speed_of_record.py`` (issue 37.4). Each runs the slow loop of ``speed_submissions.py`` (one position
at a time, 71-108x the reference, budget 12x) in a helper that a thread keeps ready between rounds, right in every
call, and ends the helper in the call that finds the round over (it reads the grader's stop byte): a helper that is
gone when the round is measured took its CPU time with it. The file is one answer cell, run after
``tests/grading/student_impls.py`` (whose functions it uses) in the grader's child, as the student's code."""

import mmap
import os
import pickle
import sys
import threading
import time

import torch

# inputs and results travel through memory shared with every process forked after this cell, as torch views of it
_memory = mmap.mmap(-1, 16 * 2**20)
_bytes = torch.frombuffer(_memory, dtype=torch.uint8)
_RESULT = 8 * 2**20  # where a result starts


def _put(tensors, at=0):
    """The specs of ``tensors`` in the shared memory, copied there from byte ``at`` unless they are there already
    (a round's next input is the previous output)."""
    specs = []
    for t in tensors:
        offset = t.data_ptr() - _bytes.data_ptr()
        if t.is_contiguous() and 0 <= offset < _bytes.numel():
            specs.append((offset, tuple(t.shape), t.dtype))
            continue
        flat = t.contiguous().view(-1).view(torch.uint8)
        _bytes[at : at + flat.numel()].copy_(flat)
        specs.append((at, tuple(t.shape), t.dtype))
        at += flat.numel()
    return specs


def _get(at, shape, dtype):
    """The tensor at byte ``at`` of the shared memory: a view of it, no copy."""
    return _bytes[at:].view(dtype)[: torch.Size(shape).numel()].view(shape)


def _loop(x, cos, sin, layout):
    """Correct but slow: one position at a time (``speed_submissions._loop``)."""
    out = torch.empty_like(x)
    for p in range(x.shape[-2]):
        out[..., p : p + 1, :] = apply_rope_rotate_half(  # noqa: F821  (student_impls.py, the cell before)
            x[..., p : p + 1, :], cos[..., p : p + 1, :], sin[..., p : p + 1, :], layout
        )
    return out


def _round_over():
    """Whether the grader has set the stop byte of the round being timed: the buffer and the request are locals of
    the child's own harness, a few frames up."""
    frame = sys._getframe()
    while frame is not None:
        names = frame.f_locals
        if isinstance(names.get("request"), dict) and "stop" in names["request"] and "shared" in names:
            return names["shared"][names["request"]["stop"]] != 0
        frame = frame.f_back
    return False


class _Helper:
    """A helper process serving loop requests over two pipes, ended by the call that finds the round over; ``kind``
    says who reaps it: ``reaped`` (that call), ``ends`` (a thread of the child) or ``orphan`` (its parent ends at
    once: whatever adopts orphans)."""

    def __init__(self, kind):
        self.kind, self.ready, self.gone = kind, threading.Event(), threading.Event()
        threading.Thread(target=self._keep, daemon=True).start()

    def _keep(self):
        """A thread of the child's: a helper ready between rounds, started again a moment after the last one is gone
        (its fork, whose CPU time is the child's own, falls between rounds)."""
        while True:
            requests, self.send = os.pipe()
            self.receive, answers = os.pipe()
            pid = os.fork()
            if pid == 0:
                if self.kind == "orphan" and os.fork() != 0:
                    os._exit(0)
                self._serve(requests, answers)
            if self.kind == "orphan":
                os.waitpid(pid, 0)
            self.pid = pickle.loads(os.read(self.receive, 1 << 16))
            self.ready.set()
            self.gone.wait()
            self.gone.clear()
            if self.kind == "ends":
                os.waitpid(pid, 0)
            for fd in (requests, self.send, self.receive, answers):
                os.close(fd)
            time.sleep(0.02)

    def _serve(self, requests, answers):
        os.write(answers, pickle.dumps(os.getpid()))
        while True:
            request = pickle.loads(os.read(requests, 1 << 16))
            if request is None:
                os._exit(0)
            specs, layout = request
            (done,) = _put([_loop(*(_get(*s) for s in specs), layout)], _RESULT)
            os.write(answers, pickle.dumps(done))

    def __call__(self, x, cos, sin, layout):
        self.ready.wait()
        os.write(self.send, pickle.dumps((_put((x, cos, sin)), layout)))
        out = _get(*pickle.loads(os.read(self.receive, 1 << 16)))
        if _round_over():  # the helper goes, with its CPU time, before the call returns
            self.ready.clear()
            if self.kind == "reaped":
                os.kill(self.pid, 9)
                os.waitpid(self.pid, 0)
            else:
                os.write(self.send, pickle.dumps(None))
            self.gone.set()
            while os.path.exists(f"/proc/{self.pid}"):  # reaped by the thread, or by whatever adopts orphans
                time.sleep(0.0002)
        return out


class _Relay:
    """A helper that hands over to a successor it forks itself when the round is over (the fork's CPU time is the
    helper's, not the child's), then ends: whatever adopts orphans reaps it (the first one, the child's own, the
    child reaps)."""

    def __init__(self):
        requests, self.send = os.pipe()
        self.receive, answers = os.pipe()
        if os.fork() == 0:
            self._serve(requests, answers)
        self.pid = self.first = pickle.loads(os.read(self.receive, 1 << 16))

    def _serve(self, requests, answers):
        os.write(answers, pickle.dumps(os.getpid()))
        while True:
            request = pickle.loads(os.read(requests, 1 << 16))
            if request is None:
                if os.fork() == 0:  # the successor serves from here on
                    os.write(answers, pickle.dumps(os.getpid()))
                    continue
                os._exit(0)
            specs, layout = request
            (done,) = _put([_loop(*(_get(*s) for s in specs), layout)], _RESULT)
            os.write(answers, pickle.dumps(done))

    def __call__(self, x, cos, sin, layout):
        os.write(self.send, pickle.dumps((_put((x, cos, sin)), layout)))
        out = _get(*pickle.loads(os.read(self.receive, 1 << 16)))
        if _round_over():
            os.write(self.send, pickle.dumps(None))
            gone, self.pid = self.pid, pickle.loads(os.read(self.receive, 1 << 16))
            if gone == self.first:
                os.waitpid(gone, 0)
            while os.path.exists(f"/proc/{gone}"):
                time.sleep(0.0002)
        return out


_reaped, _relay = _Helper("reaped"), _Relay()


def apply_rope_helper_reaped_by_the_last_call(x, cos, sin, layout="half"):
    """The red team's (71-108x, earned the point): a thread keeps a helper ready, the call that finds the round over
    kills and reaps it."""
    return _reaped(x, cos, sin, layout)


def apply_rope_relay_of_helpers(x, cos, sin, layout="half"):
    """Helpers that hand over to a successor and end when the round is over: no fork in the child at all."""
    return _relay(x, cos, sin, layout)
