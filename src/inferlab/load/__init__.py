"""What is asked of a server: lengths, arrivals and traces, read once, used by bench and sim alike.

The package sits below `bench` and `sim` (specs -> physics -> load -> (bench | sim)); it never
imports either. `lengths` parses and samples token-length distributions; `traces` reads real
request traces (Azure, Mooncake, generic) and shapes them for replay; `arrivals` draws open-loop
instants (the only place they are drawn); `spec` holds the typed request specs of a level;
`workload` draws them from the parsed flags; `flags` adds and reads the one set of load flags.
"""
