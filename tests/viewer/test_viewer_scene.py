"""Poses drawn at time t are the forward kinematics of the recorded state at t."""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from viewer_toys import DoublePendulum, FlexibleArm, pendulum_run, record

from mbfmu.errors import InputError
from mbfmu.viewer import Recording
from mbfmu.viewer.frame_times import decimated_times, envelope, video_times
from mbfmu.viewer.scene import matrix_to_quat, quat_to_matrix


def masses_by_hand(q1, q2, l1=1.0, l2=0.8):
    """Independent reference: the two pendulum masses from trigonometry."""
    m1 = np.array([-l1 * np.sin(q1), 0.0, -l1 * np.cos(q1)])
    return m1, m1 + np.array([-l2 * np.sin(q1 + q2), 0.0, -l2 * np.cos(q1 + q2)])


def test_shapes_at_sample_times_follow_forward_kinematics_of_recorded_state(pendulum):
    t, X = pendulum_run(n=51)
    rec = Recording(record(pendulum, t, X), pendulum)
    for k in (0, 7, 25, 50):
        R_WS, p_WS, _, _ = rec.scene_at(t[k])
        m1, m2 = masses_by_hand(X[k, 0], X[k, 1])
        np.testing.assert_allclose(p_WS[1], m1, atol=1e-12)  # sphere at link 1's end
        np.testing.assert_allclose(p_WS[3], m2, atol=1e-12)  # box at link 2's end
        np.testing.assert_allclose(p_WS[0], m1 / 2, atol=1e-12)  # link 1 cylinder centre
        # the link 2 cylinder's axis (shape z) points from mass 2 back to mass 1
        np.testing.assert_allclose(R_WS[2][:, 2], (m1 - m2) / 0.8, atol=1e-12)


def test_between_samples_the_state_is_interpolated_linearly(pendulum):
    t, X = pendulum_run(n=11)
    rec = Recording(record(pendulum, t, X), pendulum)
    tm = 0.3 * t[3] + 0.7 * t[4]
    x = 0.3 * X[3] + 0.7 * X[4]
    np.testing.assert_allclose(rec.state_at(tm), x, atol=1e-12)
    np.testing.assert_allclose(rec.scene_at(tm)[1][3], masses_by_hand(x[0], x[1])[1], atol=1e-12)
    hold = Recording(record(pendulum, t, X), pendulum, interpolation="hold")
    np.testing.assert_allclose(hold.state_at(tm), X[3])
    # outside the recorded span: the first / last sample
    np.testing.assert_allclose(rec.state_at(-5.0), X[0])
    np.testing.assert_allclose(rec.state_at(99.0), X[-1])


def test_frames_equal_scene_at_each_time(pendulum_rec):
    times = np.array([0.0, 0.33, 1.5, 2.0])
    fr = pendulum_rec.frames(times)
    for k, tk in enumerate(times):
        R, p, _, tr = pendulum_rec.scene_at(tk)
        np.testing.assert_allclose(fr.R[k], R, atol=1e-12)
        np.testing.assert_allclose(fr.p[k], p, atol=1e-12)
        np.testing.assert_allclose(fr.trails[k, 0], masses_by_hand(*pendulum_rec.state_at(tk)[:2])[1], atol=1e-12)


def test_unit_prefixed_states_of_a_cosimulation_result_are_found(pendulum):
    t, X = pendulum_run(n=21)
    res = record(pendulum, t, X, prefix="arm.", extra={"ctrl.u": np.zeros_like(t)})
    rec = Recording(res, pendulum)
    assert rec.state_columns == ["arm.q[1]", "arm.q[2]", "arm.v[1]", "arm.v[2]"]
    np.testing.assert_allclose(rec.state_at(t[5]), X[5])


def test_two_units_with_the_same_states_need_a_unit_choice(pendulum):
    t, X = pendulum_run(n=21)
    a = record(pendulum, t, X, prefix="a.")
    both = record(pendulum, t, X[::-1], prefix="b.", extra={n: a[n] for n in a.dtype.names[1:]})
    with pytest.raises(InputError, match="several units"):
        Recording(both, pendulum)
    np.testing.assert_allclose(Recording(both, pendulum, unit="a").state_at(t[2]), X[2])
    np.testing.assert_allclose(Recording(both, pendulum, unit="b").state_at(t[2]), X[::-1][2])


