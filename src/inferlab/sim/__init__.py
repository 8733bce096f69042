"""A deterministic discrete-event serving simulator; the step time is an injected model."""
