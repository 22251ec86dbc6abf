"""prometheus-adapter (issue 24): deploy/prometheus/adapter-values.yaml are Helm values in the
format the chart reads, and the configuration the chart makes of them is one the adapter
accepts and that serves the metric the lobby's HPA asks for.

The chart's ConfigMap is rendered here the way its template does it (chart 5.3.0,
templates/configmap.yaml: ``rules:``, the chart's default rules when ``rules.default``, then
``tpl (toYaml .Values.rules.custom) . | indent 4``, all inside ``config.yaml: |``), and the
result is checked against the adapter's configuration types (pkg/config/config.go:
MetricsDiscoveryConfig, DiscoveryRule, ResourceMapping, NameMapping; the adapter loads it
strictly). Helm itself is not installed here; the same renderer, given the rules the way the
deploy README used to pass them (``--set-file rules.custom=<file>``: a string), produces a
configuration the check refuses.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

yaml = pytest.importorskip("yaml", reason="PyYAML is needed to parse deploy/ (PyYAML>=6,<7)")

ROOT = Path(__file__).resolve().parents[3]
VALUES = ROOT / "deploy" / "prometheus" / "adapter-values.yaml"
CHART_VERSION = "5.3.0"

RULE_KEYS = {"seriesQuery", "seriesFilters", "resources", "name", "metricsQuery",
             "labelValueReplacements"}
CONFIG_KEYS = {"rules", "resourceRules", "externalRules"}


class _GoYaml(yaml.SafeDumper):
    """go-yaml's output, which Helm's toYaml (sigs.k8s.io/yaml) is: block style, sorted
    keys, multi-line strings as literal blocks."""


_GoYaml.add_representer(str, lambda d, s: d.represent_scalar(
    "tag:yaml.org,2002:str", s, style="|" if "\n" in s else None))


def to_yaml(value: Any) -> str:
    return yaml.dump(value, Dumper=_GoYaml, default_flow_style=False,
                     sort_keys=True).rstrip("\n")


def render_configmap_data(values: dict) -> str:
    """The chart's templates/configmap.yaml ``data:`` block for these values (the parts this
    deployment uses: rules.default false or true, rules.custom)."""
    rules = values.get("rules", {})
    out = ["data:", "  config.yaml: |"]
    if rules.get("default") or rules.get("custom"):
        out.append("    rules:")
        if rules.get("default"):
            out.append("    - seriesQuery: '{namespace!=\"\",__name__!~\"^container_.*\"}'\n"
                       "      seriesFilters:\n      - isNot: .*_total$\n"
                       "      resources:\n        template: <<.Resource>>\n"
                       "      name:\n        matches: \"\"\n        as: \"\"\n"
                       "      metricsQuery: sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)")
        if rules.get("custom"):
            text = to_yaml(rules["custom"])
            # tpl evaluates Go template actions: a rule may not carry "{{" (the adapter's own
            # templates use << >>, which tpl leaves alone)
            assert "{{" not in text, "rules.custom would be evaluated by the chart's tpl"
            out.append(textwrap.indent(text, "    "))
    return "\n".join(out) + "\n"


class Unparsable(str):
    """config.yaml that is not YAML at all (the adapter exits at start)."""


def adapter_config(values: dict) -> Any:
    """config.yaml as the adapter reads it from the ConfigMap."""
    text = yaml.safe_load(render_configmap_data(values))["data"]["config.yaml"]
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        return Unparsable(str(exc))


def config_problems(config: Any) -> list[str]:
    """Where ``config`` does not fit the adapter's MetricsDiscoveryConfig (strict load)."""
    if isinstance(config, Unparsable):
        return [f"config.yaml does not parse, not a list of rules: {config}"]
    if not isinstance(config, dict):
        return [f"config.yaml is {type(config).__name__}, not a mapping"]
    problems = [f"unknown key {k}" for k in config if k not in CONFIG_KEYS]
    rules = config.get("rules")
    if not isinstance(rules, list):
        return [*problems, f"rules is {type(rules).__name__}, not a list of rules"]
    for i, rule in enumerate(rules):
        if not isinstance(rule, dict):
            problems.append(f"rules[{i}] is {type(rule).__name__}")
            continue
        problems += [f"rules[{i}]: unknown key {k}" for k in rule if k not in RULE_KEYS]
        if not isinstance(rule.get("seriesQuery"), str) or not rule["seriesQuery"]:
            problems.append(f"rules[{i}]: seriesQuery missing")
        resources = rule.get("resources", {})
        if not isinstance(resources, dict) or set(resources) - {"template", "overrides"}:
            problems.append(f"rules[{i}]: resources has template and/or overrides only")
        else:
            for label, target in resources.get("overrides", {}).items():
                if not isinstance(target, dict) or set(target) - {"group", "resource"} \
                        or not target.get("resource"):
                    problems.append(f"rules[{i}]: override {label} needs a resource")
        name = rule.get("name", {})
        if not isinstance(name, dict) or set(name) - {"matches", "as"}:
            problems.append(f"rules[{i}]: name has matches and as only")
        for f in rule.get("seriesFilters") or []:
            if not isinstance(f, dict) or len(f) != 1 or set(f) - {"is", "isNot"}:
                problems.append(f"rules[{i}]: a series filter is one of is / isNot")
        if "metricsQuery" in rule and not isinstance(rule["metricsQuery"], str):
            problems.append(f"rules[{i}]: metricsQuery is a string")
    return problems


