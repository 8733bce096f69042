"""`inferlab demo`: the lesson of the decode phase on this machine, with real numbers.

probe -> floor for the served GGUF on `this-machine` -> the engine alone (engine-bench)
-> every level predicted from it before any request (sim/predict.py) -> a real
llama.cpp server -> its served profile, every level and the max load within the SLO
predicted from it before any level is measured (profiled.py) -> a concurrency
sweep (short prompts, forced outputs), a Poisson level at 70 % of the predicted
capacity, then 30 s of real traffic (a slice of the Azure conversation trace, see
trace.py) -> the max load searched on the server -> predicted vs measured,
table, reading, report.

The steps run from one typed DemoConfig (config.py; commands/demo.py builds it from the
flags of flags.py) through one call, run.run_demo. Nothing here imports commands/.
"""
