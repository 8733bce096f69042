"""Start and stop real inference servers (llama.cpp with the bundled SmolLM2 model)."""
