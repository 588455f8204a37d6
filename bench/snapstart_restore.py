"""What a SnapStart restore costs, per STRATUS_TELEMETRY: `python bench/snapstart_restore.py init|restore`.

Under SnapStart, Lambda runs init (imports, the app built, a primed tools/list) before the snapshot; each cold start
is then a restore, whose work is the after-restore hook (a fresh app, store clients and keys:
stratus.handlers.snapstart) and the first call. `init` does the first part; `restore` does the same and then the
hook and one tools/call. Counted with callgrind, `restore` less `init` is the restore's own cost (Lambda's own
restore of the memory image is not modelled). The handler is the buffered one, as template.yaml's BufferedFunction
runs it with SnapStart on.
"""

import os
import sys

import wire

os.environ["AWS_LAMBDA_INITIALIZATION_TYPE"] = "snap-start"
os.environ.setdefault("STRATUS_APP", "examples.add:server")

import snapshot_restore_py  # the runtime's hooks library: here it only records them

from stratus.handlers.buffered import handler


def main() -> None:
    for hook, args, kwargs in snapshot_restore_py.get_before_snapshot():  # as the runtime calls them
        hook(*args, **kwargs)
    if sys.argv[1] == "restore":
        for hook, args, kwargs in snapshot_restore_py.get_after_restore():
            hook(*args, **kwargs)
        response = handler(wire.STATELESS_CALL_EVENT, None)
        if response["statusCode"] != 200:
            raise SystemExit(f"the first call after the restore answered {response!r}")


main()
