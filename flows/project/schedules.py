"""Switching a deployment's schedules on or off, through Prefect's client: `evalduck schedule enable|disable`.

`evalduck init` writes every schedule inactive (a laptop should not start evals nobody asked for), and
`evalduck serve` deploys them so; this is the one step that makes a schedule run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evalduck.errors import EvalduckError

__all__ = ("ScheduleError", "Switched", "switch_schedules")


class ScheduleError(EvalduckError, RuntimeError):
    """An unknown deployment (the names there are listed), one without schedules, or an API that refused."""


@dataclass(frozen=True)
class Switched:
    """A deployment's schedules after the switch: ``active`` for each, and how each is described."""

    deployment: str
    active: bool
    schedules: list[str]


def _describe(schedule: Any) -> str:
    inner = schedule.schedule
    for field in ("cron", "interval", "rrule"):
        value = getattr(inner, field, None)
        if value is not None:
            zone = getattr(inner, "timezone", None)
            text = f"every {value.total_seconds():g} s" if field == "interval" else f"{field} {value}"
            return text + (f" {zone}" if zone and field == "cron" else "")
    return str(inner)


def _full_names(client: Any, deployments: list[Any]) -> list[str]:
    """``flow/deployment`` for each (a bare name can belong to deployments of two flows)."""
    flows: dict[Any, str] = {}
    for d in deployments:
        if d.flow_id not in flows:
            flows[d.flow_id] = client.read_flow(d.flow_id).name
    return [f"{flows[d.flow_id]}/{d.name}" for d in deployments]


def switch_schedules(api_url: str, name: str, active: bool) -> Switched:
    """Every schedule of the deployment ``name`` (``deployment`` or ``flow/deployment``) on the server at
    ``api_url`` set ``active``; Prefect's client sends PREFECT_API_AUTH_STRING (set it around the call).

    Raises:
        ScheduleError: no such deployment (the deployments there are named), a bare name that two flows
            share, a deployment without schedules, or the API refused.
    """
    import httpx
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    try:
        with temporary_settings({PREFECT_API_URL: api_url}), get_client(sync_client=True) as client:
            deployments = client.read_deployments()
            names = _full_names(client, deployments)
            matches = [d for d, full in zip(deployments, names, strict=True) if name in (d.name, full)]
            if not matches:
                there = ", ".join(sorted({d.name for d in deployments})) or "none (run `evalduck serve` to deploy prefect.yaml)"
                raise ScheduleError(f"no deployment {name!r} on {api_url}; deployments: {there}")
            if len(matches) > 1:
                both = ", ".join(full for d, full in zip(deployments, names, strict=True) if d in matches)
                raise ScheduleError(f"{name!r} names {len(matches)} deployments ({both}): give flow/deployment")
            (deployment,) = matches
            if not deployment.schedules:
                raise ScheduleError(f"deployment {name!r} has no schedule: add one under its `schedules:` in "
                                    "prefect.yaml, then run `evalduck serve` again")
            for schedule in deployment.schedules:
                client.update_deployment_schedule(deployment.id, schedule.id, active=active)
            return Switched(deployment.name, active, [_describe(s) for s in deployment.schedules])
    except httpx.HTTPStatusError as exc:
        hint = " (basic auth: set PREFECT_API_AUTH_STRING)" if exc.response.status_code == 401 else ""
        raise ScheduleError(f"the Prefect API at {api_url} refused {exc.request.url.path}: {exc}{hint}") from None
    except httpx.HTTPError as exc:
        raise ScheduleError(f"the Prefect API at {api_url} did not answer ({exc})") from None
