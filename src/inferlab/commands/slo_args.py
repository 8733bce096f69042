"""The demo reads `slo_text` from here until its steps move out of commands/ (slo/flags.py)."""

from inferlab.slo.flags import slo_text as slo_text
