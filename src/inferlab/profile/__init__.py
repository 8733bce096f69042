"""A served profile: fixed probes against a running server, the profile.json record, its fit."""
