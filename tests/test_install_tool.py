"""``tools/install.py`` hands pip's configuration to uv: the same indexes, constraints and cache choice."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _tool():
    spec = importlib.util.spec_from_file_location("install_tool", REPO / "tools" / "install.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_pip_settings_read_files_then_the_environment_and_become_uv_options(tmp_path: Path) -> None:
    config = tmp_path / "pip.conf"
    config.write_text("[global]\nextra-index-url = file:///a/simple file:///b/simple\nfind-links = /from-file\n"
                      "constraint = /c.txt\n")
    env = {**os.environ, "PIP_CONFIG_FILE": str(config), "PIP_FIND_LINKS": "/from-env", "PIP_NO_CACHE_DIR": "1"}
    listed = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, env=env,
                            check=True).stdout
    assert "/from-env" in listed
    tool = _tool()
    saved = dict(os.environ)
    try:
        os.environ.update(env)
        settings = tool.pip_settings(sys.executable)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    assert settings["find-links"] == "/from-env"  # the environment overrides the file
    options, uv_env = tool.uv_options(settings)
    pairs = list(zip(options[::2], options[1::2]))
    assert ("--extra-index-url", "file:///a/simple") in pairs and ("--extra-index-url", "file:///b/simple") in pairs
    assert ("--find-links", "/from-env") in pairs and ("--find-links", "/from-file") not in pairs
    assert ("--constraint", "/c.txt") in pairs and ("--index-strategy", "unsafe-best-match") in pairs
    assert "--no-cache" in options and "--compile-bytecode" in options  # as pip: imports read .pyc files
