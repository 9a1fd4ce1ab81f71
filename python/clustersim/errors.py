"""clustersim's exceptions: `InputError` for bad input (the message names the file, line and
field), `InternalError` for a broken engine invariant (a bug in clustersim, never the input's
fault). `EnginePanic` is a Rust panic in the engine: a bug too."""

from clustersim._engine import InputError, InternalError
from clustersim._engine import PanicException as EnginePanic

__all__ = ["EnginePanic", "InputError", "InternalError"]
