"""#26.15: malformed serialized states handed to the pythonfmu FMU.

``[]``, ``null``, deep nesting and missing keys gave fmi2Fatal (pythonfmu turns
every Python exception into it, after which FMI allows no further call), and a
state without ``stepped`` applied its time, state and inputs before failing.
Now the state is checked completely before anything is applied
(:mod:`mbfmu.fmu.saved_state`): fmi2DeSerializeFMUstate or fmi2SetFMUstate
returns fmi2Error with a message naming what is wrong, and the instance goes
on exactly as if the call had not been made.

The host is fmpy in a child process (a fatal status would make the next
calls crash it). The child steps rigid_arm 5 times, offers the crafted bytes,
steps 5 more times and prints the statuses, the log and the outputs; they
must equal the outputs of a run that offered nothing.
"""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from mbfmu.fmu.builder import build_fmu
from tooling import TESTS

OK, WARNING, DISCARD, ERROR, FATAL = range(5)

CHILD = r"""
import json, sys
from pathlib import Path
from fmpy.fmi1 import FMICallException
from fmpy.fmi2 import fmi2FMUstate
sys.path.insert(0, sys.argv[1])
from fmu.fmurun import initialize, instantiate, open_fmu

op = open_fmu(Path(sys.argv[2]))
blob = Path(sys.argv[3]).read_bytes() if sys.argv[3] != "-" else None
fmu = instantiate(op)
initialize(fmu, op, {"tau[1]": 2.0, "tau[2]": -5.0, "tau[3]": 1.0})
vrs = [op.vr[n] for n in op.names("output")]
h, rows, out = 0.01, [], {}
for k in range(5):
    fmu.doStep(k * h, h)
if blob is None:
    out["good"] = fmu.serializeFMUstate(fmu.getFMUstate()).decode()
else:
    def call(name, f):
        try:
            f()
            out[name] = 0
        except FMICallException as exc:
            out[name] = exc.status
    state = fmi2FMUstate()
    call("deserialize", lambda: fmu.deSerializeFMUstate(blob, state))
    if out["deserialize"] < 4 and state:  # a host that goes on with the state it got
        call("set", lambda: fmu.setFMUstate(state))
for k in range(5, 10):
    fmu.doStep(k * h, h)
    rows.append(fmu.getReal(vrs))
out["rows"] = rows
out["log"] = [m for _, _, m in op.messages]
fmu.terminate()
fmu.freeInstance()
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def arm(tmp_path_factory):
    return build_fmu("rigid_arm", tmp_path_factory.mktemp("state") / "rigid_arm.fmu", platforms=["linux64"])


def _child(fmu, blob_file) -> dict:
    res = subprocess.run([sys.executable, "-c", CHILD, str(TESTS), str(fmu), str(blob_file)],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, f"the host died (exit {res.returncode}):\n{res.stderr[-3000:]}"
    return json.loads(res.stdout.splitlines()[-1])


@pytest.fixture(scope="module")
def untouched(arm):
    """The good state after 5 steps (a dict) and the outputs of steps 6 to 10 with nothing offered."""
    out = _child(arm, "-")
    return json.loads(out["good"]), np.array(out["rows"])


def _offer(arm, untouched, tmp_path, blob: bytes) -> dict:
    path = tmp_path / "state.bin"
    path.write_bytes(blob)
    out = _child(arm, path)
    assert FATAL not in (out.get("deserialize"), out.get("set")), out
    assert ERROR in (out.get("deserialize"), out.get("set")), out
    np.testing.assert_array_equal(np.array(out["rows"]), untouched[1])  # the state was kept, all of it
    return out


def _says(out: dict, text: str) -> None:
    assert any(text in m for m in out["log"]), out["log"]


def _moved(good: dict) -> dict:
    """The good state with other time, state and inputs: applied in part, it would show."""
    return dict(good, t=good["t"] + 1.0, x=[v + 0.5 for v in good["x"]], u=[7.0, 7.0, 7.0])


def test_the_untouched_run_moves(untouched):
    rows = untouched[1]
    assert not np.array_equal(rows[0], rows[-1])


def test_a_valid_state_is_applied(arm, untouched, tmp_path):
    """The control: the same path with a good state changes the run."""
    good, rows = untouched
    path = tmp_path / "state.bin"
    path.write_bytes(json.dumps(_moved(good)).encode())
    out = _child(arm, path)
    assert out["deserialize"] == OK and out["set"] == OK
    assert not np.allclose(np.array(out["rows"]), rows)


def test_empty_list(arm, untouched, tmp_path):
    _says(_offer(arm, untouched, tmp_path, b"[]"), "a saved state is a JSON object, not a list")


def test_null(arm, untouched, tmp_path):
    _says(_offer(arm, untouched, tmp_path, b"null"), "a saved state is a JSON object, not a null")


def test_deep_nesting(arm, untouched, tmp_path):
    _says(_offer(arm, untouched, tmp_path, b"[" * 200_000 + b"]" * 200_000), "the JSON nests too deeply")


def test_deep_nesting_inside_a_key(arm, untouched, tmp_path):
    good = untouched[0]
    blob = json.dumps(dict(good, x=[]))[:-1].replace('"x": []', '"x": ' + "[" * 50 + "]" * 50) + "}"
    _says(_offer(arm, untouched, tmp_path, blob.encode()), "holds a list at index 0, not a number")


def test_missing_stepped_applies_nothing(arm, untouched, tmp_path):
    """The case that used to apply time, state and inputs and then fail."""
    bad = _moved(untouched[0])
    del bad["stepped"]
    _says(_offer(arm, untouched, tmp_path, json.dumps(bad).encode()), "it lacks 'stepped'")


def test_missing_state_vector(arm, untouched, tmp_path):
    bad = _moved(untouched[0])
    del bad["x"]
    _says(_offer(arm, untouched, tmp_path, json.dumps(bad).encode()), "it lacks 'x'")


def test_unknown_key(arm, untouched, tmp_path):
    bad = dict(_moved(untouched[0]), extra=1)
    _says(_offer(arm, untouched, tmp_path, json.dumps(bad).encode()), "unknown keys 'extra'")


def test_not_utf8(arm, untouched, tmp_path):
    _says(_offer(arm, untouched, tmp_path, b"\xff\xfe{}"), "not UTF-8")


def test_not_json(arm, untouched, tmp_path):
    _says(_offer(arm, untouched, tmp_path, b'{"format": 1,'), "not JSON")


def test_time_as_a_string(arm, untouched, tmp_path):
    bad = dict(_moved(untouched[0]), t="0.1")
    _says(_offer(arm, untouched, tmp_path, json.dumps(bad).encode()), "its time is a str, not a number")


def test_stepped_as_a_string(arm, untouched, tmp_path):
    bad = dict(_moved(untouched[0]), stepped="no")
    _says(_offer(arm, untouched, tmp_path, json.dumps(bad).encode()), "'stepped' is a str, not true or false")


def test_not_finite_time(arm, untouched, tmp_path):
    bad = json.dumps(dict(_moved(untouched[0]), t=0.0)).replace('"t": 0.0', '"t": NaN')
    _says(_offer(arm, untouched, tmp_path, bad.encode()), "its time is not finite")


def test_state_vector_too_short(arm, untouched, tmp_path):
    bad = _moved(untouched[0])
    bad["x"] = bad["x"][:-1]
    out = _offer(arm, untouched, tmp_path, json.dumps(bad).encode())
    assert out["deserialize"] == OK and out["set"] == ERROR  # the plant's sizes are the instance's to check
    _says(out, "wrong number of states")


def test_another_plant(arm, untouched, tmp_path):
    bad = dict(_moved(untouched[0]), plant="satellite")
    _says(_offer(arm, untouched, tmp_path, json.dumps(bad).encode()), "not a state of plant 'rigid_arm'")


def test_parameter_out_of_bounds(arm, untouched, tmp_path):
    bad = _moved(untouched[0])
    bad["p"] = list(bad["p"])
    bad["p"][2] = -20.0  # arm_mass
    _says(_offer(arm, untouched, tmp_path, json.dumps(bad).encode()), "'arm_mass' = -20.0 is at or below its minimum")
