"""The JSON Schema of the placement decision (``decide.decide``'s document), the
contract an agent branches on. Snapshot-tested: a change must be deliberate."""

from __future__ import annotations

from typing import Any

from .decide import REASONS, STRATEGIES
from .request import REQUEST_FIELDS

_NUM = {"type": ["number", "null"], "minimum": 0}
_STR = {"type": ["string", "null"]}

OFFER: dict[str, Any] = {
    "type": "object",
    "required": [
        "provider",
        "offer",
        "launcher",
        "accelerator",
        "accelerators",
        "cpus",
        "memoryGb",
        "region",
        "zone",
        "spot",
        "pricePerHour",
    ],
    "properties": {
        "provider": {"type": "string"},
        "offer": {"type": "string", "description": "instance type, partition or host"},
        "launcher": {"type": "string"},
        "accelerator": _STR,
        "accelerators": {"type": "integer", "minimum": 0},
        "cpus": _NUM,
        "memoryGb": _NUM,
        "region": _STR,
        "zone": _STR,
        "spot": {"type": "boolean"},
        "pricePerHour": {
            **_NUM,
            "description": "from the operator's price tables; null when none has it",
        },
    },
}

REQUEST: dict[str, Any] = {
    "type": "object",
    "required": list(REQUEST_FIELDS),
    "properties": {
        "accelerator": _STR,
        "accelerators": {"type": "integer", "minimum": 0},
        "cpus": {"type": "number", "minimum": 0},
        "memoryGb": {"type": "number", "minimum": 0},
        "maxPricePerHour": _NUM,
        "spot": {"type": ["boolean", "null"]},
        "providers": {"type": "array", "items": {"type": "string"}},
        "excludeProviders": {"type": "array", "items": {"type": "string"}},
        "strategy": {"enum": list(STRATEGIES)},
        "ttlSeconds": {"type": "number", "minimum": 1},
    },
    "additionalProperties": False,
}

DECISION_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "CapacityDecision",
    "description": "Which offer serves a capacity request, and why every other offer does not.",
    "type": "object",
    "required": [
        "strategy",
        "request",
        "decidedAt",
        "considered",
        "chosen",
        "summary",
        "rejectedBy",
        "rejected",
    ],
    "additionalProperties": False,
    "properties": {
        "strategy": {"enum": list(STRATEGIES)},
        "request": REQUEST,
        "decidedAt": {"type": "string", "format": "date-time"},
        "considered": {"type": "integer", "minimum": 0},
        "chosen": {
            "oneOf": [
                {"type": "null"},
                {
                    **OFFER,
                    "required": [*OFFER["required"], "via", "waste"],
                    "properties": {
                        **OFFER["properties"],
                        "via": {
                            "enum": ["idle", "launch"],
                            "description": "an idle worker, or an instance launched for it",
                        },
                        "waste": {"type": "number", "minimum": 0, "maximum": 1},
                    },
                },
            ],
            "description": "null: nothing can serve now (a lease is then pending)",
        },
        "summary": {"type": "string", "description": "one sentence for a person"},
        "rejectedBy": {
            "type": "object",
            "propertyNames": {"enum": list(REASONS)},
            "additionalProperties": {"type": "integer", "minimum": 1},
        },
        "rejected": {
            "type": "array",
            "description": "every offer not chosen, in groups that share a provider, a "
            "reason and its sentence (an offer is in exactly one group)",
            "items": {
                "type": "object",
                "required": ["provider", "offers", "reason", "detail"],
                "additionalProperties": False,
                "properties": {
                    "provider": {"type": "string"},
                    "offers": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                    "reason": {"enum": list(REASONS)},
                    "detail": {"type": "string"},
                },
            },
        },
    },
}


def decision_schema() -> dict[str, Any]:
    return DECISION_SCHEMA
