"""toolwire-ray: run tool bodies on a Ray cluster (the ``ray`` executor backend).

``Executor(backend="ray")``, ``TOOLWIRE_BACKEND=ray`` or ``toolwire chat --backend
ray``: every decision about a call (policies, hooks, validation, approval, output
validation, result hooks, commit) stays in the driver; only the tool's body runs on
the cluster. See docs/scale.md.
"""

from toolwire_ray._backend import RAY_OPTIONS, RayBackend

__version__ = "0.1.0"

__all__ = ["__version__", "RAY_OPTIONS", "RayBackend"]
