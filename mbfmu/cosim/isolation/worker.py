"""The worker process behind an isolated unit (:mod:`.proxy`).

``python -m mbfmu.cosim.isolation.worker FD`` serves one unit over the socket ``FD``:
each request is a length-prefixed pickle ``(op, *args)``; requests that
return something get one reply, ``("ok", value)`` or ``("err", kind,
message, unit, time)``. ``push``, ``derivs`` and ``free`` get no reply: an
error they raise is returned in place of the next reply (the requests
after it are skipped until then), and a step replies with the outputs
after it, so the hot path costs one round trip per step (plus one per output
read after new inputs, for units with direct feedthrough). The worker ignores SIGINT (the master handles
Ctrl-C between steps) and dies with its master (``PR_SET_PDEATHSIG``).
"""
from __future__ import annotations

import ctypes
import faulthandler
import pickle
import signal
import socket
import struct
import sys
from typing import Any

HEADER = struct.Struct("<I")
NO_REPLY = {"push", "derivs", "free"}


def send(sock: socket.socket, obj: Any) -> None:
    """Send one length-prefixed pickle."""
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    sock.sendall(HEADER.pack(len(data)) + data)


def recv_exact(sock: socket.socket, n: int) -> bytes:
    """Exactly ``n`` bytes; raises EOFError when the peer is gone."""
    chunks, got = [], 0
    while got < n:
        b = sock.recv(n - got)
        if not b:
            raise EOFError("peer closed the connection")
        chunks.append(b)
        got += len(b)
    return b"".join(chunks)


def recv(sock: socket.socket) -> Any:
    """Receive one length-prefixed pickle."""
    (n,) = HEADER.unpack(recv_exact(sock, HEADER.size))
    return pickle.loads(recv_exact(sock, n))


def _make_unit(recipe: tuple) -> Any:
    kind, payload = recipe
    if kind == "fmu":
        from ..fmi.fmu_open import open_fmu
        payload = dict(payload)
        conversions = payload.pop("conversions", {})
        unit = open_fmu(**payload)
        for name, (gain, offset) in conversions.items():
            unit.convert_input(name, gain, offset)
        return unit
    return pickle.loads(payload)


class _Server:
    def __init__(self, unit: Any) -> None:
        self.unit = unit
        self.getters: dict[int, Any] = {}
        self.states: dict[int, Any] = {}
        self.next_state = 1

    def op_setup(self, values: dict, will_roll_back: bool, driven: list, t0: float, stop: float, step: float) -> list:
        u = self.unit
        u.values.clear()
        u.values.update(values)
        u.will_roll_back = will_roll_back
        u.connect_inputs(driven)
        u.setup(t0, stop, step)
        return [list(u.u), list(u.y)]

    def op_push(self, values: list) -> None:
        uu = self.unit.u
        for j, v in enumerate(values):
            uu[j] = v
        self.unit.push()

    def op_derivs(self, d1: list, d2: list) -> None:
        self.unit.push_derivatives(d1, d2)

    def op_pull(self) -> list:
        self.unit.pull()
        return list(self.unit.y)

    def op_step(self, t: float, h: float) -> list:
        self.unit.do_step(t, h)
        self.unit.pull()  # the outputs come back with the reply: no second round trip to read them
        return list(self.unit.y)

    def op_getter(self, key: int, names: list) -> None:
        self.getters[key] = self.unit.getter(names)

    def op_get(self, key: int) -> list:
        return [float(v) for v in self.getters[key]()]

    def op_save(self) -> tuple[int, list]:
        key, self.next_state = self.next_state, self.next_state + 1
        self.states[key] = self.unit.get_state()
        return key, list(self.unit.u)

    def op_restore(self, key: int) -> None:
        self.unit.set_state(self.states[key])

    def op_free(self, key: int) -> None:
        self.unit.free_state(self.states.pop(key))

    def op_log(self) -> str:
        return self.unit.log_text()

    def op_terminate(self) -> None:
        self.unit.terminate()


def serve(sock: socket.socket) -> None:
    """Answer requests until ``terminate`` or until the master goes away."""
    server: _Server | None = None
    pending: tuple | None = None  # the error of a request without reply
    while True:
        try:
            msg = recv(sock)
        except EOFError:
            return
        op, args = msg[0], msg[1:]
        if op == "init":
            try:
                server = _Server(_make_unit(args[0]))
                send(sock, ("ok", None))
            except BaseException as exc:  # noqa: BLE001 - reported to the master
                send(sock, ("err", type(exc).__name__, str(exc), "", float("nan")))
            continue
        if pending is not None:
            if op not in NO_REPLY:
                send(sock, pending)
                pending = None
            continue
        try:
            out = getattr(server, "op_" + op)(*args)
        except BaseException as exc:  # noqa: BLE001 - reported to the master
            err = ("err", type(exc).__name__, str(exc), getattr(exc, "unit", ""), getattr(exc, "time", float("nan")))
            if op in NO_REPLY:
                pending = err
            else:
                send(sock, err)
            continue
        if op not in NO_REPLY:
            send(sock, ("ok", out))
        if op == "terminate":
            return


def main(argv: list[str]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    faulthandler.enable()  # a crash inside a unit leaves its traceback on stderr
    try:
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: die with the master
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass
    sock = socket.socket(fileno=int(argv[0]))
    serve(sock)


if __name__ == "__main__":
    main(sys.argv[1:])
