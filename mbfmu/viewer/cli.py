"""``mbfmu view RESULTS --model NAME [-o out.html|out.mp4|out.gif|out.png]``."""
from __future__ import annotations

import argparse
import re
from pathlib import Path

from ..errors import InputError

VIDEO = (".mp4", ".gif")
IMAGE = (".png", ".jpg", ".jpeg", ".svg", ".pdf")


def _param(text: str) -> tuple[str, float | str]:
    name, eq, value = text.partition("=")
    if not eq or not name:
        raise argparse.ArgumentTypeError(f"parameter {text!r} is not NAME=VALUE")
    try:
        return name, float(value)
    except ValueError:
        return name, value


def _size(text: str) -> tuple[int, int]:
    from .options import image_size
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"size {text!r} is not WIDTHxHEIGHT in pixels") from None
    try:
        return image_size((w, h))
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _checked(check, name: str):
    """An argparse type: ``float`` then ``check(name, value)`` (messages kept)."""
    def convert(text: str):
        try:
            return check(name, float(text))
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    convert.__name__ = name.lstrip("-")
    return convert


def _view(text: str) -> tuple[float, float]:
    try:
        az, el = (float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"view {text!r} is not AZIMUTH,ELEVATION in degrees") from None
    return az, el


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``mbfmu view``."""
    from .options import finite_or_none, frame_count, positive
    p = subparsers.add_parser(
        "view", help="replay recorded results in 3D (window, MP4/GIF, PNG, standalone HTML)",
        description="Replay a recorded run. Without -o a window opens; the output's suffix chooses "
                    ".html (standalone page), .mp4/.gif (video) or .png/.jpg/.svg/.pdf (still at --time).")
    p.add_argument("results", help="result file (.npz, .csv or .mat)")
    p.add_argument("--model", help="plant: library name, module:Class, file.py:Class or robot.urdf "
                                    "(default: the plant named in the results' metadata)")
    p.add_argument("--param", action="append", type=_param, default=[], metavar="NAME=VALUE",
                   help="plant parameter (repeatable; overrides the metadata)")
    p.add_argument("--package-dir", action="append", default=[], metavar="DIR",
                   help="for a robot given as --model: a folder holding (or being) a package that its "
                        "package:// mesh URIs name; repeatable")
    p.add_argument("--unit", help="unit prefix of the plant's variables in a co-simulation result (arm for arm.q[1])")
    p.add_argument("-o", "--output", help="output file; suffix chooses the kind")
    p.add_argument("--speed", type=_checked(positive, "--speed"), default=1.0,
                   help="replay speed, x real time (default 1)")
    p.add_argument("--time", type=_checked(finite_or_none, "--time"), default=None,
                   help="time shown, s (still image; start of HTML/window)")
    p.add_argument("--fps", type=_checked(positive, "--fps"), default=25.0, help="video frames per second (default 25)")
    p.add_argument("--trail", action="append", default=[], metavar="BODY[:x,y,z]|SHAPE|BEAM@s",
                   help="trace a point: fixed to a body (body frame, m), a shape's origin, or on a beam's "
                        "deformed centre line at s m (default: its tip); repeatable")
    p.add_argument("--signal", action="append", default=[], help="plot a recorded signal beside the scene")
    p.add_argument("--view", type=_view, default=(-60.0, 25.0), metavar="AZ,EL",
                   help="initial view angle: azimuth, elevation in deg (default -60,25)")
    p.add_argument("--size", type=_size, default=(800, 600), help="image/video size, WIDTHxHEIGHT px")
    p.add_argument("--max-frames", type=_checked(frame_count, "--max-frames"), default=1500,
                   help="frames stored in an HTML replay (at least 2; default 1500)")
    p.add_argument("--hold", action="store_true", help="hold samples instead of interpolating between them")
    # "-60,25" (a negative azimuth) is a value, not an option: argparse would refuse it after --view
    p._negative_number_matcher = re.compile(r"^-\d+$|^-\d*\.\d+$|^-[\d.]+,-?[\d.]+$")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    from .plants import open_recording

    out = Path(args.output) if args.output else None
    suffix = out.suffix.lower() if out else ""
    if out and suffix not in (".html",) + VIDEO + IMAGE:
        raise InputError(f"output {args.output!r}: unknown suffix {suffix!r}; use .html, .mp4, .gif or an image")
    if out:
        from ..cosim.recording.output_path import check_writable
        check_writable(out, "the replay")  # before the results are read and the frames drawn
    params = dict(args.param)
    if args.package_dir:
        if not args.model:
            raise InputError("--package-dir is for a robot given as --model (robot.urdf or a robot's name)")
        params["package_dirs"] = [str(Path(d).resolve()) for d in args.package_dir]
    rec = open_recording(args.results, args.model, params, args.unit, args.trail,
                         interpolation="hold" if args.hold else "linear")
    if args.time is not None and not rec.t0 <= args.time <= rec.t1:
        raise InputError(f"--time {args.time} s is outside the recorded span [{rec.t0}, {rec.t1}] s")
    if suffix == ".html":
        import numpy as np

        from .camera import fit_camera
        from .html import write_html
        from .frame_times import decimated_times
        cam = fit_camera(rec, rec.frames(decimated_times(rec.time, 200)), azimuth=np.radians(args.view[0]),
                         elevation=np.radians(args.view[1]))
        write_html(rec, out, max_frames=args.max_frames, speed=args.speed, start=args.time, camera=cam,
                   signals=args.signal)
    elif suffix in VIDEO:
        import matplotlib
        matplotlib.use("Agg")
        from .mpl import save_video
        n = save_video(rec, out, fps=args.fps, speed=args.speed, signals=args.signal, size=args.size,
                       progress=True, t0=args.time, azimuth=args.view[0], elevation=args.view[1])
        print(f"{out}: {n} frames at {args.fps:g} fps")
        return 0
    elif suffix in IMAGE:
        import matplotlib
        matplotlib.use("Agg")
        from .mpl import save_still
        save_still(rec, out, rec.t0 if args.time is None else args.time, signals=args.signal, size=args.size,
                   azimuth=args.view[0], elevation=args.view[1])
    else:
        from .mpl import show
        show(rec, args.signal, t=args.time, speed=args.speed, azimuth=args.view[0], elevation=args.view[1])
        return 0
    print(out)
    return 0
