"""Fixtures shared by the deploy tests: the scripts of deploy/ loaded as modules (deploy/
is not a package: the scripts run before any virtualenv exists)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

DEPLOY = Path(__file__).resolve().parents[3] / "deploy"


def deploy_script(relative: str) -> ModuleType:
    """deploy/<relative> (a .py file) loaded as a module."""
    name = "paiju_deploy_" + relative.replace("/", "_").removesuffix(".py")
    spec = importlib.util.spec_from_file_location(name, DEPLOY / relative)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def inputs() -> ModuleType:
    return deploy_script("inputs.py")