@pytest.fixture(scope="module")
def values() -> dict:
    return yaml.safe_load(VALUES.read_text(encoding="utf-8"))


def test_rules_custom_is_a_list_of_rules_as_the_chart_declares(values: dict) -> None:
    assert isinstance(values["rules"]["custom"], list) and values["rules"]["custom"]
    assert all(isinstance(rule, dict) for rule in values["rules"]["custom"])
    assert values["prometheus"]["url"].startswith("http") and values["prometheus"]["port"]


def test_the_chart_renders_a_configuration_the_adapter_accepts(values: dict) -> None:
    config = adapter_config(values)
    assert config_problems(config) == []
    assert config["rules"] == values["rules"]["custom"]   # default rules off
    with_defaults = adapter_config({**values, "rules": {**values["rules"], "default": True}})
    assert config_problems(with_defaults) == [] and len(with_defaults["rules"]) == 2


def test_the_string_the_readme_used_to_pass_is_refused() -> None:
    """``--set-file rules.custom=<the old rules file>`` makes rules.custom a string: the chart
    writes it under ``rules:`` as a string, which the adapter cannot load as rules."""
    old = "rules:\n  - seriesQuery: 'paiju_lobby_sessions{namespace!=\"\",pod!=\"\"}'\n"
    problems = config_problems(adapter_config({"rules": {"default": False, "custom": old}}))
    assert problems and "not a list of rules" in problems[0]
    assert config_problems({"rules": [{"seriesQuery": "x", "resource": {}}]})   # a typo


def test_the_adapter_serves_the_metric_the_lobby_hpa_asks_for(values: dict) -> None:
    from tests.unit.deploy.test_deploy_k8s import K8S, hpas, render
    from tests.unit.deploy.test_deploy_monitoring import SERIES

    (pods,) = [m for m in hpas(render(K8S / "overlays" / "prod"))["lobby"]["spec"]["metrics"]
               if m["type"] == "Pods"]
    wanted = pods["pods"]["metric"]["name"]
    (rule,) = [r for r in adapter_config(values)["rules"] if r["name"]["as"] == wanted]
    series = re.match(r"(\w+)\{", rule["seriesQuery"]).group(1)
    assert series in SERIES and re.fullmatch(rule["name"]["matches"], series)
    # a Pods metric is read per pod of the HPA's namespace: both labels map to resources
    assert rule["resources"]["overrides"] == {"namespace": {"resource": "namespace"},
                                              "pod": {"resource": "pod"}}
    for placeholder in ("<<.Series>>", "<<.LabelMatchers>>", "<<.GroupBy>>"):
        assert placeholder in rule["metricsQuery"]


def test_the_install_instructions_pass_the_values_file_not_a_string() -> None:
    for path in (ROOT / "deploy" / "README.md", VALUES, ROOT / "deploy" / "k8s" / "overlays"
                 / "prod" / "hpa.yaml"):
        text = path.read_text(encoding="utf-8")
        assert "--set-file rules.custom" not in text.replace(
            "(--set-file rules.custom=...)", ""), path
        assert "adapter-rules.yaml" not in text, path
    readme = (ROOT / "deploy" / "README.md").read_text(encoding="utf-8")
    assert f"--version {CHART_VERSION} -n monitoring -f deploy/prometheus/adapter-values.yaml" \
        in " ".join(readme.split())