def test_a_units_output_and_its_state_of_one_name_are_one_signal(pendulum):
    """``q[2]`` recorded as the unit's output ``arm.q[2]`` and as its FMU state
    ``arm.states.q[2]`` is one quantity: the output is taken; two units
    still need a choice."""
    t, X = pendulum_run(n=21)
    res = record(pendulum, t, X, prefix="arm.", extra={"arm.states.q[2]": X[:, 1] + 1e-9})
    rec = Recording(res, pendulum)
    assert rec.resolve("q[2]") == "arm.q[2]" and rec.resolve("states.q[2]") == "arm.states.q[2]"
    both = record(pendulum, t, X, prefix="a.", extra={"b.q[2]": X[:, 1], "b.states.q[2]": X[:, 1]})
    with pytest.raises(InputError, match=r"several units: a\.q\[2\], b\.q\[2\]$"):
        Recording(both, pendulum, unit="a").resolve("q[2]")


def test_results_without_states_or_poses_are_refused_naming_what_is_missing(pendulum):
    res = np.zeros(3, dtype=[("time", float), ("x", float)])
    with pytest.raises(InputError, match=r"neither its states \(q\[1\].*record the states"):
        Recording(res, pendulum)
    t, X = pendulum_run(n=5)
    partial = np.zeros(5, dtype=[("time", float), ("q[1]", float), ("q[2]", float)])
    partial["time"] = t
    with pytest.raises(InputError, match=r"missing v\[1\], v\[2\]"):
        Recording(partial, pendulum)


def test_recorded_body_poses_are_drawn_without_the_states(pendulum):
    t, X = pendulum_run(n=31)
    names = ["time"] + [f"body{k}_{w}[{i}]" for k in (1, 2) for w, n in (("p", 3), ("quat", 4))
                        for i in range(1, n + 1)]
    res = np.zeros(t.size, dtype=[(n, float) for n in names])
    res["time"] = t
    for j, x in enumerate(X):
        R, p = pendulum.poses(x)
        for k in (1, 2):
            q = matrix_to_quat(R[k])
            for i in range(3):
                res[f"body{k}_p[{i + 1}]"][j] = p[k, i]
            for i in range(4):
                res[f"body{k}_quat[{i + 1}]"][j] = q[i]
    rec = Recording(res, pendulum)
    assert rec.source == "poses"
    for k in (0, 13, 30):
        m1, m2 = masses_by_hand(X[k, 0], X[k, 1])
        _, p_WS, _, _ = rec.scene_at(t[k])
        np.testing.assert_allclose(p_WS[1], m1, atol=1e-12)
        np.testing.assert_allclose(p_WS[3], m2, atol=1e-12)


def test_quaternion_and_matrix_conversions_are_inverse():
    rng = np.random.default_rng(1)
    for q in rng.normal(size=(20, 4)):
        q /= np.linalg.norm(q)
        q = q if q[0] >= 0 else -q
        R = quat_to_matrix(q)
        np.testing.assert_allclose(R @ R.T, np.eye(3), atol=1e-12)
        np.testing.assert_allclose(np.linalg.det(R), 1.0, atol=1e-12)
        np.testing.assert_allclose(matrix_to_quat(R), q, atol=1e-9)


def test_beam_is_drawn_along_the_plants_deflection(arm_rec):
    t = 0.7
    theta, e = arm_rec.state_at(t)[:2]
    _, _, beams, _ = arm_rec.scene_at(t)
    pts = beams[2]
    s = np.linspace(0, 1.5, pts.shape[0])
    local = np.stack([0.08 + s, e * (s / 1.5) ** 2, 0 * s], 1)  # beam frame = hub frame shifted by 0.08 m
    c, sn = np.cos(theta), np.sin(theta)
    world = local @ np.array([[c, -sn, 0], [sn, c, 0], [0, 0, 1]]).T
    np.testing.assert_allclose(pts, world, atol=1e-12)
    assert abs(e) > 0.05  # the test would not see a straight beam otherwise


def test_video_frame_times_match_fps_and_speed():
    np.testing.assert_allclose(video_times(0.0, 2.0, fps=10, speed=2.0), np.arange(11) * 0.2)
    assert video_times(0.0, 1.0, fps=4, speed=1.0).size == 5
    with pytest.raises(InputError):
        video_times(0, 1, fps=0)


def test_envelope_keeps_every_peak_in_few_points():
    t = np.linspace(0, 1, 100_001)
    y = np.sin(40 * t)
    y[54_321] = 7.0
    y[12_345] = -9.0
    te, ye = envelope(t, y, bins=500)
    assert te.size == 1000
    assert ye.max() == 7.0 and ye.min() == -9.0
    assert np.all(np.diff(te) >= 0)


