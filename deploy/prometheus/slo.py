"""Writes slo-rules.yml: the recording rules and the burn-rate alerts of Paiju's
service-level objectives (docs/slo.md), in the multi-window, multi-burn-rate form of the SRE
workbook ("Alerting on SLOs", table 5-8): a page when the error budget of 30 days burns
14.4 times too fast over 1 h (and still over the last 5 min) or 6 times over 6 h (and 30
min); a ticket at 3 times over 1 day (and 2 h) or once over 3 days (and 6 h).

    python deploy/prometheus/slo.py            # rewrite slo-rules.yml
    python deploy/prometheus/slo.py --check    # exit 1 if it is out of date

tests/unit/deploy/test_deploy_monitoring.py fails while slo-rules.yml is stale, and
deploy/prometheus/tests/slo_test.yml (promtool) fires and silences every alert written here.
Standard library and PyYAML (the deploy tests' dependency) only.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NamedTuple

HERE = Path(__file__).resolve().parent
OUT = HERE / "slo-rules.yml"
RUNBOOKS = "https://git.example.com/paiju/blob/main/docs/runbooks.md"   # ADAPT: your repository
PERIOD = "30d"
# Every window a burn condition reads; each gets one recording rule per SLO.
WINDOWS = ("5m", "30m", "1h", "2h", "6h", "1d", "3d")
# (alert suffix, severity, for, [(burn rate, long window, short window)])
BURNS = (
    ("Fast", "critical", "2m", ((14.4, "1h", "5m"), (6.0, "6h", "30m"))),
    ("Slow", "warning", "15m", ((3.0, "1d", "2h"), (1.0, "3d", "6h"))),
)
HEALTH = 'method!~"/grpc.health.v1.Health/.*|/grpc.reflection.*"'
# Status codes that are the service's fault; CANCELLED (the client went away),
# NOT_FOUND, INVALID_ARGUMENT, PERMISSION_DENIED... are the caller's.
SERVER_FAULTS = "UNKNOWN|INTERNAL|UNAVAILABLE|DEADLINE_EXCEEDED|DATA_LOSS"


class Slo(NamedTuple):
    name: str          # the recording rules' label slo=
    alert: str         # alerts are <alert>BudgetBurnFast / ...Slow
    objective: float   # the share of good events over PERIOD
    what: str          # for the summary: "<what> is burning ..."
    errors: str        # bad events per second in a namespace; {w} is the window
    total: str         # all events per second in a namespace


SLOS = (
    Slo("moves", "PaijuMoveLatency", 0.999,
        "move latency (answered within 200 ms)",
        "sum by (namespace) (rate(paiju_table_action_seconds_count[{w}]))"
        ' - sum by (namespace) (rate(paiju_table_action_seconds_bucket{{le="0.2"}}[{w}]))',
        "sum by (namespace) (rate(paiju_table_action_seconds_count[{w}]))"),
    Slo("settlements", "PaijuSettlementDelay", 0.999,
        "settlement delay (written within 5 s of the hand's end)",
        "sum by (namespace) (rate(paiju_records_settlement_delay_seconds_count[{w}]))"
        ' - sum by (namespace) (rate(paiju_records_settlement_delay_seconds_bucket{{le="5.0"}}[{w}]))',
        "sum by (namespace) (rate(paiju_records_settlement_delay_seconds_count[{w}]))"),
    Slo("logins", "PaijuLogin", 0.999,
        "login success (valid tokens that get a session)",
        'sum by (namespace) (rate(paiju_lobby_logins_total{{result="unavailable"}}[{w}]))',
        'sum by (namespace) (rate(paiju_lobby_logins_total{{result=~"ok|unavailable"}}[{w}]))'),
    Slo("grpc", "PaijuGrpcError", 0.999,
        "gRPC success (calls that end without a server-side error)",
        f'sum by (namespace) (rate(paiju_grpc_requests_total{{{{code=~"{SERVER_FAULTS}", '
        f'{HEALTH}}}}}[{{w}}]))',
        f"sum by (namespace) (rate(paiju_grpc_requests_total{{{{{HEALTH}}}}}[{{w}}]))"),
)


def record_name(window: str) -> str:
    return f"paiju:slo_errors:ratio_rate{window}"


def anchor(alert: str) -> str:
    """The heading id GitHub, GitLab and Gitea give "## <alert>" in docs/runbooks.md."""
    return alert.lower()


def _number(x: float) -> str:
    return f"{x:.6g}"


def recording_group(slo: Slo) -> dict:
    return {"name": f"paiju-slo-{slo.name}-records", "rules": [
        {"record": record_name(w),
         # "or 0 * total": a namespace with events but no bad one has no error series at all
         # (a counter's label value exists from its first increment): its ratio is 0, not
         # missing
         "expr": f"(\n  ({slo.errors.format(w=w)})\n  or\n  0 * ({slo.total.format(w=w)})\n)\n"
                 f"/\n({slo.total.format(w=w)})\n",
         "labels": {"slo": slo.name}}
        for w in WINDOWS]}


def alert_rule(slo: Slo, suffix: str, severity: str, wait: str,
               conditions: tuple[tuple[float, str, str], ...]) -> dict:
    budget = 1 - slo.objective
    selector = f'{{slo="{slo.name}"}}'
    parts = [f"(\n  {record_name(long)}{selector} > {_number(burn * budget)}\n"
             f"  and\n  {record_name(short)}{selector} > {_number(burn * budget)}\n)"
             for burn, long, short in conditions]
    name = f"{slo.alert}BudgetBurn{suffix}"
    windows = " or ".join(f"{_number(b)}x over {long_w} and {short_w}"
                          for b, long_w, short_w in conditions)
    return {
        "alert": name,
        "expr": "\nor\n".join(parts) + "\n",
        "for": wait,
        "labels": {"severity": severity, "slo": slo.name},
        "annotations": {
            "summary": f"{{{{ $labels.namespace }}}}: {slo.what} is burning its {PERIOD} "
                       f"error budget too fast",
            "description": f"Objective {_number(slo.objective * 100)}% over {PERIOD}; the "
                           f"error ratio is {{{{ $value | humanizePercentage }}}} "
                           f"(burn {windows}).",
            "runbook_url": f"{RUNBOOKS}#{anchor(name)}",
        },
    }


def build() -> dict:
    groups = [recording_group(slo) for slo in SLOS]
    groups.append({"name": "paiju-slo-burn", "rules": [
        alert_rule(slo, suffix, severity, wait, conditions)
        for slo in SLOS for suffix, severity, wait, conditions in BURNS]})
    return {"groups": groups}


HEADER = """\
# Generated by deploy/prometheus/slo.py from the SLOs of docs/slo.md: do not edit (the tests
# fail while it is stale). Recording rules paiju:slo_errors:ratio_rate<window>{slo} (error
# ratio per namespace) and the burn-rate alerts <SLO>BudgetBurnFast (page) / Slow (ticket).
"""


def render() -> str:
    import yaml  # here, so that the dashboard generator reads SLOS without PyYAML

    class Dumper(yaml.SafeDumper):
        """Multi-line strings (the expressions) as literal blocks."""

    def literal(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
        return dumper.represent_scalar("tag:yaml.org,2002:str", data,
                                       style="|" if "\n" in data else None)

    Dumper.add_representer(str, literal)
    return HEADER + yaml.dump(build(), Dumper=Dumper, sort_keys=False, width=100,
                              allow_unicode=True)


def main() -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from generated import write_or_check

    return write_or_check(OUT, render, "deploy/prometheus/slo.py", __doc__.splitlines()[0])


if __name__ == "__main__":
    sys.exit(main())
