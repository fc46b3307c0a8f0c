"""Safe YAML that reads any ``!tag`` (``!providers.EC2`` and others) as plain data:
for the readers of one ``.dreamrc`` section that do not care about the tags."""

from __future__ import annotations

from functools import cache
from typing import Any


@cache
def tolerant_loader() -> type:
    """A ``yaml.SafeLoader`` subclass; a tagged node becomes its mapping, list or scalar."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    def _any(loader: yaml.SafeLoader, _suffix: str, node: yaml.Node) -> Any:
        if isinstance(node, yaml.MappingNode):
            return loader.construct_mapping(node, deep=True)
        if isinstance(node, yaml.SequenceNode):
            return loader.construct_sequence(node, deep=True)
        return loader.construct_scalar(node)  # type: ignore[arg-type]

    Loader.add_multi_constructor("!", _any)
    return Loader
