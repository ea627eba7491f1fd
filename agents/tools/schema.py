"""JSON Schema for tool arguments, rendered for the model APIs.

``clean_schema`` turns a pydantic model into a self-contained schema (``$ref`` inlined, titles
dropped). ``strict_schema`` makes that schema fit OpenAI's strict mode: every object closed with
``additionalProperties: false``, every property listed in ``required`` (optional ones become
nullable, and ``Registry.execute`` maps an explicit ``null`` back to the default), and keywords
strict mode does not accept (``default``, numeric and length bounds) moved into the description.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from typing import Any, get_args

from pydantic import BaseModel

#: Keywords moved into the description in strict mode (validation still happens on our side).
_STRICT_MOVED = {
    "minimum": ">=",
    "maximum": "<=",
    "exclusiveMinimum": ">",
    "exclusiveMaximum": "<",
    "minLength": "min length",
    "maxLength": "max length",
    "minItems": "min items",
    "maxItems": "max items",
}


def clean_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON Schema with every ``$ref`` inlined and ``title`` keys removed: a copy of the one made at the
    model's first use (pydantic's schema generation costs about 0.5 ms a tool, and every model call offers ten or
    more tools)."""
    return copy.deepcopy(_clean_schema(model))


@cache
def _clean_schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})
    return _inline(schema, defs)


def _inline(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        if "$ref" in node:
            name = node["$ref"].rsplit("/", 1)[-1]
            target = _inline(copy.deepcopy(defs[name]), defs)
            extra = {k: _inline(v, defs) for k, v in node.items() if k not in ("$ref", "title")}
            return {**target, **extra}
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "title" and isinstance(value, str):
                continue
            if key == "properties" and isinstance(value, dict):
                out[key] = {name: _inline(sub, defs) for name, sub in value.items()}
            else:
                out[key] = _inline(value, defs)
        return out
    if isinstance(node, list):
        return [_inline(v, defs) for v in node]
    return node


def strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of a clean schema that OpenAI strict mode accepts (see the module docstring)."""
    return _strict(copy.deepcopy(schema))


def _notes(node: dict[str, Any]) -> list[str]:
    notes = []
    for key, word in _STRICT_MOVED.items():
        if key in node:
            notes.append(f"{word} {node.pop(key)}")
    return notes


def _describe(node: dict[str, Any], notes: list[str]) -> None:
    if notes:
        desc = node.get("description", "")
        node["description"] = (desc + " " if desc else "") + "(" + "; ".join(notes) + ")"


def _nullable(node: dict[str, Any]) -> dict[str, Any]:
    """``node`` that also accepts null (unchanged when it already does)."""
    if "anyOf" in node:
        if not any(alt.get("type") == "null" for alt in node["anyOf"]):
            node["anyOf"].append({"type": "null"})
        return node
    typ = node.get("type")
    if isinstance(typ, str) and "enum" not in node and typ != "object":
        node["type"] = [typ, "null"]
        return node
    if isinstance(typ, list):
        if "null" not in typ:
            typ.append("null")
        return node
    desc = node.pop("description", None)
    wrapped: dict[str, Any] = {"anyOf": [node, {"type": "null"}]}
    if desc:
        wrapped["description"] = desc
    return wrapped


def _strict(node: Any) -> Any:
    if isinstance(node, list):
        return [_strict(v) for v in node]
    if not isinstance(node, dict):
        return node
    notes = _notes(node)
    if "default" in node:
        default = node.pop("default")
        if default is not None:
            notes.append(f"default {json.dumps(default)}")
    for key in ("anyOf", "oneOf", "allOf"):
        if key in node:
            for alt in node[key]:  # bounds of a union member are described on the property itself
                if isinstance(alt, dict):
                    notes += _notes(alt)
            node[key] = [_strict(alt) for alt in node[key]]
    if "items" in node:
        node["items"] = _strict(node["items"])
    if node.get("type") == "object" or "properties" in node:
        props = node.get("properties", {})
        required = set(node.get("required", []))
        new_props = {}
        for name, sub in props.items():
            sub = _strict(sub)
            new_props[name] = sub if name in required else _nullable(sub)
        node["properties"] = new_props
        node["required"] = list(new_props)
        node["additionalProperties"] = False
        node.setdefault("type", "object")
    _describe(node, notes)
    return node


def drop_nulls_for_defaults(model: type[BaseModel], arguments: dict[str, Any]) -> dict[str, Any]:
    """Arguments with explicit ``null`` removed for optional fields (nested models too), so their defaults apply.

    Strict-mode models must send every property; they send ``null`` for the ones they leave out.
    """
    out = dict(arguments)
    for name, field in model.model_fields.items():
        if name not in out:
            continue
        value = out[name]
        if value is None and not field.is_required():
            del out[name]
            continue
        nested = _model_in(field.annotation)
        if nested is None:
            continue
        if isinstance(value, dict):
            out[name] = drop_nulls_for_defaults(nested, value)
        elif isinstance(value, list):
            out[name] = [drop_nulls_for_defaults(nested, v) if isinstance(v, dict) else v for v in value]
    return out


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model inside an annotation such as ``Item``, ``list[Item]`` or ``list[Item] | None``."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None
