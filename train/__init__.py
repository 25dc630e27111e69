"""Training system: self-play, replay, trainer, gating, matches and the loop."""
