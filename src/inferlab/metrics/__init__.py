"""Raw records -> TTFT, TPOT, gaps, percentiles, warnings and MBU, computed after storage."""
