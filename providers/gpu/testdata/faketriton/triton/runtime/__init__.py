from .autotuner import Autotuner, Config, autotune
from .errors import OutOfResources
from .jit import JITFunction, KernelInterface, jit

__all__ = ["Autotuner", "Config", "JITFunction", "KernelInterface", "OutOfResources", "autotune", "jit"]
