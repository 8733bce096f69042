"""One module per CLI verb: add its arguments, turn them into specs, make one call, print."""
