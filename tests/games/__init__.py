"""The game runner: GamePool, its lanes and players, self-play games."""
