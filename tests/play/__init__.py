"""The search and how a move is played: PUCT, root search, rollouts, move policy, time."""
