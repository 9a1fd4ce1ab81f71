"""clustersim: how long does one training iteration take on that cluster, and where does the time go?"""

from clustersim.analytical import AnalyticalResult, simulate
from clustersim.errors import InputError, InternalError
from clustersim.table import Table
from clustersim.workload import Workload

__all__ = ["AnalyticalResult", "InputError", "InternalError", "Table", "Workload", "simulate"]
__version__ = "0.1.0"
