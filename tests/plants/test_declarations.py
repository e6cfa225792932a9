"""Each parameter and output declared once, one numbering rule (issue 33, sections 4 and 5).

* A library plant declares its parameters in one ``Declaration``: the
  constructor's keywords and defaults, its checks and the ``parameters``
  signals (bounds, open ends) all come from it, and agree.
* Every name is 1-based (``tau[2]``, ``eta[1]``); messages print names: a scan
  of the plants' signals and of the f-string templates of mbfmu and models.
* The library plants' builds apply no ``float()`` / ``np.asarray(..., float)``
  to their parameters (which would drop the expression the native FMU's tape
  follows).
"""
from __future__ import annotations

import ast
import inspect
import math
import pathlib
import re

import numpy as np
import pytest

import mbfmu
from mbfmu.errors import InputError
from mbfmu.plant.library import plant_class
from mbfmu.plant.parameters import Declaration, Parameter

ROOT = pathlib.Path(__file__).resolve().parents[2]
PLANTS = mbfmu.list_plants()


def _inside_and_outside(p: Parameter):
    """(value, accepted) pairs just inside and just outside (and at) each finite bound."""
    out = []
    for bound, is_open, side in ((p.min, p.min_open, -1.0), (p.max, p.max_open, 1.0)):
        if bound is None:
            continue
        step = 1.0 if p.integer else 1e-6 * max(1.0, abs(bound))
        out += [(bound, not is_open), (bound - side * step, True), (bound + side * step, False)]
    return out


@pytest.mark.parametrize("name", PLANTS)
def test_the_constructor_takes_exactly_the_declared_parameters_with_their_defaults(name):
    cls = plant_class(name)
    declared = cls.parameter_declaration
    assert isinstance(declared, Declaration)
    sig = inspect.signature(cls)
    for p in declared:
        assert sig.parameters[p.name].default == p.default, p.name
    plant = cls()
    signals = {s.name: s for s in plant.parameters}
    assert list(signals) == [n for p in declared for n in p.element_names()]
    for p in declared:
        for k, n in enumerate(p.element_names()):
            s = signals[n]
            assert (s.unit, s.min, s.max, s.min_open, s.max_open) == (p.unit, p.min, p.max, p.min_open, p.max_open)
            default = p.default[k] if p.size else p.default
            assert s.start == default


@pytest.mark.parametrize("name", PLANTS)
def test_the_plant_refuses_exactly_the_values_outside_its_declared_bounds(name):
    """Just inside each bound builds; just outside (and an open end itself) is refused
    naming the parameter and its interval (a value another parameter rules out is
    not a bound of this one: those are the plant's guards, tested by the native FMU)."""
    cls = plant_class(name)
    checked = 0
    for p in cls.parameter_declaration:
        if p.size:
            continue
        for value, accepted in _inside_and_outside(p):
            if accepted:
                try:
                    built = cls(**{p.name: value})
                except InputError as exc:  # a condition tying it to another parameter, not its bound
                    assert p.interval() not in str(exc) and p.name in str(exc), str(exc)
                else:
                    assert next(s.start for s in built.parameters if s.name == p.name) == value
            else:
                with pytest.raises(InputError, match=re.escape(f"{p.name!r} = {value!r}") + ".*" +
                                   re.escape(p.interval())):
                    cls(**{p.name: value})
            checked += 1
    assert checked >= 2


def test_an_open_and_a_closed_end_are_told_apart():
    d = Declaration("demo", Parameter("mass", "kg", 1.0, "a mass", "(0, inf)"),
                    Parameter("damping", "N.s/m", 0.0, "a damper", "[0, 5]"),
                    Parameter("n", "1", 2, "a count", "[1, 4]", integer=True, rebuild="a count"))
    assert d.resolve({"damping": 0.0, "n": 4}).n == 4
    with pytest.raises(InputError, match=r"'mass' = 0.0 must be in \(0, inf\) kg"):
        d.resolve({"mass": 0.0})
    with pytest.raises(InputError, match=r"'damping' = 5.5 must be in \[0, 5\] N.s/m"):
        d.resolve({"damping": 5.5})
    with pytest.raises(InputError, match=r"'n' = 2.5 must be a whole number in \[1, 4\]"):
        d.resolve({"n": 2.5})
    with pytest.raises(InputError, match=r"'mass' = nan must be finite"):
        d.resolve({"mass": math.nan})
    with pytest.raises(InputError, match="is not a number"):
        d.resolve({"mass": "heavy"})
    sig = {s.name: s for s in d.signals(d.resolve({}))}
    assert (sig["mass"].min, sig["mass"].min_open, sig["damping"].max, sig["damping"].max_open) == (0.0, True, 5.0, False)
    with pytest.raises(InputError, match="at or below its minimum"):
        sig["mass"].check(0.0)
    assert sig["damping"].check(5.0) == 5.0
    assert d.rebuild_reasons() == {"n": "a count"}


