"""Matches and ratings: GTP and in-process players, resume, Elo and SPRT, the ladder."""
