"""The replay outside Lambda, a local event source polling the DLQ. Never in the layer."""