def test_million_sample_run_replays_in_memory_bounded_by_decimation(pendulum):
    from mbfmu.viewer.html import scene_data

    def peak(n):
        t = np.linspace(0.0, 100.0, n)
        X = np.stack([np.cos(t), np.sin(2 * t), -np.sin(t), 2 * np.cos(2 * t)], 1)
        res = record(pendulum, t, X)
        del t, X
        tracemalloc.start()
        rec = Recording(res, pendulum, trails=[(2, (0, 0, -0.8))])
        data = scene_data(rec, max_frames=300, signals=["q[1]", "v[2]"])
        rec.scene_at(55.5)
        envelope(rec.time, rec.column("q[1]"), bins=500)
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return top, res.nbytes, data

    peak(1_000)  # warm-up: first-use imports are not the replay's memory
    small, _, _ = peak(10_000)
    big, nbytes, data = peak(1_000_000)
    assert nbytes == 40_000_000
    assert big < 4_000_000, f"replaying 1e6 samples took {big / 1e6:.1f} MB beyond the results"
    assert big < 2 * small + 500_000  # does not grow with the run's length
    assert len(data["p"]) < 300 * 4 * 3 * 4 * 2  # 300 frames stored, not 1e6


def test_decimated_times_keep_samples_when_few_and_cover_the_run_when_many():
    t = np.linspace(0, 3, 50)
    np.testing.assert_array_equal(decimated_times(t, 100), t)
    d = decimated_times(np.linspace(0, 3, 5000), 100)
    assert d.size == 100 and d[0] == 0 and d[-1] == 3


def test_shape_on_a_body_the_plant_does_not_have_is_reported():
    p = DoublePendulum()
    p.geometry = p.geometry + (type(p.geometry[0])(5, "sphere", (0.1,), name="ghost"),)
    t, X = pendulum_run(n=5)
    with pytest.raises(InputError, match="ghost.*body 5"):
        Recording(record(p, t, X), p).scene_at(0.0)


def test_unknown_shape_kind_is_reported():
    a = FlexibleArm()
    a.geometry = (type(a.geometry[0])(1, "torus", (1.0,), name="donut"),)
    t = np.linspace(0, 1, 3)
    with pytest.raises(InputError, match="donut.*torus"):
        Recording(record(a, t, np.zeros((3, 4))), a)


def test_trail_on_a_beam_follows_its_deflected_centre_line(arm_rec):
    rec = Recording(arm_rec.results, arm_rec.plant, trails=[("beam", 2, 1.5), ("beam", 2, 0.75), (1, (1.58, 0, 0))])
    for t in (0.3, 1.1):
        theta, e = rec.state_at(t)[:2]
        c, sn = np.cos(theta), np.sin(theta)
        Rz = np.array([[c, -sn, 0], [sn, c, 0], [0, 0, 1]])
        _, _, beams, trails = rec.scene_at(t)
        np.testing.assert_allclose(trails[0], beams[2][-1], atol=1e-12)  # tip = last station
        np.testing.assert_allclose(trails[1], Rz @ [0.08 + 0.75, e / 4, 0], atol=1e-12)
        np.testing.assert_allclose(trails[2], Rz @ [1.58, 0, 0], atol=1e-12)  # rigid point: no deflection
    with pytest.raises(InputError, match="outside the beam"):
        Recording(arm_rec.results, arm_rec.plant, trails=[("beam", 2, 2.0)])
    with pytest.raises(InputError, match="not a beam"):
        Recording(arm_rec.results, arm_rec.plant, trails=[("beam", 1, 0.0)])


def test_non_numeric_columns_are_ignored_unless_they_are_needed(pendulum):
    t, X = pendulum_run(n=5)
    res = record(pendulum, t, X)
    names = list(res.dtype.names)
    mixed = np.zeros(t.size, dtype=[(n, float) for n in names] + [("mode", "U8")])
    for n in names:
        mixed[n] = res[n]
    Recording(mixed, pendulum)  # an unused text column does no harm
    bad = np.zeros(t.size, dtype=[("time", float), ("q[1]", "U8")] + [(n, float) for n in names[2:]])
    with pytest.raises(InputError, match=r"'q\[1\]' has dtype"):
        Recording(bad, pendulum)


def test_trail_on_a_missing_body_is_reported(pendulum):
    t, X = pendulum_run(n=5)
    with pytest.raises(InputError, match="trail on body 7"):
        Recording(record(pendulum, t, X), pendulum, trails=[(7, (0, 0, 0))]).scene_at(0.0)
