"""python -m memray run --output F [--native] target... (fake)."""
import json
import os
import runpy
import sys

from . import DEFAULT, MAGIC

args = sys.argv[1:]
if not args or args[0] != "run":
    sys.exit("fake memray: only run is implemented")
args = args[1:]
out = None
while args and args[0].startswith("-") and args[0] not in ("-c", "-m"):
    if args[0] in ("--output", "-o"):
        out = args[1]
        args = args[2:]
    else:
        args = args[1:]
if out is None or not args:
    sys.exit("fake memray: run --output F target...")
records = DEFAULT
if os.environ.get("FAKE_MEMRAY_RECORDS"):
    with open(os.environ["FAKE_MEMRAY_RECORDS"]) as f:
        records = json.load(f)
code = 0
try:
    if args[0] == "-c":
        sys.argv = ["-c"] + args[2:]
        exec(compile(args[1], "<string>", "exec"), {"__name__": "__main__"})
    elif args[0] == "-m":
        sys.argv = args[1:]
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = args
        runpy.run_path(args[0], run_name="__main__")
except SystemExit as e:
    code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
with open(out, "wb") as f:
    f.write(MAGIC + json.dumps(records).encode())
sys.exit(code)
