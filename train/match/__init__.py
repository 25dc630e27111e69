"""Matches between engines and their ratings: GTP clients and agents, in-process nets, schedules, referee, Elo/SPRT, the ladder.
May import engine/ and train's game runner and run directory (pool, records, rundir, report, usage); gating reads its stats."""
