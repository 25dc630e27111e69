"""Training: the replay window, the trainer, DDP, gating, the loop, budgets, resume."""
