"""Fabrics: templates, SimAI topology files and NetworkX graphs, all readers and writers of the
engine's one `Platform` (`clustersim.platform`).

- `Topology`: a view of a `Platform` with its name and the warnings of the template that built it.
- `read_simai`, `parse_simai`, `write_simai`: SimAI / gen_Topo_Template.py files (the engine's reader
  and writer).
- `to_networkx`, `from_networkx`: NetworkX graphs.
- `simai_template`, `template_params`, `TEMPLATES`: gen_Topo_Template.py's templates, one or more pods,
  and `fat_tree`: a k-ary fat-tree — all built by the engine (`platform/templates/`).
- `bisection_bandwidth`, `max_flow`: maximum flows under the engine's reachability rule.
"""

from clustersim.topology.graph import from_networkx, to_networkx
from clustersim.topology.metrics import bisection_bandwidth, max_flow
from clustersim.topology.model import KIND_CODES, KINDS, Link, Topology, parse_simai, read_simai, write_simai
from clustersim.topology.templates import (
    FLAGS,
    PARAMETERS,
    TEMPLATES,
    TemplateParams,
    fat_tree,
    file_name,
    simai_template,
    template_params,
)
from clustersim.topology.units import format_delay, format_rate, parse_delay, parse_rate

__all__ = [
    "FLAGS",
    "KINDS",
    "KIND_CODES",
    "PARAMETERS",
    "TEMPLATES",
    "Link",
    "TemplateParams",
    "Topology",
    "bisection_bandwidth",
    "fat_tree",
    "file_name",
    "format_delay",
    "format_rate",
    "from_networkx",
    "max_flow",
    "parse_delay",
    "parse_rate",
    "parse_simai",
    "read_simai",
    "simai_template",
    "template_params",
    "to_networkx",
    "write_simai",
]
