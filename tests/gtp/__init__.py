"""The GTP engine: commands, golden transcripts, streaming analysis, start-up and doctor."""
