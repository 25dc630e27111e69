"""The run on Ray: one machine and several nodes."""
