"""The demo reads these from here until its steps move out of commands/ (bench/flags.py)."""

from inferlab.bench.flags import add_honesty_args as add_honesty_args
from inferlab.bench.flags import add_run_folder_args as add_run_folder_args
