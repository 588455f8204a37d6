"""uvicorn's server without its command line.

`import uvicorn` (and so `import uvicorn.config`) runs the package's `__init__`, which imports `uvicorn.main`: the
`uvicorn` command, with click, the reloader and the multiprocess supervisor (multiprocessing, tempfile, bz2, lzma).
Stratus only runs a `Config` under a `Server`, so a cold start that paid for them would pay about a tenth of the
streaming function's start for nothing. When nothing has imported uvicorn yet, its package is put in `sys.modules`
with its `__init__` deferred: the submodules below import as usual, and the first attribute read on the package
itself (`uvicorn.run`, `from uvicorn import Config`, `uvicorn.__version__`) runs the real `__init__` first, so
code that uses uvicorn as documented sees no difference.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from types import ModuleType
from typing import Any


def _defer_package_init() -> None:
    if "uvicorn" in sys.modules:
        return
    spec = importlib.util.find_spec("uvicorn")
    if spec is None or spec.loader is None:  # not installed: the imports below raise as usual
        return
    loader = spec.loader
    package: ModuleType = importlib.util.module_from_spec(spec)

    def complete(name: str) -> Any:
        # PEP 562: called only for a name the package lacks. Once run, the real `__init__` defines every name (run
        # twice, by two threads reading the package at once, it only binds the same names again).
        vars(package).pop("__getattr__", None)
        loader.exec_module(package)
        return getattr(package, name)

    package.__getattr__ = complete  # type: ignore[method-assign]
    sys.modules["uvicorn"] = package
    # The one name uvicorn's own modules import from the package (`from uvicorn import Config`, the lifespan),
    # bound as the real `__init__`'s first line binds it; any other name still completes the package.
    package.Config = importlib.import_module("uvicorn.config").Config  # type: ignore[attr-defined]


_defer_package_init()

from uvicorn.config import LOGGING_CONFIG, STARTUP_FAILURE, Config  # noqa: E402
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle  # noqa: E402
from uvicorn.server import Server  # noqa: E402

__all__ = ["LOGGING_CONFIG", "STARTUP_FAILURE", "Config", "HttpToolsProtocol", "RequestResponseCycle", "Server"]
