"""Headless Chromium on a standalone replay page: its window size, running it, and
the JSON data the page embeds."""
from __future__ import annotations

import json
import re
import subprocess

from tooling import need_tool

W, H = 480, 360  # window size [px] of the screenshots


def chromium(*args, timeout=90):
    """Run headless Chromium with ``args`` (a 3 s virtual-time budget); skips by name when it is missing."""
    exe = need_tool("chromium")
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
           "--disable-extensions", "--disable-background-networking", "--virtual-time-budget=3000", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def page_data(path):
    """The data object a replay page at ``path`` embeds."""
    text = path.read_text()
    m = re.search(r'<script type="application/json" id="mbfmu-data">(.*?)</script>', text, re.S)
    return json.loads(m.group(1).replace("<\\/", "</"))
