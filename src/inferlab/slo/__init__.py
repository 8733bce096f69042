"""Service-level objectives: the grammar, attainment and goodput per level, the saturation
verdict of an open-loop level, and the search for the highest load within an SLO.

Pure: it reads request records and plain numbers, and imports only the neutral value
modules (records, units, errors), so bench, sim, plan and summary.py may all use it.
"""
