"""clustersim: how long does one training iteration take on that cluster, and where does the time go?"""

from clustersim.analytical import AnalyticalResult, simulate
from clustersim.errors import InputError
from clustersim.table import Table

__all__ = ["AnalyticalResult", "InputError", "Table", "simulate"]
__version__ = "0.1.0"
