"""What a server does: stream requests, timestamp every event, keep every record raw."""
