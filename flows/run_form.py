"""EvalConfig's JSON schema shaped for the Prefect UI's Custom run form (the V2 UI of Prefect 3.9).

What that form does with a schema (ui-v2/src/components/schemas/ in Prefect's source) and what follows here:

- It lists an object's ``properties`` sorted by their ``position`` (then in order), each one a field; it
  ignores ``patternProperties``. So the few fields a person sets come first, the other run options sit in
  one ``advanced`` field, and the flat run options the API, ``prefect.yaml`` and the CLI send
  (``{"concurrency": 2, ...}``) are still checked by the server, by ``patternProperties`` of their own schema.
- An ``anyOf`` is a row of tabs; the one whose type matches the value is open. ``advanced`` is an
  ``anyOf`` of "Defaults" (an empty object: nothing shown) and "Change" (the options, with their
  defaults): collapsed until a person opens it.
- A ``str | None = None`` field (pydantic: ``anyOf`` of the type and null, default null) opens its "None"
  tab, which reads 'Property is type "None"'. Here such a field is its type alone, without a default: the
  form shows a plain input, and leaves the field out while it is empty (pydantic's None applies). The
  server's check lets a property without a default be null (prefect.utilities.schema_tools.validation,
  ``_fix_null_typing``), so a null sent through the API is still accepted.
"""

from __future__ import annotations

from typing import Any

__all__ = ("ADVANCED", "FORM_FIELDS", "plain_optionals", "shape_run_form")

# The fields a person fills in, in this order; every other property goes in ADVANCED.
FORM_FIELDS: tuple[str, ...] = ("dataset", "scorers", "target", "judge_model", "name")
ADVANCED = "advanced"
_NULL = {"type": "null"}


def _without_null(prop: dict[str, Any]) -> dict[str, Any]:
    """``X | None`` with default None as X alone, with the field's title and description."""
    options = prop.get("anyOf")
    if "default" not in prop or prop["default"] is not None or not options or _NULL not in options:
        return prop
    kept = [option for option in options if option != _NULL]
    if len(kept) != 1:
        return prop
    rest = {key: value for key, value in prop.items() if key not in ("anyOf", "default")}
    return {**kept[0], **rest}


def _advanced(properties: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "title": "Advanced options",
        "description": "Concurrency, retries, timeouts, cache, database, report, runner... Defaults: each as "
                       "its description says. Change: set them here.",
        "anyOf": [
            {"title": "Defaults", "type": "object", "properties": {}, "additionalProperties": False},
            {"title": "Change", "type": "object", "properties": properties, "additionalProperties": False},
        ],
    }


def _positioned(properties: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each property with its ``position`` (the form's order; a server on PostgreSQL reorders JSON keys)."""
    return {key: {**prop, "position": i} for i, (key, prop) in enumerate(properties.items())}


def plain_optionals(schema: dict[str, Any]) -> None:
    """A nested model's ``X | None = None`` properties as X alone, as the form's own (a scorer's ``samples``)."""
    schema["properties"] = {key: _without_null(prop) for key, prop in schema["properties"].items()}


def shape_run_form(schema: dict[str, Any]) -> None:
    """Reshape EvalConfig's JSON schema in place (pydantic's ``json_schema_extra``)."""
    original: dict[str, dict[str, Any]] = schema["properties"]
    plain = {key: _without_null(prop) for key, prop in original.items()}
    advanced = {key: prop for key, prop in plain.items() if key not in FORM_FIELDS}
    schema["properties"] = _positioned({**{key: plain[key] for key in FORM_FIELDS},
                                        ADVANCED: _advanced(_positioned(advanced))})
    schema["patternProperties"] = {f"^{key}$": original[key] for key in advanced}
