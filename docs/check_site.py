"""Check the built documentation site: every link inside it resolves, and the
key pages open in headless Chromium with no console error.

Run by ``make docs`` after the build::

    python docs/check_site.py docs/_build/html

Links: every ``href`` and ``src`` of every page that points inside the site
must name an existing file, and a ``#fragment`` must name an ``id`` on the
target page. Figures: a tutorial page shows at least one image per code cell
of its script that draws a figure, and never the text of a figure object
(``<Figure size ...>``, what a figure pyplot does not track prints instead). Pages: each is opened through the Chrome DevTools Protocol;
uncaught exceptions, ``console.error`` calls and failed loads (the browser's
own log entries at level error) are failures. Exit status 1 lists them.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

#: Pages opened in the browser: the index, a tutorial with an embedded
#: replay, a plant page and an API page.
KEY_PAGES = ("index.html", "auto_tutorials/tutorial_1_library_plant.html", "plants/rigid_arm.html",
             "api/generated/mbfmu.cosim.simulate.html")
#: How long a page may take to load and run its scripts, s.
PAGE_TIMEOUT = 30.0


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name == "id" or (tag == "a" and name == "name"):
                self.ids.add(value or "")
            if name in ("href", "src") and value:
                self.links.append(value)


def _parse(path: Path) -> _Links:
    p = _Links()
    p.feed(path.read_text(errors="replace"))
    return p


def broken_links(site: Path) -> list[str]:
    """Links inside ``site`` that name a missing file or fragment."""
    # files under _static/ are assets (theme templates, the replays' own #t= links)
    pages = {p: _parse(p) for p in site.rglob("*.html") if "_static" not in p.relative_to(site).parts}
    problems = []
    for page, parsed in pages.items():
        for link in parsed.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith(("mailto:", "javascript:", "data:")):
                continue
            target = page if not parts.path else (page.parent / unquote(parts.path)).resolve()
            where = f"{page.relative_to(site)}: {link!r}"
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                problems.append(f"{where} -> missing {target}")
                continue
            if parts.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else _parse(target).ids
                if unquote(parts.fragment) not in ids:
                    problems.append(f"{where} -> no id {parts.fragment!r} in {target.relative_to(site)}")
    return problems


#: a code cell that draws a figure calls one of these
_DRAWS = re.compile(r"plt\.(subplots|figure|subplot)\(|\.plot\(|plot_histories\(|plot_result\(|"
                    r"bode_plot\(|nyquist_plot\(")
#: the repr of a matplotlib artist or a path, echoed by a cell that ends in an expression
_ECHO = re.compile(r">(Text\(|PosixPath\(|&lt;matplotlib\.|\[&lt;matplotlib\.)")
#: the images sphinx-gallery puts on a page for the figures of a cell
_IMAGE = re.compile(r'class\s*=\s*"[^"]*sphx-glr-(single|multi)-img')


def figure_cells(script: Path) -> int:
    """How many code cells of a sphinx-gallery ``script`` draw a figure."""
    text = script.read_text()
    body = re.sub(r'\A\s*""".*?"""', "", text, count=1, flags=re.S)  # the title block
    cells = re.split(r"^# %%.*$", body, flags=re.M)
    n = 0
    for cell in cells:
        code = "\n".join(line for line in cell.splitlines() if not line.lstrip().startswith("#"))
        n += bool(_DRAWS.search(code))
    return n


def missing_figures(site: Path, tutorials: Path) -> list[str]:
    """Tutorial pages of ``site`` with fewer images than their scripts draw figures."""
    problems = []
    for script in sorted(tutorials.glob("tutorial_*.py")):
        page = site / "auto_tutorials" / f"{script.stem}.html"
        if not page.exists():
            problems.append(f"page not built: auto_tutorials/{page.name}")
            continue
        html = page.read_text(errors="replace")
        want, have = figure_cells(script), len(_IMAGE.findall(html))
        if have < want:
            problems.append(f"auto_tutorials/{page.name}: {have} figures shown, {want} code cells draw one")
        if "&lt;Figure size" in html:
            problems.append(f"auto_tutorials/{page.name}: prints a figure object instead of showing it")
        echoed = _ECHO.search(html)
        if echoed:
            problems.append(f"auto_tutorials/{page.name}: prints the value of its last expression "
                            f"({echoed.group(0).strip('>')}...): end the cell with plt.show() or a statement")
    return problems


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    raise SystemExit("check_site: no chromium on PATH (apt-get install chromium)")


class _Browser:
    """A headless Chromium driven over the DevTools Protocol (one page at a time)."""

    def __init__(self) -> None:
        from websockets.sync.client import connect

        self._stack = contextlib.ExitStack()
        self.profile = tempfile.mkdtemp(prefix="mbfmu_docs_chromium_")
        self.proc = subprocess.Popen(
            [_chromium(), "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1",
             f"--user-data-dir={self.profile}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        url = None
        deadline = time.monotonic() + PAGE_TIMEOUT
        while time.monotonic() < deadline and url is None:
            line = self.proc.stderr.readline()
            m = re.search(r"DevTools listening on (ws://\S+)", line)
            if m:
                url = m.group(1)
        if url is None:
            self.close()
            raise SystemExit("check_site: chromium did not open its DevTools port")
        self.ws = self._stack.enter_context(connect(url, max_size=None, open_timeout=PAGE_TIMEOUT))
        self.next_id = 0

    def _send(self, method: str, params: dict | None = None, session: str | None = None) -> int:
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self.ws.send(json.dumps(msg))
        return self.next_id

    def _reply(self, msg_id: int, events: list) -> dict:
        while True:
            msg = json.loads(self.ws.recv(timeout=PAGE_TIMEOUT))
            if msg.get("id") == msg_id:
                return msg.get("result", {})
            events.append(msg)

    def errors(self, url: str) -> list[str]:
        """Console errors, uncaught exceptions and failed loads while ``url`` loads."""
        events: list = []
        target = self._reply(self._send("Target.createTarget", {"url": "about:blank"}), events)["targetId"]
        session = self._reply(self._send("Target.attachToTarget", {"targetId": target, "flatten": True}),
                              events)["sessionId"]
        for method in ("Runtime.enable", "Log.enable", "Page.enable"):
            self._reply(self._send(method, session=session), events)
        self._send("Page.navigate", {"url": url}, session)
        loaded = False
        deadline = time.monotonic() + PAGE_TIMEOUT
        settle = None
        while time.monotonic() < deadline:
            try:
                events.append(json.loads(self.ws.recv(timeout=0.5)))
            except TimeoutError:
                pass
            if not loaded and any(e.get("method") == "Page.loadEventFired" for e in events):
                loaded, settle = True, time.monotonic() + 2.0  # let the page's scripts run
            if settle is not None and time.monotonic() > settle:
                break
        self._reply(self._send("Target.closeTarget", {"targetId": target}), [])
        found = [] if loaded else [f"{url}: the page did not finish loading in {PAGE_TIMEOUT:g} s"]
        for e in events:
            method, p = e.get("method"), e.get("params", {})
            if method == "Runtime.exceptionThrown":
                d = p["exceptionDetails"]
                text = d.get("exception", {}).get("description") or d.get("text")
                found.append(f"{url}: uncaught exception: {text}")
            elif method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                args = " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))
                found.append(f"{url}: console.{p['type']}: {args}")
            elif method == "Log.entryAdded" and p["entry"].get("level") == "error":
                entry = p["entry"]
                found.append(f"{url}: {entry.get('source')}: {entry.get('text')} {entry.get('url', '')}".rstrip())
        return found

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._stack.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.profile, ignore_errors=True)


def console_errors(site: Path, pages=KEY_PAGES) -> list[str]:
    """Errors the browser reports while opening each of ``pages``."""
    missing = [p for p in pages if not (site / p).exists()]
    if missing:
        return [f"page not built: {p}" for p in missing]
    browser = _Browser()
    try:
        out = []
        for page in pages:
            out += browser.errors((site / page).resolve().as_uri())
        return out
    finally:
        browser.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("site", nargs="?", default=str(Path(__file__).parent / "_build" / "html"),
                    help="the built site (default docs/_build/html)")
    ap.add_argument("--page", action="append", help="page to open in the browser (repeatable)")
    ap.add_argument("--tutorials", default=str(Path(__file__).parent / "tutorials"),
                    help="the tutorial scripts (default docs/tutorials)")
    args = ap.parse_args(argv)
    site = Path(args.site)
    if not (site / "index.html").exists():
        print(f"check_site: {site} holds no built site (run make docs)", file=sys.stderr)
        return 1
    problems = broken_links(site)
    problems += missing_figures(site, Path(args.tutorials))
    problems += console_errors(site, tuple(args.page) if args.page else KEY_PAGES)
    for p in problems:
        print(p, file=sys.stderr)
    n_pages = sum(1 for _ in site.rglob("*.html"))
    print(f"check_site: {n_pages} pages, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    os.environ.setdefault("TMPDIR", tempfile.gettempdir())
    raise SystemExit(main())