# ------------------------------------------------------------------ numbering
_ELEMENT = re.compile(r"^(\w+)\[(\d+)\]$")


@pytest.mark.parametrize("name", PLANTS)
def test_every_signal_name_counts_from_one(name):
    plant = mbfmu.load_plant(name)
    for kind, sigs in (("input", plant.inputs), ("output", plant.outputs), ("parameter", plant.parameters),
                       ("state", plant.states)):
        vectors: dict[str, list[int]] = {}
        for s in sigs:
            m = _ELEMENT.match(s.name)
            if m:
                vectors.setdefault(m.group(1), []).append(int(m.group(2)))
        for base, idx in vectors.items():
            assert idx == list(range(1, len(idx) + 1)), f"{name} {kind} {base}: {idx}"
    model = getattr(plant, "model", None) or getattr(plant, "flexible_system", None)
    for label in [*getattr(model, "q_names", ()), *getattr(model, "v_names", ())]:
        for m in re.finditer(r"\[(\d+)\]", label):
            assert int(m.group(1)) >= 1, label


def test_the_flexible_arms_modal_coordinates_count_from_one():
    system = mbfmu.load_plant("flexible_arm").flexible_system
    etas = [n for n in system.q_names if ".eta[" in n]
    assert etas and all(not n.endswith("[0]") for n in etas) and any(n.endswith(".eta[1]") for n in etas)


# f-string indices known to hold 1-based numbers already (parsed from FMI names), or text
_ONE_BASED_ALREADY = {
    ("mbfmu/cosim/system.py", "i"): "indices parsed from the FMI names a.q[k]",
    ("mbfmu/cosim/system.py", "k"): "indices parsed from the FMI names",
    ("mbfmu/plant/signals.py", "m.group(2)"): "the index of a parsed name",
}
_TEXT = re.compile(r"unit|extra|label|cat|category|symbols|decode")


def _one_based_loop_names(fn) -> set[str]:
    """Names bound by ``range(1, ...)`` or ``enumerate(..., start=1)`` in ``fn``."""
    out = set()
    for node in ast.walk(fn):
        if not isinstance(node, (ast.For, ast.comprehension)) or not isinstance(node.iter, ast.Call):
            continue
        f, it, target = node.iter.func, node.iter, node.target
        if getattr(f, "id", "") == "range" and len(it.args) >= 2 and getattr(it.args[0], "value", None) == 1 \
                and isinstance(target, ast.Name):
            out.add(target.id)
        if getattr(f, "id", "") == "enumerate" and any(k.arg == "start" and getattr(k.value, "value", None) == 1
                                                       for k in it.keywords):
            first = target.elts[0] if isinstance(target, ast.Tuple) else None
            if isinstance(first, ast.Name):
                out.add(first.id)
    return out


def _index_templates():
    """(file, line, expression) of every ``name[{expression}]`` in an f-string of mbfmu and models."""
    for path in [*ROOT.joinpath("mbfmu").rglob("*.py"), *ROOT.joinpath("models").glob("*.py")]:
        tree = ast.parse(path.read_text())
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.Module)):
                continue
            loops = _one_based_loop_names(fn)
            for node in ast.walk(fn):
                if not isinstance(node, ast.JoinedStr):
                    continue
                for a, b, c in zip(node.values, node.values[1:], node.values[2:]):
                    if isinstance(a, ast.Constant) and str(a.value).endswith("[") and \
                            isinstance(b, ast.FormattedValue) and isinstance(c, ast.Constant) and \
                            str(c.value).startswith("]"):
                        e = b.value
                        plus_one = isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add) and \
                            getattr(e.right, "value", None) == 1
                        src = ast.unparse(e)
                        if plus_one or "+ 1" in src or (isinstance(e, ast.Name) and e.id in loops) or \
                                _TEXT.search(src):
                            continue
                        yield str(path.relative_to(ROOT)), node.lineno, src


def test_names_in_messages_count_from_one():
    """A name printed with an index (``tau[{k}]``) takes a 0-based array index
    ``k`` only as ``{k + 1}``; the few others hold 1-based numbers already."""
    bad = sorted({f"{f}:{line}: [{{{src}}}]" for f, line, src in _index_templates()
                  if (f, src) not in _ONE_BASED_ALREADY})
    assert not bad, bad


def test_a_blown_up_step_names_the_state_and_the_force_from_one():
    plant = mbfmu.load_plant("rigid_arm")
    x, u = plant.initial_state(), np.zeros(3)
    u[2] = 1e300  # the elbow's torque, tau[3]
    with pytest.raises(mbfmu.errors.SimulationError, match=r"generalized force tau\[3\] = 1e\+300 on "):
        plant.advance(0.0, x, u, 0.01)


