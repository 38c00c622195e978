"""A Prefect flow whose parameters reach the API (the flow run's page, Prefect's database) with credentials
in URLs masked (`http://user:***@host/v1`, flows/store/redact.py), while the flow itself gets them as given.

Prefect records a direct call's parameters through `Flow.serialize_parameters`; masking its output is
enough. A deployment's parameters are whatever the deployment or the UI form sent and are not touched.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from prefect import Flow

from evalduck.flows.store.redact import redact_urls

__all__ = ("RedactingFlow", "redacting_flow")


class RedactingFlow(Flow[..., Any]):
    """A Flow with URL credentials masked in the parameters it reports."""

    def serialize_parameters(self, parameters: dict[str, Any]) -> dict[str, Any]:
        return redact_urls(super().serialize_parameters(parameters))

    def with_options(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        """Prefect's copy with new options is a plain ``Flow`` (it calls ``Flow(...)``), which would report
        the real URLs (and, for ``run_evals``, in-memory rows) to the API; the copy keeps this class
        (subclasses add behaviour, not state)."""
        copy = super().with_options(*args, **kwargs)
        copy.__class__ = type(self)
        return copy


def redacting_flow(**options: Any) -> Callable[[Callable[..., Any]], RedactingFlow]:
    """`@flow(**options)` making a RedactingFlow."""
    return lambda fn: RedactingFlow(fn, **options)
