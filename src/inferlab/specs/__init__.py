"""What things are: models, hardware and number formats, each figure with its source."""
