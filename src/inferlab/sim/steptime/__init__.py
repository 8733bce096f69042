"""Where a simulated step's time comes from: one interface, one module per source.

  base.py             the interface: `StepTimeModel.step_time_s(prefill, decode)`,
                      `DecodeBatch`, and `StepModel` (a model and its description)
  roofline.py         the physics floor, slowed to a stated efficiency
  calibrated.py       a + b x decodes + p x prompt tokens, fitted to a bench run
  engine.py           the engine alone: fitted to engine_bench.json
  engine_baseline.py  the engine alone as a simulation's step time (+ serving overhead)
  profile.py          a served profile (profile.json): steps and per-request costs
  ranges.py           the batches a measured source answers for
  choice.py           what the user stated, typed, every file already read at the edge
  chooser.py          the first source that applies (`SOURCES`), and the scheduler

This file imports nothing: the engine's hot path imports base.py alone.
"""
