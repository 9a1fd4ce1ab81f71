"""Fabrics: templates, SimAI topology files and NetworkX graphs, all readers and writers of the
engine's one `Platform` (`clustersim.platform`).

- `Topology`: a view of a `Platform` with its name and the warnings of the template that built it.
- `read_simai`, `parse_simai`, `write_simai`: SimAI / gen_Topo_Template.py files (the engine's reader
  and writer).
- `to_networkx`, `from_networkx`: NetworkX graphs.
- `simai_template`, `template_params`, `TEMPLATES`: gen_Topo_Template.py's templates, one or more pods.
- `fat_tree`: k-ary three-tier fat-tree of GPU servers.
- `bisection_bandwidth`: max-flow between the two halves of the ranks.
"""

from clustersim.topology.fattree import fat_tree
from clustersim.topology.graph import from_networkx, to_networkx
from clustersim.topology.metrics import bisection_bandwidth
from clustersim.topology.model import KIND_CODES, KINDS, Link, Topology, parse_simai, read_simai, write_simai
from clustersim.topology.params import TEMPLATES, TemplateParams, template_params
from clustersim.topology.templates import file_name, simai_template
from clustersim.topology.units import format_delay, format_rate, parse_delay, parse_rate

__all__ = [
    "KINDS",
    "KIND_CODES",
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
    "parse_delay",
    "parse_rate",
    "parse_simai",
    "read_simai",
    "simai_template",
    "template_params",
    "to_networkx",
    "write_simai",
]
