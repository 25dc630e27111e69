"""tools/: laid out as it is, bench/, checks/ and experiments/."""
