"""Install packages into a virtualenv with uv, from the indexes pip is configured with; pip if uv cannot.

``make setup`` and ``make setup-test`` call this. uv downloads and installs in parallel: torch and the
project took 12 s here against pip's 53-69 s, the same 85 packages at the same versions. uv reads no pip
configuration, so the index URLs, find-links, constraints, certificate, timeout and cache choice that pip would
use (its config files and ``PIP_*`` variables, as ``pip config list`` shows them, later sources winning) are
handed to it, with pip's rule of the best version over all indexes (``--index-strategy unsafe-best-match``)
and pip's bytecode compilation.
If uv cannot be installed or fails, pip installs the same arguments.

Usage: ``python tools/install.py VENV_PYTHON PIP_INSTALL_ARGUMENTS...``
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

# pip setting -> uv pip install option (settings with several values take the option once per value)
LIST_OPTIONS = {"index-url": "--index-url", "extra-index-url": "--extra-index-url", "find-links": "--find-links",
                "constraint": "--constraint"}
TRUE = {"1", "true", "yes", "on"}


def pip_settings(python: str) -> dict[str, str]:
    """pip's effective settings by name (``find-links``...): files first, then the environment."""
    listed = subprocess.run([python, "-m", "pip", "config", "list"], capture_output=True, text=True, check=True).stdout
    settings: dict[str, str] = {}
    for line in listed.splitlines():
        name, equals, value = line.partition("=")
        if equals:
            settings[name.rsplit(".", 1)[-1]] = str(ast.literal_eval(value))
    return settings


def uv_options(settings: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """The ``uv pip install`` options and environment that mirror pip's ``settings``."""
    # --compile-bytecode as pip does: without .pyc files every process compiles torch and the rest again at
    # import (PYTHONDONTWRITEBYTECODE is set on these machines: a fresh clone's `make test` took 1,012 s, not 805)
    options = ["--index-strategy", "unsafe-best-match", "--compile-bytecode"]
    for name, option in LIST_OPTIONS.items():
        for value in settings.get(name, "").split():
            options += [option, value]
    if settings.get("no-index", "").lower() in TRUE:
        options.append("--no-index")
    if settings.get("no-cache-dir", "").lower() in TRUE:
        options.append("--no-cache")
    env = dict(os.environ)
    if "cert" in settings:
        env["SSL_CERT_FILE"] = settings["cert"]
    if "default-timeout" in settings:
        env["UV_HTTP_TIMEOUT"] = settings["default-timeout"]
    return options, env


def main(argv: list[str]) -> int:
    python, arguments = argv[0], argv[1:]
    try:
        settings = pip_settings(python)
        subprocess.run([python, "-m", "pip", "install", "--quiet", "uv"], check=True)
        options, env = uv_options(settings)
        uv = Path(python).parent / "uv"
        subprocess.run([str(uv), "pip", "install", "--python", python, *options, *arguments], check=True, env=env)
        return 0
    except (subprocess.CalledProcessError, OSError, ValueError, SyntaxError) as error:
        print(f"tools/install.py: uv could not install ({error}); installing with pip", file=sys.stderr)
    return subprocess.run([python, "-m", "pip", "install", *arguments]).returncode


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
