"""Test helpers that users may want too: a scripted OpenAI-compatible server with known timings."""
