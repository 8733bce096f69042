"""Flag groups shared by verbs, and what they read into: each returns typed values (a
Workload, an Slo, a ModelCost, a BenchConfig), never the Namespace. Only commands/ knows
argparse; a verb module (commands/<verb>.py) imports these, never another verb."""
