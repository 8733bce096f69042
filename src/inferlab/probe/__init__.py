"""This machine's ceilings: memory bandwidth and matmul FLOPS, measured, saved as `this-machine`."""
