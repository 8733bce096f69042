"""`inferlab watch`: live MBU and MFU of a running server, from its own /metrics and the floor."""
