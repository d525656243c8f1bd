"""Headless Chromium for the tests that look at a rendered page: Debian's `chromium` package, installed
here when it is missing (never a browser build of Playwright's own), driven through Playwright's Python
package with the flags that work as root on a machine without a network."""

import io
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from PIL import Image

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SCREENSHOTS_ENV = "MOBILEMEM_SCREENSHOTS_DIR"  # where the README's screenshots are refreshed from
INSTALL = (["apt-get", "update"], ["apt-get", "install", "-y", "--no-install-recommends", "chromium"])


def chromium_path() -> Path:
    """/usr/bin/chromium, installed from Debian's packages first if it is absent. Where that cannot be
    done (not root, no apt-get, the install fails) the test is skipped, and fails under CI=true."""
    if CHROMIUM.exists():
        return CHROMIUM
    if os.geteuid() != 0:
        _unavailable(f"{CHROMIUM} is missing and installing it needs root")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in INSTALL:
        try:
            done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
        except (OSError, subprocess.TimeoutExpired) as exc:
            _unavailable(f"{' '.join(command)}: {exc}")
        if done.returncode != 0:
            _unavailable(f"{' '.join(command)} exited {done.returncode}: {done.stderr.strip()[-500:]}")
    if not CHROMIUM.exists():
        _unavailable(f"the chromium package installed no {CHROMIUM}")
    return CHROMIUM


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"headless Chromium is not available: {reason}", pytrace=False)
    pytest.skip(f"headless Chromium is not available: {reason}")


def keep_screenshot(png: bytes, folder: Path, name: str) -> Path:
    """A screenshot as a small PNG (96-colour palette, optimized) in `folder`, and a copy in
    MOBILEMEM_SCREENSHOTS_DIR when that is set."""
    image = Image.open(io.BytesIO(png)).convert("RGB")
    path = folder / name
    image.quantize(colors=96, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE).save(path, optimize=True)
    copy_to = os.environ.get(SCREENSHOTS_ENV)
    if copy_to:
        Path(copy_to).mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, Path(copy_to) / name)
    return path
