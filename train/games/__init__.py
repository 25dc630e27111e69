"""The game runner every game goes through: the pool and its batched evaluations, what a game is made of, the record it leaves, the GTP client.
May import engine/ and train.rundir only; self-play, gating, matches, the ladder and the Ray actors build on it."""
