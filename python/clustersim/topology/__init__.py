"""Fabrics: the `Topology` object, SimAI topology files, NetworkX, and templates.

- `Topology`, `Link`: typed nodes (gpu, nvswitch, switch) and full-duplex links (bytes/s, s).
- `read_simai`, `parse_simai`, `format_simai`: SimAI / gen_Topo_Template.py files.
- `to_networkx`, `from_networkx`: NetworkX graphs.
- `simai_template`, `template_params`, `TEMPLATES`: gen_Topo_Template.py's templates, one or more pods.
- `fat_tree`: k-ary three-tier fat-tree of GPU servers.
"""

from clustersim.topology.fattree import fat_tree
from clustersim.topology.graph import from_networkx, to_networkx
from clustersim.topology.metrics import bisection_bandwidth
from clustersim.topology.model import KIND_CODES, KINDS, Link, Topology, TopologyArrays
from clustersim.topology.params import TEMPLATES, TemplateParams, template_params
from clustersim.topology.simai_file import format_simai, parse_simai, read_simai
from clustersim.topology.templates import file_name, simai_template
from clustersim.topology.units import format_delay, format_rate, parse_delay, parse_rate

__all__ = [
    "KINDS",
    "KIND_CODES",
    "TEMPLATES",
    "Link",
    "TemplateParams",
    "Topology",
    "TopologyArrays",
    "bisection_bandwidth",
    "fat_tree",
    "file_name",
    "format_delay",
    "format_rate",
    "format_simai",
    "from_networkx",
    "parse_delay",
    "parse_rate",
    "parse_simai",
    "read_simai",
    "simai_template",
    "template_params",
    "to_networkx",
]
