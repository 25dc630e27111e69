"""Matches between engines and their ratings: GTP agents, in-process nets, schedules, referee, Elo/SPRT, the ladder.
May import engine/, train.games (the game runner), train.rundir, train.report and train.usage; train.gating reads its stats."""
