"""What a server says about itself: its Prometheus /metrics, normalised across engines."""