# ------------------------------------------------------ parameters kept symbolic
def _float_calls(tree: ast.AST, names: set[str]):
    """``float(...)`` / ``np.asarray(..., float)`` calls whose argument mentions a
    parameter: a declared name, ``p.<name>`` or a local bound from ``p.<name>``."""
    for fn in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
        local = set(names)
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign):
                vals = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
                if all(isinstance(v, ast.Attribute) and v.attr in names for v in vals):
                    local |= {n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        for node in ast.walk(fn):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            f = node.func
            to_float = getattr(f, "id", None) == "float" or getattr(f, "attr", None) in ("asarray", "array") and any(
                getattr(a, "id", None) == "float" for a in [*node.args[1:], *(k.value for k in node.keywords)])
            if not to_float:
                continue
            used = {n.id for n in ast.walk(node.args[0]) if isinstance(n, ast.Name)} | \
                {n.attr for n in ast.walk(node.args[0]) if isinstance(n, ast.Attribute)}
            if used & local:
                yield node.lineno, ast.unparse(node)


@pytest.mark.parametrize("name", PLANTS)
def test_the_build_applies_no_float_to_a_parameter(name):
    """``float(x)`` drops the expression a parameter carries while the native packer
    records the build (mbfmu.dynamics.symbolic): use ``symbolic.number`` to keep it,
    ``symbolic.value`` for a number that is meant to be one (a drawing). Counts
    (declared ``rebuild``) are numbers by declaration."""
    cls = plant_class(name)
    names = {p.name for p in cls.parameter_declaration if not p.rebuild}
    source = pathlib.Path(inspect.getsourcefile(cls))
    bad = list(_float_calls(ast.parse(source.read_text()), names))
    assert not bad, bad


def test_the_float_scan_finds_a_float_on_a_parameter():
    tree = ast.parse("def build(self, p):\n    m, k = p.mass, p.k\n    a = float(m)\n    b = np.asarray(p.k, float)\n"
                     "    c = float(self.n)\n")
    assert [line for line, _ in _float_calls(tree, {"mass", "k"})] == [3, 4]


# ------------------------------------------------------ outputs with their sensors
def test_a_measured_vector_pairs_the_name_from_one_with_the_index_from_zero():
    from mbfmu.dynamics import sensors
    from mbfmu.plant.outputs import declare_outputs, measured, measured_vector
    outputs, probes = declare_outputs(
        measured_vector("v", 3, ["rad/s", "m/s", "rad/s"], "rate {i}", sensors.Velocity, start=[1.0, 2.0, 3.0]),
        measured("ke", "J", "kinetic energy", sensors.KineticEnergy()))
    assert [(s.name, s.unit, s.description, s.start) for s in outputs[:3]] == [
        ("v[1]", "rad/s", "rate 1", 1.0), ("v[2]", "m/s", "rate 2", 2.0), ("v[3]", "rad/s", "rate 3", 3.0)]
    assert [p.index for p in probes[:3]] == [0, 1, 2] and isinstance(probes[3], sensors.KineticEnergy)
    with pytest.raises(InputError, match="2 start values for 3 elements"):
        measured_vector("v", 3, "m/s", "rate {i}", sensors.Velocity, start=[1.0, 2.0])


@pytest.mark.parametrize("name", PLANTS)
def test_each_output_is_declared_with_its_sensor(name):
    """The plant's outputs and sensors come from one declare_outputs call (no
    second list aligned by position), one sensor per output."""
    source = pathlib.Path(inspect.getsourcefile(plant_class(name))).read_text()
    tree = ast.parse(source)
    assigned = [node for node in ast.walk(tree) if isinstance(node, ast.Assign)
                and any("self.sensors" in ast.unparse(t) or "self.outputs" in ast.unparse(t) for t in node.targets)]
    assert assigned and all("declare_outputs(" in ast.unparse(node.value) for node in assigned), \
        [ast.unparse(n)[:80] for n in assigned]
    plant = mbfmu.load_plant(name)
    assert len(plant.sensors) == len(plant.outputs)


def test_the_pythonfmu_slave_applies_the_open_and_closed_ends():
    """The pythonfmu FMU checks a parameter set with the declared signal: an open end
    (arm_mass = 0 kg) is refused, a closed one (gravity = 0) taken (FMI's own min and
    max are inclusive, so the slave checks the open ends itself)."""
    from mbfmu.fmu.plantref import parse
    from mbfmu.fmu.slave import PARAMETER, PlantSlave

    class Slave(PlantSlave):
        plant_ref = parse("rigid_arm").to_dict()
    slave = Slave(instance_name="arm", resources=None, visible=False)
    vr = {slave.plant.parameters[i].name: ref for ref, (kind, i) in enumerate(slave._table) if kind == PARAMETER}
    slave.set_real([vr["arm_mass"]], [0.0])
    assert "refused" in slave.errors[-1] and "'arm_mass' = 0.0 is at or below its minimum 0.0 kg" in slave.errors[-1]
    before = len(slave.errors)
    slave.set_real([vr["gravity"]], [0.0])
    assert len(slave.errors) == before
