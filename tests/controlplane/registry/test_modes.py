"""Mode fields: recognised columns, extras under resources.__extras, defaults."""

from __future__ import annotations

import pytest
from dreamlake.controlplane.registry.modes import ModeFieldError, from_storage, to_storage


def test_extras_round_trip() -> None:
    fields = {
        "provider": "aws",
        "instance_type": "g5.xlarge",
        "image_id": "ami-1",
        "resources": {"gpu": 1},
        "runner": "docker",
        "nested": {"x": [1]},
    }
    stored = to_storage(fields)
    assert stored["resources"] == {
        "gpu": 1,
        "__extras": {"instance_type": "g5.xlarge", "image_id": "ami-1", "nested": {"x": [1]}},
    }
    assert stored["backend"] == "fabric" and stored["runner"] == "docker"
    assert "instance_type" not in stored
    assert from_storage(stored) == {**fields, "backend": "fabric"}


def test_defaults_and_any_string() -> None:
    assert from_storage(to_storage({})) == {"backend": "fabric", "runner": "process"}
    assert to_storage({"backend": "anything", "runner": "whatever"})["backend"] == "anything"


@pytest.mark.parametrize(
    "bad", [{"timeout_s": "soon"}, {"env": ["A"]}, {"resources": 3}, {"timeout_s": True}]
)
def test_shapes(bad: dict[str, object]) -> None:
    with pytest.raises(ModeFieldError):
        to_storage(bad)
